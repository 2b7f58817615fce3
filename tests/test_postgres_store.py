"""The run store on PostgreSQL: several processes, standing in for several machines, writing one history.

The tools are test_attacks_store's spies (each call appends a line to `calls.log` first), and `meet`,
which waits, once it has said so, until the test lets it go. Every wait is for something seen: a
line in the spy's log, a row, a status; never a guess at how long something takes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, invoke, planc_completed, planc_process
from test_attacks_store import TOML, TOOLS, calls, clean, outcomes, wait_until
from test_stats import ALERT, TRIAGE
from test_stats import POLICY as STATS_POLICY
from test_stats import TOML as STATS_TOML
from test_stats import TOOLS as STATS_TOOLS
from tool_project import tool_project

from planc.store.run_store import SCHEMA_VERSION

pytestmark = pytest.mark.slow  # a PostgreSQL server: conftest.py, the slow tier
STORE_DOC = Path(__file__).resolve().parents[1] / "docs" / "store.md"

MEET = '''

def meet(text):
    """Say so, then wait until the test lets every run go (the file `met` appears)."""
    _called("meet", text=text)
    import time
    let_go = SPY.with_name("met")
    for _ in range(300 * 100):  # a hang guard: the test lets go as soon as it has looked
        if let_go.exists():
            return {"met": text}
        time.sleep(0.01)
    raise TimeoutError("never let go")
'''

MEET_TOML = """
[tools.meet]
provider = "python:{module}:meet"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}
"""


@pytest.fixture
def project(tmp_path, monkeypatch, postgres):
    with tool_project(tmp_path, "pgstore", TOOLS + MEET, TOML + MEET_TOML):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_STORE", postgres.database())
        monkeypatch.setenv("PLANC_STORE", "postgresql:$PLANC_TEST_STORE")
        yield tmp_path
        (tmp_path / "met").touch()


def rows(query: str, params: tuple = ()) -> list[tuple]:
    """What `query` reads from the store (or does to it: no rows then)."""
    import psycopg

    with psycopg.connect(os.environ["PLANC_TEST_STORE"], options="-c search_path=planc", autocommit=True) as db:
        cursor = db.execute(query, params)
        return cursor.fetchall() if cursor.description else []


def started(project, *args, hold: bool = False) -> subprocess.Popen:
    """`planc ARGS` as a process of its own (another machine, as far as the store can tell)."""
    env = {name: value for name, value in os.environ.items() if name != "PLANC_TEST_HOLD"}
    if hold:
        env["PLANC_TEST_HOLD"] = "1"
    return planc_process(*args, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def listed() -> list[dict]:
    result = invoke("runs", "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_eight_runs_from_two_processes_at_once_are_all_recorded_each_intent_before_its_call(project):
    for name in ("a", "b"):
        (project / f"{name}.jsonl").write_text("".join(json.dumps({"text": f"{name}{n}"}) + "\n" for n in range(4)))
    (project / "p.plan").write_text("meet(text: $args.text)\n")
    workers = [
        started(project, "batch", "p.plan", "--args", f"{name}.jsonl", "--parallel", "4", "--format", "json")
        for name in ("a", "b")
    ]
    for worker in workers:
        wait_until(worker, "every run's call", lambda: len(calls(project)) == 8)
    in_flight = rows("SELECT r.status, c.tool FROM calls c JOIN runs r ON r.id = c.run_id WHERE c.outcome IS NULL")
    assert in_flight == [("running", "meet")] * 8  # eight intent rows, committed before their calls
    assert {run["status"] for run in listed()} == {"running"}  # each held by a live worker
    (project / "met").touch()
    for worker in workers:
        out, err = worker.communicate(timeout=HANG_GUARD_S)
        assert worker.returncode == 0 and "Traceback" not in err, err
        assert json.loads(out)["ok"] == 4
    runs = listed()
    assert len(runs) == 8 and {(run["status"], run["calls"]) for run in runs} == {("ok", 1)}
    assert len({run["batch"] for run in runs}) == 2
    assert sorted(call["text"] for call in calls(project)) == sorted(f"{x}{n}" for x in "ab" for n in range(4))
    assert rows("SELECT count(*) FROM calls WHERE outcome = 'ok'") == [(8,)]
    assert rows("SELECT count(*) FROM leases") == [(0,)]
    stats = invoke("batch", "--resume", runs[0]["batch"], "--format", "json")  # nothing left to run
    assert stats.exit_code == 0 and json.loads(stats.stdout)["ok"] == 4 and len(calls(project)) == 8


def test_a_run_killed_during_a_call_is_resumed_by_another_process_and_only_one_resume_at_a_time(project):
    (project / "p.plan").write_text('send(text: "one")\nhold(text: "two")\nsend(text: "three")\n')
    run = started(project, "run", "p.plan", hold=True)
    wait_until(run, "the run's call of hold", lambda: len(calls(project)) == 2)
    ((run_id,),) = rows("SELECT id FROM runs")
    while_it_runs = planc_completed("resume", run_id, cwd=project)  # another process: the run's holds it
    assert while_it_runs.returncode == 1 and "Traceback" not in while_it_runs.stderr
    assert while_it_runs.stderr.splitlines()[-1].startswith(f"error: run {run_id} is being recorded by process {run.pid} (since ")
    run.send_signal(signal.SIGKILL)  # it never gives the run back: its connection ends, and its lock with it
    run.communicate(timeout=HANG_GUARD_S)
    _wait_for_status(run_id, "interrupted")

    first = started(project, "resume", run_id, hold=True)
    wait_until(first, "the first resume's call of hold", lambda: len(calls(project)) == 3)
    second = planc_completed("resume", run_id, cwd=project)
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert second.stderr.splitlines()[-1].startswith(f"error: run {run_id} is being recorded by process {first.pid}")
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=HANG_GUARD_S)
    _wait_for_status(run_id, "interrupted")

    third = planc_completed("resume", run_id, cwd=project)
    assert third.returncode == 0 and "Traceback" not in third.stderr, third.stderr
    assert [(call["tool"], call["text"]) for call in calls(project)] == [
        ("send", "one"),
        ("hold", "two"),
        ("hold", "two"),
        ("hold", "two"),
        ("send", "three"),
    ]
    shown = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert shown["status"] == "ok"
    assert outcomes(shown) == [("send", "one", "ok"), ("hold", "two", "ok"), ("send", "three", "ok")]
    replayed = invoke("replay", run_id)
    clean(replayed)
    assert replayed.exit_code == 0 and replayed.stdout == third.stdout and len(calls(project)) == 5


def _wait_for_status(run_id: str, status: str) -> None:
    """Until the store shows the run as `status`: the server lets a killed client's lock go once it sees
    the connection end, which it does on its own time."""
    waiter = subprocess.Popen(["sleep", str(HANG_GUARD_S)])  # the hang guard's clock, not a guess
    try:
        wait_until(waiter, f"the run {status}", lambda: [run["status"] for run in listed() if run["id"] == run_id] == [status])
    finally:
        waiter.kill()
        waiter.wait()


def test_a_store_a_newer_planc_wrote_is_refused_untouched(project):
    assert invoke("runs").exit_code == 0  # the schema made
    rows("UPDATE schema_version SET version = %s", (SCHEMA_VERSION + 1,))
    (project / "p.plan").write_text('send(text: "one")\n')
    for args in (("runs",), ("run", "p.plan"), ("show-run", "last")):
        result = invoke(*args)
        clean(result)
        assert result.exit_code == 2, (args, result.output)
        assert (
            f"postgresql:$PLANC_TEST_STORE: a newer planc wrote this run store (its schema is version "
            f"{SCHEMA_VERSION + 1}; this planc reads up to version {SCHEMA_VERSION})"
        ) in result.stderr
    assert calls(project) == [] and rows("SELECT version FROM schema_version") == [(SCHEMA_VERSION + 1,)]


def test_a_store_of_an_older_schema_is_brought_up_to_date(project):
    (project / "p.plan").write_text('send(text: "one")\n')
    assert invoke("run", "p.plan").exit_code == 0
    rows("ALTER TABLE calls DROP COLUMN labels")
    rows("UPDATE schema_version SET version = %s", (SCHEMA_VERSION - 1,))
    shown = invoke("show-run", "last", "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["calls"][0]["labels"] is None  # made before labels: nothing known
    assert rows("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
    assert rows("SELECT count(*) FROM information_schema.columns WHERE table_name = 'calls' AND column_name = 'labels'") == [(1,)]


@pytest.mark.parametrize(
    "store, env, words",
    [
        ("postgresql:$PLANC_NO_SUCH_VARIABLE", {}, "the environment variable PLANC_NO_SUCH_VARIABLE holds no DSN"),
        ("postgresql:host=db", {}, 'must be "postgresql:$NAME": the DSN is read from the environment variable'),
        (
            "postgresql:$PLANC_TEST_STORE",
            {"PLANC_TEST_STORE": "host=/nonexistent dbname=x"},
            "cannot open the run store: connection",
        ),
    ],
)
def test_a_store_that_cannot_be_reached_is_one_line_and_nothing_runs(project, monkeypatch, store, env, words):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (project / "p.plan").write_text('send(text: "one")\n')
    for args in (("runs",), ("run", "p.plan")):
        result = invoke(*args, "--store", store)
        clean(result)
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"Error: {store}: ") and words in line and "password" not in line
    assert calls(project) == []


# The runs of test_stats.py's plans: a search that fails (`boom`), a call to #secret the policy refuses (E400)
STATS_RUNS = [(TRIAGE, "q=disk"), (TRIAGE, "q=boom"), (ALERT, "channel=#secret"), (TRIAGE, "q=memory"), (ALERT, "channel=#ops")]


def without_times(found: dict) -> dict:
    """`planc stats`'s JSON without what depends on how long things took."""
    found = json.loads(json.dumps(found))
    found["runs"].pop("ms")
    for cost in found["costs"].values():
        cost.pop("ms")
    return found


