"""The run store: `planc run` records, `planc runs`, `planc show-run`, `planc replay`.

Every test runs against both backends, an SQLite file and a throwaway PostgreSQL server, but those
that take an SQLite file apart by hand (an older schema, SQLite's pragmas).
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from cli import invoke
from tool_project import tool_project

from planc.store.run_store import SCHEMA_VERSION
from planc.store.views import VIEW_DOCS

TOOLS = """
import os
from pathlib import Path

def _called(name):
    if os.environ.get("PLANC_TEST_REPLAYING"):
        raise AssertionError(f"{name} was called during replay")
    log = Path(__file__).with_name("calls.log")
    log.write_text(log.read_text() + name + "\\n" if log.exists() else name + "\\n")

def search(query, limit=3):
    _called("search")
    store = Path(".planc/runs.sqlite")
    if os.environ.get("PLANC_STORE", "").startswith("postgresql:"):  # the intent row is committed before
        import psycopg                                                # the call: another connection sees it
        with psycopg.connect(os.environ["PLANC_TEST_STORE"], options="-c search_path=planc") as db:
            open_calls = db.execute("SELECT tool FROM calls WHERE finished_at IS NULL").fetchall()
        Path("seen.log").write_text(repr(open_calls))
    elif store.exists():
        import sqlite3
        with sqlite3.connect(store) as db:
            open_calls = db.execute("SELECT tool FROM calls WHERE finished_at IS NULL").fetchall()
        Path("seen.log").write_text(repr(open_calls))
    return [{"id": f"I{i}", "title": f"{query} {i}", "severity": i % 4 + 1} for i in range(limit)]

def notify(channel, text):
    _called("notify")
    return {"sent": True, "channel": channel, "text": text}
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, default = 3 }} }}
required = ["query"]
returns_at_most = "limit"
effects = {{ read_only = true }}

[tools.notify]
provider = "python:{module}:notify"
params = {{ channel = {{ type = "string", pattern = "^#" }}, text = {{ type = "string" }} }}
required = ["channel", "text"]
"""

PLAN = """search(query: "disk", limit: 4)
  |> filter(where: severity >= 2)
map(over: $2, do: { notify(channel: "#ops", text: item.title) })
reshape(value: {found: $2, sent: $3})
"""


SQLITE_ONLY = pytest.mark.parametrize("project", ["sqlite"], indirect=True)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a server: the slow tier
def project(request, tmp_path, monkeypatch):
    """The project, its runs recorded in its default SQLite store, or in a PostgreSQL database of its own
    (PLANC_STORE="postgresql:$PLANC_TEST_STORE")."""
    with tool_project(tmp_path, "runstoretools", TOOLS, TOML, {"p.plan": PLAN}):
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("PLANC_STORE", raising=False)  # the default path, under this project
        if request.param == "postgresql":
            monkeypatch.setenv("PLANC_TEST_STORE", request.getfixturevalue("postgres").database())
            monkeypatch.setenv("PLANC_STORE", "postgresql:$PLANC_TEST_STORE")
        yield tmp_path


def store_of(project) -> str:
    """The project's run store, as `--store` names it."""
    return os.environ.get("PLANC_STORE") or str(project / ".planc" / "runs.sqlite")


def store_rows(project, query: str, params: tuple = ()) -> list[tuple]:
    """The rows `query` (SQLite's SQL, `?` for each value) reads from the project's run store."""
    if os.environ.get("PLANC_STORE", "").startswith("postgresql:"):
        import psycopg

        with psycopg.connect(os.environ["PLANC_TEST_STORE"], options="-c search_path=planc") as db:
            return db.execute(query.replace("?", "%s"), params).fetchall()
    with sqlite3.connect(project / ".planc" / "runs.sqlite") as db:
        return db.execute(query, params).fetchall()


def calls(project) -> list[str]:
    log = project / "calls.log"
    return log.read_text().split() if log.exists() else []


def record(project, *extra) -> tuple[str, str]:
    result = invoke("run", "p.plan", *extra)
    assert result.exit_code == 0, result.output
    run_id = next(line.removeprefix("run: ") for line in result.stderr.splitlines() if line.startswith("run: "))
    return run_id, result.stdout


