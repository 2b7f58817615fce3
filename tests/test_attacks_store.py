"""Attacks on what planc promises about its record: each test breaks one promise's edge on purpose.

Every test runs a project whose tools are spies: each call appends a line to `calls.log` before
it does anything else, so a test counts exactly the calls that were made. Each asserts the exit
code, the run's status (and its calls' outcomes) as the store holds them, and that no traceback
reached the user.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, invoke, planc_executable, planc_process
from terminal import Terminal, needs_a_terminal
from tool_project import tool_project

POLL_S = 0.005  # between two looks at what a process has done

TOOLS = '''
import json
import os
import threading
from pathlib import Path

SPY = Path(__file__).with_name("calls.log")


def _called(name, **args):
    with open(SPY, "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")


def send(text):
    _called("send", text=text)
    return {"sent": text}


def hold(text):
    """With PLANC_TEST_HOLD set, wait for what never comes (the test interrupts planc meanwhile)."""
    _called("hold", text=text)
    if os.environ.get("PLANC_TEST_HOLD"):
        threading.Event().wait()
    return {"held": text}


HELD = []  # the connection `lock` keeps, holding the store
LOCKED = []


def lock(store):
    """Take the run store for this tool's own connection, the first time, and keep it: a second writer."""
    _called("lock", store=store)
    if not LOCKED:
        import sqlite3
        db = sqlite3.connect(store, isolation_level=None, check_same_thread=False)
        db.execute("BEGIN EXCLUSIVE")
        HELD.append(db)
        LOCKED.append(True)
    return {"locked": True}


def release():
    while HELD:
        HELD.pop().rollback()


class Thing:
    pass


def weird(kind):
    """A result of the `kind` asked for, most of which JSON cannot hold."""
    _called("weird", kind=kind)
    if kind == "circular":
        items = [1, 2]
        items.append({"back": items})
        return {"items": items}
    if kind == "deep":
        value = []
        for _ in range(5000):
            value = [value]
        return value
    return {
        "long_integer": lambda: {"n": 10 ** 5000},
        "object": lambda: {"items": [1, 2, 3, Thing()]},
        "nan": lambda: {"score": float("nan")},
        "infinity": lambda: [float("inf")],
        "set": lambda: {"items": [0, 1, 2, {"a", "b"}]},
        "bytes": lambda: {"body": b"\\x00\\xff"},
        "int_keys": lambda: {"by_id": {1: "a"}},
        "surrogate": lambda: {"text": "\\ud800"},
        "large": lambda: "x" * 5000,
        "two_megabytes": lambda: [f"{i:06d}" + "x" * 994 for i in range(2000)],
        "tuples": lambda: {"pair": (1, 2), "nested": [(3, (4,))]},
    }[kind]()