def test_planc_stats_and_its_sql_read_a_postgresql_store_as_an_sqlite_one(project, tmp_path_factory, monkeypatch):
    """The same runs recorded in both stores: the same numbers (but times), the views there to ask with `--sql`,
    every query of docs/store.md answered, and a query that would write refused with the store unchanged."""
    folder = tmp_path_factory.mktemp("pgstats")
    plans = {"triage.plan": TRIAGE, "alert.plan": ALERT}
    with tool_project(folder, "pgstatstools", STATS_TOOLS, STATS_TOML, {**plans, "policy.cedar": STATS_POLICY}):
        monkeypatch.chdir(folder)
        monkeypatch.delenv("PLANC_STORE")
        stores = {"postgresql": "postgresql:$PLANC_TEST_STORE", "sqlite": str(folder / "runs.sqlite")}
        named = {text: name for name, text in plans.items()}
        for store in stores.values():
            for plan, argument in STATS_RUNS:
                invoke("run", named[plan], "--arg", argument, "--policy", "policy.cedar", "--store", store)
        found = {}
        for backend, store in stores.items():
            result = invoke("stats", "--store", store, "--format", "json")
            assert result.exit_code == 0, result.output
            found[backend] = json.loads(result.stdout)
        assert without_times(found["postgresql"]) == without_times(found["sqlite"])
        pg = found["postgresql"]
        assert pg["runs"]["count"] == 5 and pg["runs"]["by_status"] == {"failed": 2, "ok": 3}
        assert pg["failures"] == {
            "calls_by_tool": {"search": {"failed": 1}},
            "runs_by_tool": {"search": 1, "notify": 1},
            "runs_by_code": {"E400": 1},
        }
        assert pg["positions"] == {"1": {"search": 3, "get": 2}, "2": {"map": 3, "notify": 2}, "3": {"notify": 3}}
        assert pg["runs"]["ms"]["p50"] is not None
        narrowed = invoke("stats", "--store", stores["postgresql"], "--tool", "notify", "--format", "json")
        assert json.loads(narrowed.stdout)["failures"]["runs_by_code"] == {"E400": 1}
        text = invoke("stats", "--store", stores["postgresql"])
        assert text.exit_code == 0 and text.stdout.splitlines()[0] == "runs: 5 (2 failed, 3 ok)"

        asked = invoke(
            "stats",
            "--store",
            stores["postgresql"],
            "--format",
            "json",
            "--sql",
            "SELECT tool, COUNT(*) AS n FROM call_times GROUP BY tool ORDER BY tool",
        )
        assert asked.exit_code == 0, asked.output
        assert json.loads(asked.stdout) == [{"tool": "get", "n": 6}, {"tool": "notify", "n": 3}, {"tool": "search", "n": 3}]
        for query in re.findall(r"```sql\n(.*?)```", STORE_DOC.read_text(encoding="utf-8"), re.DOTALL):
            answered = invoke("stats", "--store", stores["postgresql"], "--format", "json", "--sql", query)
            assert answered.exit_code == 0, (query, answered.output)
        before = rows("SELECT id, status FROM runs ORDER BY id")
        for query in (
            "DELETE FROM runs",
            "UPDATE steps SET tool = 'x'",
            "SELECT 1; DELETE FROM runs",
            "DROP VIEW run_times",
            "CREATE TABLE kept (x integer)",
        ):
            refused = invoke("stats", "--store", stores["postgresql"], "--sql", query)
            assert refused.exit_code == 1 and refused.stderr.startswith("error: ") and "Traceback" not in refused.output
        assert rows("SELECT id, status FROM runs ORDER BY id") == before and len(before) == 5
        assert rows("SELECT count(*) FROM information_schema.views WHERE table_schema = 'planc'") == [(6,)]