def test_a_run_is_recorded_with_intent_and_result_rows(project):
    run_id, _ = record(project)
    if "PLANC_TEST_STORE" not in os.environ:
        with sqlite3.connect(project / ".planc" / "runs.sqlite") as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ((status, plan),) = store_rows(project, "SELECT status, plan FROM runs WHERE id = ?", (run_id,))
    if plan.startswith("@"):  # a stored plan is kept once, however many runs (a batch's) run it
        ((plan,),) = store_rows(project, "SELECT json FROM large_values WHERE hash = ?", (plan[1:],))
    rows = store_rows(
        project,
        "SELECT sequence, step, tool, input, output, error, finished_at FROM calls WHERE run_id = ? ORDER BY sequence",
        (run_id,),
    )
    assert store_rows(project, "SELECT COUNT(*) FROM events WHERE run_id = ?", (run_id,))[0][0] > 0
    assert status == "ok" and json.loads(plan)["source"] == PLAN
    assert [(row[1], row[2]) for row in rows] == [
        ("1", "search"),
        ("3/do.1[0]", "notify"),
        ("3/do.1[1]", "notify"),
        ("3/do.1[2]", "notify"),
    ]
    assert json.loads(rows[0][3]) == {"query": "disk", "limit": 4}
    assert all(row[4] is not None and row[5] is None and row[6] is not None for row in rows)
    assert (project / "seen.log").read_text() == "[('search',)]"


def test_replay_calls_no_tool_and_prints_the_same_output(project, monkeypatch):
    run_id, output = record(project)
    assert calls(project) == ["search", "notify", "notify", "notify"]
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == output
    assert calls(project) == ["search", "notify", "notify", "notify"]  # nothing more


def test_replay_of_an_edited_plan_diverges_naming_the_step(project, monkeypatch):
    run_id, _ = record(project)
    (project / "edited.plan").write_text(PLAN.replace('"#ops"', '"#alerts"'), encoding="utf-8")
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id, "--plan", "edited.plan")
    assert replayed.exit_code == 1
    assert "step 3/do.1[0]: replay diverged" in replayed.stderr
    assert '`channel`: "#alerts" where "#ops" was recorded' in replayed.stderr
    assert replayed.stdout == ""


def test_replay_of_a_plan_calling_another_tool_diverges(project, monkeypatch):
    run_id, _ = record(project)
    (project / "other.plan").write_text('notify(channel: "#ops", text: "hi")\n', encoding="utf-8")
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id, "--plan", "other.plan")
    assert replayed.exit_code == 1
    assert "step 1: replay diverged: the plan calls `notify`, and run" in replayed.stderr
    assert "recorded `search` here" in replayed.stderr


def test_runs_lists_and_show_run_shows_step_by_step(project):
    first, _ = record(project)
    second, _ = record(project, "--store", "other.sqlite")
    listed = invoke("runs", "--format", "json")
    assert listed.exit_code == 0, listed.output
    runs = json.loads(listed.stdout)
    assert [(run["id"], run["status"], run["calls"]) for run in runs] == [(first, "ok", 4)]
    assert [run["id"] for run in json.loads(invoke("runs", "--store", "other.sqlite", "--format", "json").stdout)] == [second]
    assert first in invoke("runs").stdout
    shown = invoke("show-run", first)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[1].startswith('step 1 search {"query": "disk", "limit": 4} (') and '-> [{"id": "I0"' in lines[1]
    assert lines[2].startswith('step 2 filter -> [{"id": "I1"')  # a control step: no call, its result
    assert lines[3].startswith("step 3 map -> ")
    assert lines[4].startswith('  step 3/do.1[0] notify {"channel": "#ops", "text": "disk 1"} (')
    assert invoke("show-run", "nope").exit_code == 2


