"""Attacks on what planc promises about its record: each test breaks one promise's edge on purpose.

Every test runs a project whose tools are spies: each call appends a line to `calls.log` before
it does anything else, so a test counts exactly the calls that were made. Each asserts the exit
code, the run's status (and its calls' outcomes) as the store holds them, and that no traceback
reached the user.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import time

import pytest
from cli import HANG_GUARD_S, invoke, planc_process
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

TOML = '''
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

[tools.weird]
provider = "python:{module}:weird"
params = {{ kind = {{ type = "string" }} }}
required = ["kind"]
effects = {{ idempotent = true }}  # a refused result is never asked for again, idempotent or not

[limits]
result_bytes = 4096
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "attackstore", TOOLS, TOML):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        yield tmp_path


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
        "Error: --events no/such/folder/events.jsonl: cannot write the events there: No such file or directory"]
    assert calls(project) == []
    assert stored_runs(project / "runs.sqlite") == []  # not even a run left `running`


def run_id_of(result) -> str:
    return next(line.split()[1] for line in result.stderr.splitlines() if line.startswith("run: "))


def shown(run_id: str) -> dict:
    result = invoke("show-run", run_id, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


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


def test_tuples_are_lists_in_the_run_the_record_and_the_replay(project):
    write_plan(project, 'weird(kind: "tuples")\n')
    result = invoke("run", "p.plan")
    clean(result)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"pair": [1, 2], "nested": [[3, [4]]]}
    record = shown(run_id_of(result))
    assert record["calls"][0]["outcome"] == "ok" and record["calls"][0]["output"] == {"pair": [1, 2],
                                                                                      "nested": [[3, [4]]]}
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
    finished = [event["result"] for event in record["events"] if event["event"] in ("tool_finished", "step_finished")]
    assert record["calls"][0]["output"] == record["output"] == finished[0] == finished[1] == value
    replayed = invoke("replay", run_id_of(result))
    assert replayed.exit_code == 0 and replayed.stdout == result.stdout
    assert len(calls(project)) == 1


from model_server import model_server  # noqa: E402,F401  (the loopback model server fixture)


def test_a_model_reply_above_result_bytes_is_refused_like_a_tools_result(project, model_server):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().replace("result_bytes = 4096", "result_bytes = 32")
                    + f'\n[models.judge]\nbase_url = "{model_server.url}"\nmodel = "m"\n', encoding="utf-8")
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
    copied = copy_project((config, repo, None), tmp_path,
                          toml=config.read_text(encoding="utf-8") + "\n[limits]\nresult_bytes = 32\n")
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


def outcomes(record: dict) -> list[tuple]:
    return [(call["tool"], call["input"].get("text"), call["outcome"]) for call in record["calls"]]


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
    assert err.splitlines()[-1] == (f"error: interrupted by {name}: run {run_id} is recorded as interrupted, and "
                                    f"`planc resume {run_id}` continues it")
    record = shown(run_id)
    assert record["status"] == "interrupted" and record["finished_at"] is not None
    assert outcomes(record) == [("send", "one", "ok"), ("hold", "two", "unknown")]
    assert record["events"][-1]["event"] == "run_finished" and record["events"][-1]["status"] == "interrupted"
    assert "hold {\"text\": \"two\"}" in invoke("show-run", run_id).stdout

    replayed = invoke("replay", run_id)  # ends as the run did
    clean(replayed)
    assert replayed.exit_code == 130 and replayed.stderr.splitlines()[-1] == f"error: {record['message']}"

    resumed = invoke("resume", run_id)  # hold is idempotent: made again; send is not: never twice
    clean(resumed)
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == {"sent": "three"}
    assert [(call["tool"], call["text"]) for call in calls(project)] == [
        ("send", "one"), ("hold", "two"), ("hold", "two"), ("send", "three")]
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


class Terminal:
    """`planc ARGS` in `project` with standard input and error on a pseudo-terminal, as a person runs it."""

    def __init__(self, project, *args) -> None:
        self.master, slave = os.openpty()
        env = {**os.environ, "PLANC_STORE": str(project / "runs.sqlite"), "TERM": "xterm", "COLUMNS": "100"}
        self.process = planc_process(*args, cwd=project, stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=env)
        os.close(slave)
        self.screen = b""

    def read(self) -> bool:
        """What planc shows next; False once it has closed the terminal (it has ended)."""
        if not select.select([self.master], [], [], HANG_GUARD_S)[0]:
            self.process.kill()
            pytest.fail(f"planc showed nothing for {HANG_GUARD_S} s:\n{self.screen.decode(errors='replace')}")
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side is closed
            return False
        self.screen += chunk
        return bool(chunk)

    def questions(self, count: int) -> None:
        """Read until the `count`-th question is on the screen."""
        while self.screen.count(b"[y/n]") < count:
            if not self.read():
                pytest.fail(f"planc ended before question {count}:\n{self.screen.decode(errors='replace')}")

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def end(self) -> tuple[int, str, str]:
        """Exit status, stdout and the screen, once planc has ended."""
        while self.read():
            pass
        code = self.process.wait(timeout=HANG_GUARD_S)
        out = self.process.stdout.read().decode()
        self.process.stdout.close()
        os.close(self.master)
        screen = self.screen.decode(errors="replace")
        assert "Traceback" not in screen, screen
        return code, out, screen


needs_a_terminal = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


@needs_a_terminal
def test_a_call_refused_at_approve_is_never_made_by_resume(project):
    write_plan(project, 'send(text: "one")\n')
    terminal = Terminal(project, "run", "p.plan", "--approve")
    terminal.questions(1)
    terminal.type(b"n\n")
    code, out, screen = terminal.end()
    assert (code, out) == (1, "") and "`send` was not approved" in screen
    run_id = shown_runs(project)[0][0]
    record = shown(run_id)
    assert record["status"] == "failed" and record["options"]["approve"] is True
    assert outcomes(record) == [("send", "one", "not_approved")]

    resumed = invoke("resume", run_id)  # no terminal: the refusal stands, nothing is asked or made
    clean(resumed)
    assert resumed.exit_code == 1 and resumed.stderr.splitlines()[-1] == f"error: {record['message']}"
    terminal = Terminal(project, "resume", run_id)  # on a terminal too: the answer was no, and it is kept
    code, out, screen = terminal.end()
    assert code == 1 and "[y/n]" not in screen and record["message"] in " ".join(screen.split())
    unasked = invoke("resume", run_id, "--approve")  # --approve cannot ask without a terminal
    clean(unasked)
    assert unasked.exit_code == 2 and "not a terminal" in unasked.stderr
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 1 and replayed.stderr.splitlines()[-1] == f"error: {record['message']}"
    assert calls(project) == []
    assert shown(run_id)["calls"] == record["calls"]


@needs_a_terminal
def test_ctrl_c_at_the_approve_question_interrupts_and_only_a_terminal_resumes_it(project):
    write_plan(project, 'send(text: "one")\nsend(text: "two")\n')
    terminal = Terminal(project, "run", "p.plan", "--approve")
    terminal.questions(1)
    terminal.type(b"y\n")
    terminal.questions(2)
    terminal.process.send_signal(signal.SIGINT)
    code, out, screen = terminal.end()
    assert (code, out) == (130, "") and "interrupted by SIGINT" in screen
    run_id = shown_runs(project)[0][0]
    assert shown(run_id)["status"] == "interrupted"
    assert outcomes(shown(run_id)) == [("send", "one", "ok")]  # the second was asked about, never made

    resumed = invoke("resume", run_id)  # made under --approve, and nobody to ask: the call is not made
    clean(resumed)
    assert resumed.exit_code == 1
    assert resumed.stderr.splitlines()[-1] == (
        f"error: step 2: run {run_id} was made under --approve, and `send` is an effectful call it has not "
        f"made: with no terminal to ask on, resume does not make it (resume it on a terminal, which asks)")
    assert [call["text"] for call in calls(project)] == ["one"]

    terminal = Terminal(project, "resume", run_id)  # on a terminal it asks, for the call not made only
    terminal.questions(1)
    terminal.type(b"y\n")
    code, out, screen = terminal.end()
    assert code == 0 and json.loads(out) == {"sent": "two"} and screen.count("[y/n]") == 1
    assert [call["text"] for call in calls(project)] == ["one", "two"]
    record = shown(run_id)
    assert record["status"] == "ok" and outcomes(record) == [("send", "one", "ok"), ("send", "two", "ok")]