'''

TOML = """
[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}

[tools.hold]
provider = "python:{module}:hold"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = true }}

[tools.lock]
provider = "python:{module}:lock"
params = {{ store = {{ type = "string" }} }}
required = ["store"]
effects = {{ read_only = true }}

[tools.weird]
provider = "python:{module}:weird"
params = {{ kind = {{ type = "string" }} }}
required = ["kind"]
effects = {{ idempotent = true }}  # a refused result is never asked for again, idempotent or not

[limits]
result_bytes = 4096
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "attackstore", TOOLS, TOML):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        yield tmp_path
        release(tmp_path)


def release(project) -> None:
    """Let go of the store, if the project's `lock` tool (run in this process) holds it."""
    tools = sys.modules.get(f"attackstore_{project.name.replace('-', '_')}")  # as tool_project names it
    if tools is not None:
        tools.release()


def write_plan(project, text: str, name: str = "p.plan") -> str:
    (project / name).write_text(text, encoding="utf-8")
    return name


def calls(project) -> list[dict]:
    """Every call the spies saw, in order."""
    log = project / "calls.log"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def shown_runs(project) -> list[tuple]:
    return stored_runs(project / "runs.sqlite")


def stored_runs(store) -> list[tuple]:
    """(id, status) of every run in `store`, oldest first; none when there is no store."""
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return db.execute("SELECT id, status FROM runs ORDER BY started_at, id").fetchall()


def run_id_of(result) -> str:
    return next(line.split()[1] for line in result.stderr.splitlines() if line.startswith("run: "))


def shown(run_id: str) -> dict:
    result = invoke("show-run", run_id, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def outcomes(record: dict) -> list[tuple]:
    """(tool, its `text` argument, outcome) of each call `record` holds."""
    return [(call["tool"], call["input"].get("text"), call["outcome"]) for call in record["calls"]]


def clean(result) -> None:
    """No traceback reached the user, whatever the command printed."""
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


# --- `planc run --events` into a folder that does not exist


def test_events_into_a_missing_folder_is_one_usage_message_and_nothing_runs(project):
    write_plan(project, 'send(text: "hi")\n')
    result = invoke("run", "p.plan", "--events", "no/such/folder/events.jsonl")
    clean(result)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: --events no/such/folder/events.jsonl: cannot write the events there: No such file or directory"
    ]
    assert calls(project) == []
    assert stored_runs(project / "runs.sqlite") == []  # not even a run left `running`


# --- results are recorded or refused, never a traceback after the effect

REFUSED = {
    "circular": "at $.items[2].back: a circular reference: the value contains itself",
    "deep": "at $" + "[0]" * 256 + ": nesting deeper than 256 levels",
    "long_integer": "at $.n: an integer of more than 4,300 digits, which JSON readers cannot take back",
    "object": "at $.items[3]: an object of type `Thing`: a result is JSON data",
    "nan": "at $.score: nan, which JSON cannot hold",
    "infinity": "at $[0]: inf, which JSON cannot hold",
    "set": "at $.items[3]: a set, whose order is not defined (return a sorted list)",
    "bytes": "at $.body: bytes, which have no one text form",
    "int_keys": "at $.by_id: a key that is not a string (1, int): JSON keys are strings",
    "surrogate": "at $.text: a string that is not valid Unicode (it holds a lone surrogate)",
    "large": "at $: the result is 5,002 bytes as JSON, more than `[limits] result_bytes` (4,096)",
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_result_json_cannot_hold_is_refused_recorded_and_never_asked_for_again(project, kind):
    write_plan(project, f'weird(kind: "{kind}")\nsend(text: "after")\n')
    result = invoke("run", "p.plan")
    clean(result)
    assert result.exit_code == 1
    message = f"step 1: `weird` returned a result that cannot be recorded, {REFUSED[kind]}"
    assert result.stderr.splitlines()[-1].startswith(f"error: {message}"), result.stderr
    assert calls(project) == [{"tool": "weird", "kind": kind}]  # made once, and nothing after it
    run_id = run_id_of(result)
    record = shown(run_id)
    assert record["status"] == "failed" and record["message"].startswith(message)
    assert [(call["tool"], call["outcome"], call["output"]) for call in record["calls"]] == [("weird", "refused", None)]

    resumed = invoke("resume", run_id)  # the effect happened: resume fails as the run did, calling nothing
    clean(resumed)
    assert resumed.exit_code == 1 and resumed.stderr.splitlines()[-1] == f"error: {record['message']}"
    replayed = invoke("replay", run_id)
    clean(replayed)
    assert replayed.exit_code == 1 and replayed.stderr.splitlines()[-1] == f"error: {record['message']}"
    assert len(calls(project)) == 1


@pytest.mark.parametrize(
    "value, said", [('"\\ud800"', "at $: a string that is not valid Unicode"), ("NaN", "at $: nan, which JSON cannot hold")]
)
def test_an_argument_json_cannot_hold_is_refused_before_the_run(project, value, said):
    write_plan(project, 'send(text: "one")\n')
    result = invoke("run", "p.plan", "--arg", f"x={value}")
    clean(result)
    assert result.exit_code == 2 and result.stderr.splitlines() == [
        f"Error: --arg x: {said}" + (" (it holds a lone surrogate)" if "Unicode" in said else "")
    ]
    assert calls(project) == [] and shown_runs(project) == []


def test_tuples_are_lists_in_the_run_the_record_and_the_replay(project):
    write_plan(project, 'weird(kind: "tuples")\n')
    result = invoke("run", "p.plan")
    clean(result)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"pair": [1, 2], "nested": [[3, [4]]]}
    record = shown(run_id_of(result))
    assert record["calls"][0]["outcome"] == "ok" and record["calls"][0]["output"] == {"pair": [1, 2], "nested": [[3, [4]]]}
    replayed = invoke("replay", run_id_of(result))
    assert replayed.exit_code == 0 and replayed.stdout == result.stdout
    assert len(calls(project)) == 1


def test_a_large_result_is_stored_once_and_read_back_wherever_it_was(project):
    """A result is in its call's row, two events and the run's output: the store holds it once."""
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().replace("result_bytes = 4096", "result_bytes = 4194304"), encoding="utf-8")
    write_plan(project, 'weird(kind: "two_megabytes")\n')
    result = invoke("run", "p.plan")
    clean(result)
    assert result.exit_code == 0, result.stderr
    value = json.loads(result.stdout)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    assert size > 2_000_000
    store = project / "runs.sqlite"
    assert not store.with_name("runs.sqlite-wal").exists()  # the run's connection closed: one file holds it all
    assert size < store.stat().st_size < size * 1.1 + 200_000  # once, not four times
    record = shown(run_id_of(result))
    assert record["status"] == "ok" and outcomes(record) == [("weird", None, "ok")]
    finished = [event["result"] for event in record["events"] if event["event"] in ("tool_finished", "step_finished")]
    assert record["calls"][0]["output"] == record["output"] == finished[0] == finished[1] == value
    replayed = invoke("replay", run_id_of(result))
    assert replayed.exit_code == 0 and replayed.stdout == result.stdout
    assert len(calls(project)) == 1


from model_server import model_server  # noqa: E402,F401  (the loopback model server fixture)


def test_a_model_reply_above_result_bytes_is_refused_like_a_tools_result(project, model_server):
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text().replace("result_bytes = 4096", "result_bytes = 32")
        + f'\n[models.judge]\nbase_url = "{model_server.url}"\nmodel = "m"\n',
        encoding="utf-8",
    )
    model_server.play("answer_yes")
    write_plan(project, 'decide(infer: "Is it on fire?", then: { send(text: "fire") })\n')
    result = invoke("run", "p.plan")
    clean(result)
    assert result.exit_code == 1
    assert "step 1: the `judge` model returned a result that cannot be recorded, at $: the result is" in result.stderr
    assert "more than `[limits] result_bytes` (32)" in result.stderr
    record = shown(run_id_of(result))
    assert record["status"] == "failed"
    assert [(call["tool"], call["outcome"]) for call in record["calls"]] == [("model:judge", "refused")]
    assert calls(project) == [] and len(model_server.bodies()) == 1


def test_an_mcp_result_above_result_bytes_is_refused_like_a_python_tools(mcp_project, tmp_path, monkeypatch):
    from test_mcp_run import copy_project

    config, repo, synced = mcp_project
    assert synced.exit_code == 0, synced.output
    copied = copy_project(
        (config, repo, None), tmp_path, toml=config.read_text(encoding="utf-8") + "\n[limits]\nresult_bytes = 32\n"
    )
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    (tmp_path / "p.plan").write_text(f'git__git_status(repo_path: "{repo}")\n', encoding="utf-8")
    result = invoke("run", "--config", copied, tmp_path / "p.plan")
    clean(result)
    assert result.exit_code == 1
    assert "step 1: `git__git_status` returned a result that cannot be recorded, at $: the result is" in result.stderr
    record = shown(run_id_of(result))
    assert record["status"] == "failed"
    assert [(call["tool"], call["outcome"]) for call in record["calls"]] == [("git__git_status", "refused")]


# --- interrupted runs say so


def started(project, *args, hold: bool = True) -> subprocess.Popen:
    """`planc ARGS` as a process of its own in `project` (signals need one), `hold` making `hold` wait."""
    env = {**os.environ, "PLANC_STORE": str(project / "runs.sqlite")}
    if hold:
        env["PLANC_TEST_HOLD"] = "1"
    return planc_process(*args, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until(process: subprocess.Popen, what: str, seen) -> None:
    """Look (`seen()`) until it is true, so long as `process` runs: never a guess at how long it takes."""
    deadline = time.monotonic() + HANG_GUARD_S  # a guard against a hung test, not a claim about speed
    while not seen():
        if process.poll() is not None:
            pytest.fail(f"planc ended ({process.returncode}) before {what}:\n{process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"planc never got to {what}")
        time.sleep(POLL_S)


def interrupt(process: subprocess.Popen, number: int) -> tuple[int, str, str]:
    process.send_signal(number)
    out, err = process.communicate(timeout=HANG_GUARD_S)
    return process.returncode, out, err


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_call_ends_the_run_interrupted_and_resume_finishes_it(project, number):
    write_plan(project, 'send(text: "one")\nhold(text: "two")\nsend(text: "three")\n')
    process = started(project, "run", "p.plan")
    wait_until(process, "the call of hold", lambda: len(calls(project)) == 2)
    code, out, err = interrupt(process, number)  # the tool's thread is still blocked: planc exits anyway
    assert "Traceback" not in err and out == ""
    assert code == 130, err
    run_id = next(line.split()[1] for line in err.splitlines() if line.startswith("run: "))
    name = signal.Signals(number).name
    assert err.splitlines()[-1] == (
        f"error: interrupted by {name}: run {run_id} is recorded as interrupted, and `planc resume {run_id}` continues it"
    )
    record = shown(run_id)
    assert record["status"] == "interrupted" and record["finished_at"] is not None
    assert outcomes(record) == [("send", "one", "ok"), ("hold", "two", "unknown")]
    assert record["events"][-1]["event"] == "run_finished" and record["events"][-1]["status"] == "interrupted"
    assert 'hold {"text": "two"}' in invoke("show-run", run_id).stdout

    replayed = invoke("replay", run_id)  # ends as the run did
    clean(replayed)
    assert replayed.exit_code == 130 and replayed.stderr.splitlines()[-1] == f"error: {record['message']}"

    resumed = invoke("resume", run_id)  # hold is idempotent: made again; send is not: never twice
    clean(resumed)
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == {"sent": "three"}
    assert [(call["tool"], call["text"]) for call in calls(project)] == [
        ("send", "one"),
        ("hold", "two"),
        ("hold", "two"),
        ("send", "three"),
    ]
    record = shown(run_id)
    assert record["status"] == "ok"
    assert outcomes(record) == [("send", "one", "ok"), ("hold", "two", "ok"), ("send", "three", "ok")]


def test_a_resume_interrupted_in_turn_is_recorded_interrupted_again(project):
    write_plan(project, 'hold(text: "one")\nsend(text: "two")\n')
    first = started(project, "run", "p.plan")
    wait_until(first, "the first call of hold", lambda: len(calls(project)) == 1)
    assert interrupt(first, signal.SIGINT)[0] == 130
    run_id = shown_runs(project)[0][0]
    second = started(project, "resume", run_id)
    wait_until(second, "the second call of hold", lambda: len(calls(project)) == 2)
    code, out, err = interrupt(second, signal.SIGTERM)
    assert (code, out) == (130, "") and "Traceback" not in err
    assert err.splitlines()[-1].startswith("error: interrupted by SIGTERM: run ")
    record = shown(run_id)
    assert record["status"] == "interrupted" and outcomes(record) == [("hold", "one", "unknown")]
    assert [call["tool"] for call in calls(project)] == ["hold", "hold"]  # send never started


# --- resume honours the approval the run was made under


def on_a_terminal(project, *args) -> Terminal:
    """`planc ARGS` in `project` with standard input and error on a pseudo-terminal, as a person runs it."""
    return Terminal(*args, cwd=project, env={"PLANC_STORE": str(project / "runs.sqlite")})


@needs_a_terminal
def test_a_call_refused_at_approve_is_never_made_by_resume(project):
    write_plan(project, 'send(text: "one")\n')
    terminal = on_a_terminal(project, "run", "p.plan", "--approve")
    terminal.until("[y/n]", 1)
    terminal.type("n\n")
    code, out, screen = terminal.end()
    assert (code, out) == (1, "") and "`send` was not approved" in screen
    run_id = shown_runs(project)[0][0]
    record = shown(run_id)
    assert record["status"] == "failed" and record["options"]["approve"] is True
    assert outcomes(record) == [("send", "one", "not_approved")]

    resumed = invoke("resume", run_id)  # no terminal: the refusal stands, nothing is asked or made
    clean(resumed)
    assert resumed.exit_code == 1 and resumed.stderr.splitlines()[-1] == f"error: {record['message']}"
    terminal = on_a_terminal(project, "resume", run_id)  # on a terminal too: the answer was no, and it is kept
    code, out, screen = terminal.end()
    assert code == 1 and "[y/n]" not in screen and record["message"] in " ".join(screen.split())
    unasked = invoke("resume", run_id, "--approve")  # with no terminal either: the no stands
    clean(unasked)
    assert unasked.exit_code == 1 and unasked.stderr.splitlines()[-1] == f"error: {record['message']}"
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 1 and replayed.stderr.splitlines()[-1] == f"error: {record['message']}"
    assert calls(project) == []
    assert shown(run_id)["calls"] == record["calls"]


@needs_a_terminal
def test_ctrl_c_at_the_approve_question_interrupts_and_only_a_terminal_resumes_it(project):
    write_plan(project, 'send(text: "one")\nsend(text: "two")\n')
    terminal = on_a_terminal(project, "run", "p.plan", "--approve")
    terminal.until("[y/n]", 1)
    terminal.type("y\n")
    terminal.until("[y/n]", 2)
    terminal.process.send_signal(signal.SIGINT)
    code, out, screen = terminal.end()
    assert (code, out) == (130, "") and "interrupted by SIGINT" in screen
    run_id = shown_runs(project)[0][0]
    assert shown(run_id)["status"] == "interrupted"
    assert outcomes(shown(run_id)) == [("send", "one", "ok")]  # the second was asked about, never made

    resumed = invoke("resume", run_id)  # made under --approve, and nobody to ask: the call waits for a person
    clean(resumed)
    assert resumed.exit_code == 3 and f"`planc approve {run_id}`" in resumed.stderr
    assert shown(run_id)["status"] == "awaiting_approval"
    assert outcomes(shown(run_id)) == [("send", "one", "ok"), ("send", "two", "awaiting_approval")]
    assert [call["text"] for call in calls(project)] == ["one"]

    terminal = on_a_terminal(project, "resume", run_id)  # on a terminal it asks, for the call not made only
    terminal.until("[y/n]", 1)
    terminal.type("y\n")
    code, out, screen = terminal.end()
    assert code == 0 and json.loads(out) == {"sent": "two"} and screen.count("[y/n]") == 1
    assert [call["text"] for call in calls(project)] == ["one", "two"]
    assert outcomes(shown(run_id)) == [("send", "one", "ok"), ("send", "two", "ok")]  # the waiting row, made
    record = shown(run_id)
    assert record["status"] == "ok" and outcomes(record) == [("send", "one", "ok"), ("send", "two", "ok")]


# --- store faults are clean

BUSY_S = 0.2  # how long a write waits for another process holding the store, in these tests


@pytest.fixture
def busy_soon(monkeypatch):
    monkeypatch.setattr("planc.store.faults.BUSY_TIMEOUT_S", BUSY_S)


def integrity(store) -> str:
    with sqlite3.connect(store) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def test_a_store_another_process_holds_is_one_message_and_nothing_starts(project, busy_soon):
    write_plan(project, 'send(text: "one")\n')
    first = invoke("run", "p.plan")
    assert first.exit_code == 0, first.output
    store = project / "runs.sqlite"
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer, mid-transaction
    try:
        result = invoke("run", "p.plan")
        listed = invoke("runs", "--format", "json")  # reading goes on meanwhile
        shown_meanwhile = invoke("show-run", run_id_of(first))
    finally:
        holder.rollback()
        holder.close()
    clean(result)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: {store}: cannot write to the run store: another process is writing to it, and has held it for "
        f"more than {BUSY_S:g} s (database is locked)"
    )
    assert listed.exit_code == 0 and [run["status"] for run in json.loads(listed.stdout)] == ["ok"]
    assert shown_meanwhile.exit_code == 0
    assert [call["text"] for call in calls(project)] == ["one"]  # the second run made no call
    assert integrity(store) == "ok" and [status for _, status in shown_runs(project)] == ["ok"]


def test_a_store_taken_mid_run_stops_the_run_and_says_so(project, busy_soon):
    store = project / "runs.sqlite"
    write_plan(project, f'send(text: "one")\nlock(store: "{store}")\nsend(text: "two")\n')
    result = invoke("run", "p.plan")  # `lock` takes the store: its own result cannot be recorded
    clean(result)
    assert result.exit_code == 1
    run_id = run_id_of(result)
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"error: {store}: cannot write to the run store: another process is writing to it"), last
    assert last.endswith(
        f"(database is locked); and how it ended could not be recorded either: the store says the "
        f"run is still running, and `planc resume {run_id}` ends it from its record"
    )
    assert [call["tool"] for call in calls(project)] == ["send", "lock"]  # and nothing after the failure
    release(project)

    record = shown(run_id)  # all there: the run, whose process is gone, shows as interrupted; `lock` has no outcome
    assert record["status"] == "interrupted" and outcomes(record) == [("send", "one", "ok"), ("lock", None, "unknown")]
    resumed = invoke("resume", run_id)  # this process gave the run up: its lease is broken
    clean(resumed)
    assert resumed.exit_code == 0, resumed.output
    assert [call["tool"] for call in calls(project)] == ["send", "lock", "lock", "send"]
    assert shown(run_id)["status"] == "ok" and integrity(store) == "ok"


def test_a_full_disk_mid_run_stops_the_run_and_loses_nothing_recorded(project, monkeypatch):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().replace("result_bytes = 4096", "result_bytes = 4194304"), encoding="utf-8")
    write_plan(project, 'send(text: "zero")\n', "first.plan")
    first = invoke("run", "first.plan")
    assert first.exit_code == 0, first.output
    store = project / "runs.sqlite"
    with sqlite3.connect(store) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    connect = sqlite3.connect

    def on_a_small_disk(*args, **kwargs):  # room for the small rows of a run, not for a 2 MB result
        db = connect(*args, **kwargs)
        db.execute(f"PRAGMA max_page_count = {pages + 12}")
        return db

    monkeypatch.setattr(sqlite3, "connect", on_a_small_disk)
    write_plan(project, 'send(text: "one")\nweird(kind: "two_megabytes")\nsend(text: "two")\n')
    result = invoke("run", "p.plan")
    monkeypatch.setattr(sqlite3, "connect", connect)
    clean(result)
    assert result.exit_code == 1
    run_id = run_id_of(result)
    assert result.stderr.splitlines()[-1] == (
        f"error: {store}: cannot write to the run store: the disk is full (database or disk is full)"
    )
    assert [(call["tool"], call.get("text")) for call in calls(project)] == [
        ("send", "zero"),
        ("send", "one"),
        ("weird", None),
    ]  # nothing after the failure
    assert integrity(store) == "ok"
    record = shown(run_id)
    assert record["status"] == "failed" and outcomes(record) == [("send", "one", "ok"), ("weird", None, "unknown")]
    replayed_first = invoke("replay", run_id_of(first))  # what was recorded before is whole
    assert replayed_first.exit_code == 0 and replayed_first.stdout == first.stdout

    resumed = invoke("resume", run_id)  # with room again: `weird` is idempotent, made again; `send` not
    clean(resumed)
    assert resumed.exit_code == 0, resumed.output
    assert [(call["tool"], call.get("text")) for call in calls(project)] == [
        ("send", "zero"),
        ("send", "one"),
        ("weird", None),
        ("weird", None),
        ("send", "two"),
    ]


def as_a_user():
    """For `planc_process`: a process that, even run by root (as CI runs), cannot write what is read-only.

    Root writes a read-only file regardless, through the capabilities that override file permissions;
    dropped from the bounding set before planc starts, they are not planc's, as they are not a user's."""
    if os.geteuid() != 0:
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def drop() -> None:
        for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


def planc_as_a_user(project, *args) -> subprocess.CompletedProcess:
    process = planc_process(
        *args,
        cwd=project,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_a_user(),
    )
    out, err = process.communicate(timeout=HANG_GUARD_S)
    assert "Traceback" not in err, err
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_a_read_only_store_is_read_and_never_written(project, monkeypatch):
    folder = project / "store"
    store = folder / "runs.sqlite"
    monkeypatch.setenv("PLANC_STORE", str(store))
    write_plan(project, 'send(text: "one")\n')
    first = invoke("run", "p.plan")
    assert first.exit_code == 0, first.output
    run_id = run_id_of(first)
    before = store.read_bytes()
    store.chmod(0o444)
    try:
        for read_only_folder in (False, True):  # a read-only folder is where SQLite meets a read-only filesystem
            if read_only_folder:
                folder.chmod(0o555)
            ran = planc_as_a_user(project, "run", "p.plan")
            assert ran.returncode == 2 and ran.stdout == "", ran.stderr
            assert ran.stderr.splitlines()[-1] == (
                f"Error: {store}: cannot write to the run store: it is read-only (attempt to write a readonly database)"
            ), ran.stderr
            listed = planc_as_a_user(project, "runs", "--format", "json")
            assert listed.returncode == 0 and [run["id"] for run in json.loads(listed.stdout)] == [run_id]
            record = planc_as_a_user(project, "show-run", run_id, "--format", "json")
            assert record.returncode == 0 and json.loads(record.stdout)["status"] == "ok"
            replayed = planc_as_a_user(project, "replay", run_id)
            assert replayed.returncode == 0 and replayed.stdout == first.stdout
    finally:
        folder.chmod(0o755)
        store.chmod(0o644)
    assert [call["text"] for call in calls(project)] == ["one"]  # only the first run's call
    assert store.read_bytes() == before


def needs_a_mount_namespace(folder: Path) -> None:
    """Skip, saying what is missing, unless this process can mount a tmpfs in a mount namespace of its own:
    root, `unshare` and `mount`, and the right to make the namespace (a container without CAP_SYS_ADMIN
    refuses it)."""
    if os.geteuid() != 0:
        pytest.skip("a mount namespace needs root")
    for command in ("unshare", "mount"):
        if not shutil.which(command):
            pytest.skip(f"a mount namespace needs `{command}`")
    probe = folder / "probe-mount"
    probe.mkdir()
    tried = subprocess.run(
        ["unshare", "--mount", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {probe}"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    probe.rmdir()
    if tried.returncode != 0:
        pytest.skip(f"no mount namespace here: {tried.stderr.strip()}")


def test_a_store_on_a_read_only_filesystem_is_read(project):
    """A real read-only filesystem: a tmpfs mounted read-only in a mount namespace of the test's own."""
    needs_a_mount_namespace(project)
    write_plan(project, 'send(text: "one")\n')
    first = invoke("run", "p.plan")
    assert first.exit_code == 0, first.output
    run_id, planc = run_id_of(first), planc_executable()
    place = project / "mounted"
    place.mkdir()
    script = (
        f"set -e; mount -t tmpfs -o size=16m tmpfs {place}; cp {project / 'runs.sqlite'} {place}; "
        f"mount -o remount,ro {place}; cd {project}; export PLANC_STORE={place / 'runs.sqlite'}; "
        f'{planc} runs; {planc} show-run {run_id}; {planc} run p.plan || echo "run: $?"'
    )
    done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(run_id) and " ok " in lines[0]
    assert lines[1].startswith(f"run {run_id}: ok") and lines[-1] == "run: 2"
    assert done.stderr.splitlines()[-1].startswith(
        f"Error: {place / 'runs.sqlite'}: cannot open the run store: it is on a read-only filesystem ("
    )
    assert [call["text"] for call in calls(project)] == ["one"]


def test_a_full_disk_for_real_stops_the_run(project):
    """A real full disk: a 1 MB tmpfs, mounted in a mount namespace of the test's own, for a 2 MB result."""
    needs_a_mount_namespace(project)
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().replace("result_bytes = 4096", "result_bytes = 4194304"), encoding="utf-8")
    write_plan(project, 'send(text: "one")\nweird(kind: "two_megabytes")\nsend(text: "two")\n')
    place, kept = project / "small-disk", project / "kept"
    place.mkdir()
    kept.mkdir()
    script = (
        f"set -e; mount -t tmpfs -o size=1m tmpfs {place}; cd {project}; "
        f'PLANC_STORE={place / "runs.sqlite"} {planc_executable()} run p.plan || echo "run: $?"; '
        f"cp {place}/runs.sqlite* {kept}"
    )
    done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[-1] == "run: 1"
    assert done.stderr.splitlines()[-1] == (
        f"error: {place / 'runs.sqlite'}: cannot write to the run store: the disk is full (database or disk is full)"
    )
    assert [(call["tool"], call.get("text")) for call in calls(project)] == [("send", "one"), ("weird", None)]
    store = kept / "runs.sqlite"
    assert integrity(store) == "ok"
    ((run_id, status),) = stored_runs(store)
    assert status == "failed"
    record = invoke("show-run", run_id, "--store", store, "--format", "json")
    assert outcomes(json.loads(record.stdout)) == [("send", "one", "ok"), ("weird", None, "unknown")]


def test_a_file_that_is_not_a_run_store_is_one_message_for_every_command(project):
    broken = project / "broken.db"
    garbage = bytes(range(256)) * 64
    broken.write_bytes(garbage)
    write_plan(project, 'send(text: "one")\n')
    said = "cannot open the run store: it is not a planc run store, or it is damaged (file is not a database)"
    for args in (("run", "p.plan"), ("runs",), ("show-run", "some-run"), ("replay", "some-run"), ("resume", "some-run")):
        result = invoke(*args, "--store", broken)
        clean(result)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.splitlines() == [f"Error: {broken}: {said}"], (args, result.stderr)
    assert calls(project) == [] and broken.read_bytes() == garbage


def test_a_damaged_store_is_one_message_and_no_call(project):
    write_plan(project, 'weird(kind: "tuples")\n')
    first = invoke("run", "p.plan")
    assert first.exit_code == 0, first.output
    damaged = project / "damaged.db"
    intact = (project / "runs.sqlite").read_bytes()
    page = 4096
    damaged.write_bytes(intact[:page] + b"\xff" * (len(intact) - page))  # every table's pages but the schema's
    for args in (("show-run", run_id_of(first)), ("replay", run_id_of(first)), ("run", "p.plan")):
        result = invoke(*args, "--store", damaged)
        clean(result)
        assert result.exit_code == 2, (args, result.output)
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"Error: {damaged}: cannot ") and "it is not a planc run store, or it is damaged" in line
    assert len(calls(project)) == 1


def test_two_resumes_of_one_run_at_once_the_second_is_refused(project):
    write_plan(project, 'send(text: "one")\nhold(text: "two")\nsend(text: "three")\n')
    run = started(project, "run", "p.plan")
    wait_until(run, "the run's call of hold", lambda: len(calls(project)) == 2)
    run_id = shown_runs(project)[0][0]
    while_it_runs = invoke("resume", run_id)  # the run's own process holds it
    clean(while_it_runs)
    assert while_it_runs.exit_code == 1
    assert while_it_runs.stderr.splitlines()[-1].startswith(f"error: run {run_id} is being recorded by process {run.pid} (since ")
    run.kill()  # SIGKILL: it never gives the run back
    run.communicate(timeout=HANG_GUARD_S)

    first = started(project, "resume", run_id)
    wait_until(first, "the first resume's call of hold", lambda: len(calls(project)) == 3)
    second = invoke("resume", run_id)
    clean(second)
    assert second.exit_code == 1
    assert second.stderr.splitlines()[-1].startswith(f"error: run {run_id} is being recorded by process {first.pid}")
    assert "one process at a time records into a run" in second.stderr
    first.kill()
    first.communicate(timeout=HANG_GUARD_S)

    third = invoke("resume", run_id)  # its holder is gone: the lease is broken
    clean(third)
    assert third.exit_code == 0, third.output
    assert [(call["tool"], call["text"]) for call in calls(project)] == [
        ("send", "one"),
        ("hold", "two"),
        ("hold", "two"),
        ("hold", "two"),
        ("send", "three"),
    ]
    assert shown(run_id)["status"] == "ok" and integrity(project / "runs.sqlite") == "ok"
