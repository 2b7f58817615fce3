"""`planc stats`: a store of a few hundred runs, recorded by the real recorder, read back as numbers."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
from pathlib import Path

import attrs
import pytest
from cli import invoke
from model_server import model_server  # noqa: F401  (the loopback model server fixture)
from tool_project import tool_project

import planc
from planc.backend.run.recorded_run import RecordedRun
from planc.backend.run.spec import RunSpec
from planc.backend.state.values import RunError
from planc.passes.policy.load import load_policy
from planc.registry import load_registry
from planc.store.plan_steps import ARGUMENT_KINDS
from planc.store.run_store import RunStore
from planc.store.views import VIEW_DOCS

TOOLS = """
def search(query, limit=2):
    if query == "boom":
        raise ValueError("search is down")
    return [{"id": f"I{i}", "severity": i % 4 + 1} for i in range(limit)]

def get(id):
    return {"id": id, "title": "t"}

def notify(channel, text):
    return {"sent": True}
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, maximum = 10, default = 2 }} }}
required = ["query"]
returns = {{ type = "array", items = {{ type = "object", properties = {{ id = {{ type = "string" }} }} }} }}
returns_at_most = "limit"
effects = {{ read_only = true }}
cost = {{ usd = 0.01, latency_ms = 20 }}

[tools.get]
provider = "python:{module}:get"
params = {{ id = {{ type = "string" }} }}
required = ["id"]
effects = {{ read_only = true }}
cost = {{ usd = 0.001, latency_ms = 5 }}

[tools.notify]
provider = "python:{module}:notify"
params = {{ channel = {{ type = "string" }}, text = {{ type = "string" }} }}
required = ["channel", "text"]
"""

# 200 runs, every tenth failing at `search`; 60 runs starting with `get`; 40 runs the policy stops at `notify` (E400).
TRIAGE = """search(query: $args.q, limit: 2)
  |> map(do: { get(id: item.id) })
notify(channel: "#ops", text: "found {$2.length}")
"""
LOOKUP = """get(id: $args.id)
search(query: "x", limit: 1)
"""
ALERT = """get(id: "I1")
notify(channel: $args.channel, text: "hi")
"""
POLICY = (
    "permit(principal, action, resource);\n"
    'forbid(principal, action, resource == Tool::"notify") when '
    '{ context.args has channel && context.args.channel == "#secret" };\n'
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store of 300 runs of three plans, recorded through `RecordedRun` as `planc run` records them."""
    folder = tmp_path_factory.mktemp("stats")
    with tool_project(folder, "statstools", TOOLS, TOML):
        (folder / "policy.cedar").write_text(POLICY, encoding="utf-8")
        registry, policy = load_registry(folder / "planc.toml"), load_policy(folder / "policy.cedar")
        # not `*.sqlite`: 300 runs the Python API made would swamp the session's replay of every store, which
        # compares most runs with what `planc run` printed (these runs replay: `planc replay` reads them as any)
        runs = RunStore(folder / "runs.store")
        runs.db.execute("PRAGMA synchronous = OFF")  # the test's own store: no fsync per row, the same rows
        # how `planc run` records a run: so the session's replay of every store replays these too
        spec = RunSpec(config=str(folder / "planc.toml"), policy=str(folder / "policy.cedar"))  # as `planc run`
        plans = [
            (TRIAGE, [{"q": "boom" if n % 10 == 0 else "disk"} for n in range(200)]),
            (LOOKUP, [{"id": f"I{n}"} for n in range(60)]),
            (ALERT, [{"channel": "#secret"}] * 40),
        ]
        for text, arguments in plans:
            checked = planc.check(text, registry=registry, policy=policy)
            assert checked.ok, checked.diagnostics
            for given in arguments:
                recorded = RecordedRun.record(
                    runs, checked, attrs.evolve(spec, arguments=given), registry=registry, policy=policy
                )
                try:
                    recorded.execute()
                except RunError:
                    pass  # recorded as failed: what the stats count
        runs.close()
        yield folder / "runs.store"