def test_a_failed_call_is_recorded_and_replayed_as_the_same_failure(project, monkeypatch):
    (project / "bad.plan").write_text('notify(channel: "#ops", text: "x")\nsearch(query: "disk", limit: 2)\n', encoding="utf-8")
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")  # every tool raises, in the run as in the replay
    result = invoke("run", "bad.plan")
    assert result.exit_code == 1
    run_id = result.stderr.split("run: ")[1].split()[0]
    recorded = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert recorded["status"] == "failed" and recorded["calls"][0]["error"].startswith("step 1: `notify` failed")
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 1 and "step 1: `notify` failed" in replayed.stderr


from model_server import model_server  # noqa: E402,F401  (the loopback model server fixture)

AGENT_PLAN = """agent(prompt: "Triage the disk alerts", tools: ["search"],
      output_schema: {type: "object", properties: {severity: {type: "string"}, summary: {type: "string"}},
                      required: ["severity", "summary"]})
filter(over: $1.tools_called, infer: "Is {{item}} worth a page?")
"""


def test_model_inferences_are_recorded_and_replayed_without_the_model(project, model_server, monkeypatch):
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text() + f'\n[models.default]\nbase_url = "{model_server.url}"\nmodel = "m"\n'
        'api_key_env = "PLANC_TEST_MODEL_KEY"\n'
    )
    (project / "agent.plan").write_text(AGENT_PLAN, encoding="utf-8")
    monkeypatch.setenv("PLANC_TEST_MODEL_KEY", "secret")
    model_server.play("tool_call_search", "answer_triage", "answer_yes")
    result = invoke("run", "agent.plan", "--finish", "output")
    assert result.exit_code == 0, result.output
    run_id = result.stderr.split("run: ")[1].split()[0]
    recorded = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert [(call["step"], call["tool"]) for call in recorded["calls"]] == [
        ("1", "model:chat"),
        ("1/agent.1/search", "search"),
        ("1", "model:chat"),
        ("2[0]", "model:judge"),
    ]
    assert recorded["calls"][1]["input"] == {"query": "disk full", "limit": 3}
    shown = invoke("show-run", run_id).stdout.splitlines()
    assert shown[1].startswith("step 1 agent -> ") and shown[2].startswith('  model:chat {"messages": ')
    assert shown[3].startswith('  search {"query": "disk full", "limit": 3}')
    assert shown[5].startswith('step 2 filter -> [{"tool": "search", "round": 1}]')
    assert shown[6].startswith("  model:judge ")
    asked = len(model_server.bodies())
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")  # every tool raises
    monkeypatch.delenv("PLANC_TEST_MODEL_KEY")  # and the model's key is gone: replay needs neither
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == result.stdout and json.loads(replayed.stdout) == [{"tool": "search", "round": 1}]
    assert len(model_server.bodies()) == asked  # the model was not asked again


def test_replay_uses_the_planc_toml_the_run_used_from_any_folder(project, tmp_path_factory, monkeypatch):
    run_id, output = record(project)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # no planc.toml here or above
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id, "--store", store_of(project))
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == output


def before_steps(db) -> None:
    """The store as planc wrote it before schema 9: no steps, no rounds, no views."""
    for view in VIEW_DOCS:
        db.execute(f"DROP VIEW {view}")
    db.execute("DROP TABLE steps")
    db.execute("DROP TABLE rounds")


def before_batches(db) -> None:
    """The store as planc wrote it before schema 6: no batches, and a run's plan in its row."""
    before_steps(db)
    db.execute("UPDATE runs SET plan = (SELECT json FROM large_values WHERE hash = substr(plan, 2)) WHERE plan LIKE '@%'")
    db.execute(
        "CREATE TABLE runs_before AS SELECT id, started_at, finished_at, status, plan, arguments, output, "
        "message, options FROM runs"
    )  # SQLite's DROP COLUMN trips over the schema's comments
    db.execute("DROP TABLE runs")
    db.execute("ALTER TABLE runs_before RENAME TO runs")
    db.execute("DROP TABLE batches")