def stats(store, *options) -> dict:
    result = invoke("stats", "--store", str(store), "--format", "json", *options)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_tools_each_step_position_calls(store):
    assert stats(store)["positions"] == {
        "1": {"search": 200, "get": 100},
        "2": {"map": 200, "search": 60, "notify": 40},
        "3": {"notify": 200},
    }
    assert stats(store, "--tool", "search")["positions"] == {"1": {"search": 200}, "2": {"search": 60}}


def test_failures_and_refusals_by_tool_and_by_code(store):
    failures = stats(store)["failures"]
    assert failures["calls_by_tool"] == {"search": {"failed": 20}}  # a call the policy refused is never made
    assert failures["runs_by_tool"] == {"notify": 40, "search": 20}
    assert failures["runs_by_code"] == {"E400": 40}


def test_the_checks_estimates_against_what_the_steps_did(store):
    costs = stats(store)["costs"]
    assert set(costs) == {"search", "map", "notify", "get"}
    search = costs["search"]
    assert search["steps"] == 260 and search["calls"] == {"estimated": [260, 260], "made": 260}
    assert search["usd"] == {"estimated": [2.6, 2.6], "spent": 2.6} and search["ms"]["estimated"] == [20.0, 20.0]
    assert search["ms"]["p50"] > 0 and search["ms"]["p90"] >= search["ms"]["p50"]
    # a map over `search`'s 0-2 items: 0-2 `get` calls each; the 180 runs where `search` answered made 2
    mapped = costs["map"]
    assert mapped["steps"] == 200 and mapped["calls"] == {"estimated": [0, 400], "made": 360}
    assert mapped["usd"] == {"estimated": [0.0, 0.4], "spent": 0.36}
    assert costs["notify"]["calls"] == {"estimated": [240, 240], "made": 180}  # 40 refused before the call
    assert costs["get"] == {
        **costs["get"],
        "steps": 100,
        "calls": {"estimated": [100, 100], "made": 100},
        "usd": {"estimated": [0.1, 0.1], "spent": 0.1},
    }


def test_duration_percentiles_are_the_recorded_runs(store):
    with sqlite3.connect(store) as db:
        durations = sorted(1000 * (end - start) for start, end in db.execute("SELECT started_at, finished_at FROM runs"))
    runs = stats(store)["runs"]
    assert runs["count"] == 300 and runs["by_status"] == {"failed": 60, "ok": 240}
    for rank in (50, 90, 99):
        assert runs["ms"][f"p{rank}"] == round(durations[math.ceil(rank / 100 * 300) - 1], 1)
    assert runs["ms"]["max"] == round(durations[-1], 1)


def test_since_and_tool_narrow_every_answer(store):
    assert stats(store, "--since", "2000-01-01")["runs"]["count"] == 300
    later = stats(store, "--since", "2999-01-01")
    assert later["runs"]["count"] == 0 and later["positions"] == {} and later["costs"] == {}
    narrowed = stats(store, "--tool", "get")
    assert narrowed["runs"]["count"] == 300 and set(narrowed["costs"]) == {"get"}  # every plan calls `get`
    assert narrowed["failures"]["runs_by_code"] == {}  # the refused runs failed at `notify`, not at `get`
    assert stats(store, "--tool", "notify")["failures"]["runs_by_code"] == {"E400": 40}


def test_the_text_says_the_same_numbers(store):
    result = invoke("stats", "--store", str(store))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "runs: 300 (60 failed, 240 ok)"
    assert "  step 1: search 200, get 100" in lines
    assert "  calls of search: 20 failed" in lines and "  runs refused with E400: 40" in lines
    assert (
        "  search: 260 steps; calls 260 estimated, 260 made; usd 2.6 estimated, 2.6 spent; ms 20.0 estimated per step, p50 "
    ) in "\n".join(lines)
    assert "  map: 200 steps; calls 0-400 estimated, 360 made; usd 0.0-0.4 estimated, 0.36 spent;" in result.stdout