@SQLITE_ONLY
def test_a_store_written_before_run_options_opens_and_replays(project, monkeypatch):
    run_id, output = record(project)
    database = project / ".planc" / "runs.sqlite"
    with sqlite3.connect(database) as db:  # back to the first schema: no `runs.options`, user_version 0
        before_batches(db)
        db.execute("ALTER TABLE runs DROP COLUMN options")
        db.execute("ALTER TABLE calls DROP COLUMN outcome")
        db.execute("ALTER TABLE calls DROP COLUMN idempotency_key")
        db.execute("ALTER TABLE events DROP COLUMN refs")
        db.execute("DROP TABLE files")
        db.execute("DROP TABLE large_values")
        db.execute("PRAGMA user_version = 0")
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == output
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "options" in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        assert db.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 0


@SQLITE_ONLY
def test_a_store_of_the_previous_schema_gets_each_calls_outcome(project, monkeypatch):
    """Schema 3 had no `calls.outcome` (nor large values kept once): opening it adds the column and fills
    it from what the rows say, a timeout recorded as a failure then being an unknown outcome."""
    run_id, _ = record(project)
    database = project / ".planc" / "runs.sqlite"
    with sqlite3.connect(database) as db:  # as planc wrote it with schema 3
        before_batches(db)
        db.execute("ALTER TABLE calls DROP COLUMN outcome")
        db.execute("ALTER TABLE calls DROP COLUMN idempotency_key")
        db.execute("ALTER TABLE events DROP COLUMN refs")
        db.execute("DROP TABLE large_values")
        db.execute("PRAGMA user_version = 3")
        timeout = "step 3/do.1[1]: `notify` failed: CallTimedOut: no result within 1 s"
        db.execute("UPDATE calls SET output = NULL, error = ? WHERE sequence = 3", (timeout,))
        db.execute("UPDATE runs SET status = 'failed', message = ?, output = NULL", (timeout,))
        db.execute("UPDATE calls SET output = NULL, error = 'step 3/do.1[2]: `notify` failed: ValueError: no' WHERE sequence = 4")
        db.execute(
            "INSERT INTO calls (run_id, sequence, step, tool, input, started_at) VALUES (?, 5, '4', 'notify', '{}', 0)", (run_id,)
        )
    shown = invoke("show-run", run_id, "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert [call["outcome"] for call in json.loads(shown.stdout)["calls"]] == ["ok", "ok", "unknown", "failed", "unknown"]
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT outcome FROM calls ORDER BY sequence").fetchall() == [
            ("ok",),
            ("ok",),
            ("unknown",),
            ("failed",),
            (None,),
        ]  # an intent row: no outcome yet, read as unknown
    text = invoke("show-run", run_id).stdout
    assert 'notify {"channel": "#ops", "text": "disk 2"} (' in text and ": outcome unknown: step 3/do.1[1]" in text
    assert " failed: step 3/do.1[2]: `notify` failed: ValueError: no" in text


STEPS = [
    ("1", 1, 0, "search", {"query": "literal", "limit": "literal"}, 0),
    ("2", 2, 0, "filter", {"where": "condition"}, 1),
    ("3", 3, 0, "map", {"over": "reference", "do": "block"}, 0),
    ("3/do.1", 1, 1, "notify", {"channel": "literal", "text": "path"}, 0),
    ("4", 4, 0, "reshape", {"value": "record"}, 0),
]


def steps_of(db, run_id: str) -> list[tuple]:
    return [
        (*row[:4], json.loads(row[4]), row[5])
        for row in db.execute(
            "SELECT path, position, depth, tool, arguments, piped FROM steps WHERE run_id = ? ORDER BY rowid", (run_id,)
        )
    ]


def test_a_run_keeps_its_plan_as_steps_with_the_checks_estimates(project):
    run_id, _ = record(project)
    rows = store_rows(
        project, "SELECT path, position, depth, tool, arguments, piped FROM steps WHERE run_id = ? ORDER BY path", (run_id,)
    )
    assert [(*row[:4], json.loads(row[4]), row[5]) for row in rows] == STEPS
    estimates = store_rows(project, "SELECT path, calls_low, calls_high FROM steps WHERE run_id = ? ORDER BY path", (run_id,))
    assert [tuple(row) for row in estimates] == [("1", 1, 1), ("2", 0, 0), ("3", 0, 4), ("3/do.1", 1, 1), ("4", 0, 0)]