def test_sql_runs_one_read_only_query_over_the_views(store):
    result = invoke(
        "stats",
        "--store",
        str(store),
        "--format",
        "json",
        "--sql",
        "SELECT tool, COUNT(*) AS n FROM call_times GROUP BY tool ORDER BY tool",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"tool": "get", "n": 460}, {"tool": "notify", "n": 180}, {"tool": "search", "n": 260}]


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM runs",
        "UPDATE steps SET tool = 'x'",
        "SELECT 1; DELETE FROM runs",
        "ATTACH DATABASE 'other.sqlite' AS other",
        "PRAGMA user_version = 1",
        "PRAGMA journal_mode = DELETE",
        "CREATE TABLE kept (x)",
        "DROP VIEW run_times",
    ],
)
def test_sql_refuses_anything_but_one_read_and_the_store_is_unchanged(store, query, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where an ATTACH would make its file
    before = digest(store)
    result = invoke("stats", "--store", str(store), "--sql", query)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith("error: ")
    assert digest(store) == before and not (tmp_path / "other.sqlite").exists()


PLAN_TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }} }}
required = ["query"]
effects = {{ read_only = true }}

[models.default]
base_url = "{url}"
model = "m"
"""


def test_repair_rounds_of_planc_plan_by_code(tmp_path, model_server, monkeypatch):  # noqa: F811
    with tool_project(tmp_path, "stattools", "def search(query):\n    return []\n", PLAN_TOML.replace("{url}", model_server.url)):
        monkeypatch.chdir(tmp_path)
        store = str(tmp_path / "runs.sqlite")
        # two rounds: an unknown tool (E200), then a plan that checks
        model_server.reply('serch(query: "disk")')
        model_server.reply('search(query: "disk")')
        # three rounds: an unknown tool and a misspelt parameter, the unknown tool again, then a plan that checks
        model_server.reply('serch(query: "disk")\nsearch(qury: "disk")')
        model_server.reply('serch(query: "disk")')
        model_server.reply('search(query: "disk")')
        for _ in range(2):
            assert invoke("plan", "find disk alerts", "--store", store).exit_code == 0
        model_server.reply('serch(query: "disk")')  # one round, out of rounds: never sent back
        assert invoke("plan", "find disk alerts", "--rounds", "1", "--store", store).exit_code == 1
        repairs = stats(store)["repairs"]
    assert repairs == {
        "E200": {"rounds": 4, "repaired": 3, "fixed": 2},  # the last one ran out of rounds
        "E201": {"rounds": 1, "repaired": 1, "fixed": 1},  # `qury`: no such parameter
        "E202": {"rounds": 1, "repaired": 1, "fixed": 1},
    }  # and `query` missing
    shown = invoke("stats", "--store", store).stdout
    assert "  E200: in 4 rounds, 3 sent back, 2 fixed by the next answer" in shown


STORE_DOC = Path(__file__).resolve().parents[1] / "docs" / "store.md"


def test_the_store_doc_says_what_every_view_and_argument_kind_is():
    text = STORE_DOC.read_text(encoding="utf-8")
    for view, said in VIEW_DOCS.items():
        assert f"| `{view}` | {said} |" in text, view
    for kind, said in ARGUMENT_KINDS.items():
        assert f"| `{kind}` | {said} |" in text, kind


@pytest.mark.parametrize("query", re.findall(r"```sql\n(.*?)```", STORE_DOC.read_text(encoding="utf-8"), re.DOTALL))
def test_every_query_of_the_store_doc_runs(store, query):
    result = invoke("stats", "--store", str(store), "--format", "json", "--sql", query)
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), list)


def test_usage_mistakes_are_one_message_and_exit_2(store, tmp_path):
    missing = invoke("stats", "--store", str(tmp_path / "none.sqlite"))
    assert missing.exit_code == 2 and "there is no run store here" in missing.stderr
    assert not (tmp_path / "none.sqlite").exists()
    when = invoke("stats", "--store", str(store), "--since", "last tuesday")
    assert when.exit_code == 2 and "--since last tuesday: say how long ago" in when.stderr
    both = invoke("stats", "--store", str(store), "--sql", "SELECT 1", "--tool", "get")
    assert both.exit_code == 2 and "Traceback" not in both.output