@SQLITE_ONLY  # a store an older planc wrote, made by hand in SQLite
def test_a_store_of_schema_7_gets_the_steps_of_its_runs_from_their_plans(project):
    run_id, _ = record(project)
    database = project / ".planc" / "runs.sqlite"
    with sqlite3.connect(database) as db:
        before_steps(db)
        db.execute("PRAGMA user_version = 7")
    assert invoke("runs").exit_code == 0
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert steps_of(db, run_id) == STEPS  # read from the plan's text: the same rows, without estimates
        assert db.execute("SELECT COUNT(calls_low) FROM steps").fetchone()[0] == 0


def test_replay_reads_the_files_the_run_read_even_after_they_changed(project, monkeypatch):
    run_id, output = record(project)
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().split("[tools.notify]")[0], encoding="utf-8")  # notify is gone now
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == output
    today = invoke("replay", run_id, "--config", "planc.toml")  # against today's planc.toml: refused
    assert today.exit_code == 1 and "tool `notify` was removed from the registry" in today.stderr
    assert calls(project) == ["search", "notify", "notify", "notify"]  # the recording run's calls, no more


def test_a_declared_plans_calls_are_recorded_under_the_calling_step_and_replayed(project, monkeypatch):
    """A plan called as `plan__NAME` runs inside the run: each of its calls has its own intent and result
    rows, at paths under the calling step, and a replay answers every one from the record."""
    (project / "inner.plan").write_text(
        'search(query: "db", limit: 2)\nnotify(channel: "#db", text: "{$1.length}")\n', encoding="utf-8"
    )
    with open(project / "planc.toml", "a", encoding="utf-8") as toml:
        toml.write('\n[plans.inner]\nfile = "inner.plan"\n')
    (project / "outer.plan").write_text('search(query: "disk", limit: 1)\nplan__inner()\n', encoding="utf-8")
    result = invoke("run", "outer.plan")
    assert result.exit_code == 0, result.output
    run_id = next(line.removeprefix("run: ") for line in result.stderr.splitlines() if line.startswith("run: "))
    rows = store_rows(project, "SELECT step, tool, output IS NOT NULL FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,))
    assert rows == [("1", "search", True), ("2/1", "search", True), ("2/2", "notify", True)]
    assert calls(project) == ["search", "search", "notify"]
    monkeypatch.setenv("PLANC_TEST_REPLAYING", "1")
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == result.stdout
    assert calls(project) == ["search", "search", "notify"]  # nothing called again


def test_runs_with_no_store_here_says_where_the_stores_below_are(tmp_path, monkeypatch):
    """From the repository's root after `make demo`, the demo's runs are under examples/: `planc runs` says so
    (on standard error: what it lists stays empty), and lists them with the `--store` it names."""
    monkeypatch.delenv("PLANC_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert invoke("runs").stderr == ""  # no store anywhere: nothing to point at
    demo = tmp_path / "examples" / "demo"
    demo.mkdir(parents=True)
    (demo / "planc.toml").write_text("", encoding="utf-8")
    (demo / "p.plan").write_text("reshape(value: 1)\n", encoding="utf-8")
    assert invoke("run", "examples/demo/p.plan").exit_code == 0
    store = os.path.join("examples", "demo", ".planc", "runs.sqlite")
    listed = invoke("runs")
    assert listed.exit_code == 0 and listed.stdout == ""
    assert listed.stderr == (
        f"no run store here ({os.path.join('.planc', 'runs.sqlite')}); a run is recorded beside "
        f"the planc.toml it ran with, and {store} has runs: `planc runs --store {store}`\n"
    )
    shown = invoke("runs", "--store", store)
    assert shown.exit_code == 0 and len(shown.stdout.splitlines()) == 1 and " ok " in shown.stdout
    assert invoke("runs", "--store", "elsewhere.sqlite").stderr == ""  # a store named is the one asked for
