"""`planc resume`: a `planc run` killed with SIGKILL mid-run, or stopped with Ctrl-C, or whose call
timed out, then resumed.

Each attempt starts `planc run` as a process of its own (forked from one that has imported planc:
`cli.planc_forks`) and kills it with SIGKILL (or interrupts it with SIGINT) at a point chosen at
random, once the test has seen the run get there:

- `recorded`: the run's row is in the store;
- `before N`: the N-th call's intent row is in the store and its tool waits (nothing done yet);
- `during N`, for a `send`: the message is written, and the tool has not returned;
- `after N`: the N-th call's result row is in the store; the kill lands between calls.

The tools hold at each of those points until the test lets them go: each call connects to a
socket the test listens on, says what it is about to do, and waits for "go". So the run can never
get past the point the test chose, every kill lands mid-run, and nothing waits on a guessed
delay: the test waits for a connection, a line, or a row, each bounded by the process's exit.
The run is then resumed (in this process; without the socket the tools run straight through):
no acknowledged call is lost, no `send` is made twice, the store stays intact, and the outcome is
the one the store predicts: "outcome unknown" exactly when a `send` was started and not finished.
The same run with `send_keyed`, which takes each call's idempotency key and acts once per key, is
never "outcome unknown": resume makes the unfinished call again with the key of its intent row, and
the tool, knowing the key, does not send twice.
SIGKILL leaves the run `running` and the call in flight an intent row; SIGINT ends the run itself,
recorded `interrupted` (exit 130) with the call in flight's outcome unknown.

A call that hangs past its `timeout_s` (its tool waits at the gate for a "go" that never comes) ends
the run by itself: the run fails at the timeout, the process exits though the tool's thread is still
blocked, the call's outcome is unknown, and resume treats it as it treats any unknown call.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import socket
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest
from cli import invoke, planc_forks
from profiles import examples

from planc.backend.calls.idempotency import idempotency_key

POLL_S = 0.005  # between two looks at the store or the socket
HANG_GUARD_POLLS = 60_000  # x POLL_S: a run that never gets where it must is hung, not slow
HANG_GUARD_S = HANG_GUARD_POLLS * POLL_S

TOOLS = '''
import os, socket


class Gate:
    """One call's line to the test (PLANC_TEST_GATE, host:port): say what comes next, wait for "go"."""

    def __init__(self):
        address = os.environ.get("PLANC_TEST_GATE")
        self.line = None
        if address:
            host, port = address.rsplit(":", 1)
            self.line = socket.create_connection((host, int(port))).makefile("rw", encoding="utf-8", newline="\\n")

    def hold(self, what):
        if self.line is not None:
            self.line.write(what + "\\n")
            self.line.flush()
            if self.line.readline() != "go\\n":
                raise RuntimeError("the test went away")


def read(n):
    Gate().hold(f"read {n}")
    return [f"m{i}" for i in range(n)]


def send(text):
    gate = Gate()
    gate.hold(f"send {text}")
    with open(os.environ["PLANC_TEST_SENT"], "a") as f:
        f.write(text + "\\n")
    gate.hold(f"sent {text}")
    return {"sent": text}


def send_keyed(text, *, idempotency_key):
    """`send`, deduplicated by the call's idempotency key: it sends once per key, and returns the same."""
    gate = Gate()
    gate.hold(f"send {text}")
    with open(os.environ["PLANC_TEST_KEYS"], "a") as f:  # every call the tool is given, with its key
        f.write(f"{idempotency_key} {text}\\n")
    sent = os.environ["PLANC_TEST_SENT"]
    done = {line.split()[0] for line in open(sent)} if os.path.exists(sent) else set()
    if idempotency_key not in done:
        with open(sent, "a") as f:  # one short append: the effect and the key it was made for
            f.write(f"{idempotency_key} {text}\\n")
    gate.hold(f"sent {text}")
    return {"sent": text}


def stall(text):
    Gate().hold(f"stall {text}")  # in the timed-out run, the "go" never comes
    with open(os.environ["PLANC_TEST_SENT"], "a") as f:
        f.write(text + "\\n")
    return {"sent": text}
'''

TOML = """
[tools.read]
provider = "python:{module}:read"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
effects = {{ read_only = true }}

[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}

[tools.send_keyed]
provider = "python:{module}:send_keyed"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}
idempotency_key = "idempotency_key"

[tools.stall]
provider = "python:{module}:stall"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}
timeout_s = 1  # never reached but in the run that waits for a "go" that never comes

[tools.stall_idempotent]
provider = "python:{module}:stall"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = true }}
timeout_s = 1
"""

PLAN = """read(n: 6)
map(over: $1, do: { send(text: item) })
read(n: 2)
reshape(value: {sent: $2, more: $3})
"""

KEYED_PLAN = PLAN.replace("send(", "send_keyed(")

CALLS = ["read 6"] + [f"send m{i}" for i in range(6)] + ["read 2"]  # what the run's calls say, in order
POINTS = (
    [("recorded", 0)]
    + [("before", n) for n in range(1, len(CALLS) + 1)]
    + [("during", n) for n, call in enumerate(CALLS, 1) if call.startswith("send")]
    + [("after", n) for n in range(1, len(CALLS))]
)  # after the last call the run ends by itself
# Runs stopped a test: every point once, then points drawn at random up to 50 under the ci hypothesis
# profile (tests/profiles.py); under the quick dev one, every point once.
KILLS = max(len(POINTS), examples(50))


def opened(*args, **options):
    """A connection to a run store, closed when the block ends: left to the garbage collector, each would
    hold its file open for a while, and the kills of these tests open hundreds."""
    return contextlib.closing(sqlite3.connect(*args, **options))


def rows(store: Path, sql: str) -> list[tuple]:
    """`sql` over the store through a read-only connection; none while the store or its tables do not exist."""
    try:
        with opened(f"file:{store}?mode=ro", uri=True) as db:
            return db.execute(sql).fetchall()
    except sqlite3.DatabaseError:  # not created yet, or not yet a whole database
        return []


def finished_calls(store: Path) -> list[tuple]:
    """The calls whose result is recorded."""
    with opened(store) as db:
        return db.execute(
            "SELECT sequence, step, tool, input, output FROM calls WHERE outcome = 'ok' ORDER BY sequence"
        ).fetchall()


class Run:
    """`planc run p.plan` as a process of its own, its tools held at the test's gate."""

    def __init__(
        self, forks, folder: Path, store: Path, sent: Path, name: str, plan: str = "p.plan", keys: Path | None = None
    ) -> None:
        self.store, self.err = store, folder / f"{name}.err"
        self.listener = socket.create_server(("127.0.0.1", 0))
        env = {
            **os.environ,
            "PLANC_TEST_SENT": str(sent),
            "PLANC_TEST_KEYS": str(keys or os.devnull),
            "PLANC_TEST_GATE": "127.0.0.1:%d" % self.listener.getsockname()[1],
        }
        env.pop("PLANC_STORE", None)
        self.process = forks.start("run", "--store", store, plan, cwd=folder, env=env, stderr=self.err)
        self.calls = []  # each call's line to its tool

    def still_running(self, what: str) -> None:
        """Fail unless the process is still running: it was to wait for the test at `what`."""
        if self.process.poll() is not None:
            pytest.fail(f"planc run ended ({self.process.returncode}) before {what}:\n{self.err.read_text()}")

    def wait_until(self, what: str, seen, pause=lambda: time.sleep(POLL_S)) -> None:
        """Look (`seen()`) until the run is at `what`, so long as the process runs."""
        for _ in range(HANG_GUARD_POLLS):
            if seen():
                return
            self.still_running(what)
            pause()
        pytest.fail(f"planc run never got to {what}")

    def next_call(self, expected: str):
        """The next call's tool, connected and saying `expected`."""
        self.wait_until(
            f"call {expected!r}", lambda: select.select([self.listener], [], [], POLL_S)[0], pause=lambda: None
        )  # the select waits, and wakes on the connection
        connection, _ = self.listener.accept()
        connection.settimeout(HANG_GUARD_S)
        line = connection.makefile("rw", encoding="utf-8", newline="\n")
        self.calls.append((connection, line))
        self.expect(line, expected)
        return line

    def expect(self, line, expected: str) -> None:
        said = line.readline()  # the tool holds the process here; the kernel ends it if the process dies
        if said != expected + "\n":
            self.still_running(f"saying {expected!r}")
            pytest.fail(f"the tool said {said!r}, not {expected!r}")

    @staticmethod
    def go(line) -> None:
        line.write("go\n")
        line.flush()

    def drive_to(self, point: tuple[str, int]) -> None:
        """Let the run go on until it is at `point`, and hold it there."""
        kind, n = point
        if kind == "recorded":
            self.wait_until("the run's row", lambda: rows(self.store, "SELECT id FROM runs"))
            return
        for number, call in enumerate(CALLS[:n], 1):
            line = self.next_call(call)
            if (kind, number) == ("before", n):
                return
            if call.startswith("send"):
                self.go(line)
                self.expect(line, call.replace("send", "sent"))
                if (kind, number) == ("during", n):
                    return
            self.go(line)
        assert kind == "after"
        self.wait_until(
            f"the result row of call {n}",
            lambda: rows(self.store, f"SELECT 1 FROM calls WHERE sequence = {n} AND finished_at IS NOT NULL"),
        )

    def stop(self, how: str) -> int:
        """Kill the run (SIGKILL) or interrupt it (SIGINT, and it ends by itself); its exit status."""
        if how == "SIGKILL":
            self.process.kill()
        elif self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)  # the process is not reaped before it ends: the pid is its own
        code = self.process.wait()
        self.close()
        return code

    def close(self) -> None:
        for connection, line in self.calls:
            line.close()
            connection.close()
        self.listener.close()


@pytest.fixture
def project(tmp_path, monkeypatch):
    module = f"resumetools_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "planc.toml").write_text(TOML.format(module=module), encoding="utf-8")
    (tmp_path / "p.plan").write_text(PLAN, encoding="utf-8")
    (tmp_path / "keyed.plan").write_text(KEYED_PLAN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_a_run_stopped_then_resumed_never_repeats_a_non_idempotent_call(project, how):
    rng = random.Random(6)
    points = rng.sample(POINTS, len(POINTS)) + [rng.choice(POINTS) for _ in range(KILLS - len(POINTS))]
    outcomes, landed = Counter(), Counter()
    with planc_forks() as forks:
        for attempt, point in enumerate(points, 1):
            outcomes[attempt_once(forks, project, attempt, point, landed, how)] += 1
    assert outcomes["resumed"] + outcomes["unknown"] >= KILLS, outcomes  # every kill landed mid-run
    assert outcomes["resumed"] > 0 and outcomes["unknown"] > 0, outcomes
    assert set(landed) == {"recorded", "before", "during", "after"}, landed
    print(how, outcomes, landed)


def attempt_once(forks, tmp_path: Path, attempt: int, point: tuple[str, int], landed: Counter, how: str) -> str:
    """Run, stop at `point` (`how`: SIGKILL or SIGINT), resume: "resumed" or "unknown"."""
    store, sent = tmp_path / f"runs{attempt}.sqlite", tmp_path / f"sent{attempt}.log"
    run = Run(forks, tmp_path, store, sent, f"run{attempt}")
    try:
        run.drive_to(point)
    finally:
        code = run.stop(how)
    where = f"attempt {attempt}, {how} at {point}"
    with opened(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", where
        ((run_id, status),) = db.execute("SELECT id, status FROM runs").fetchall()
        open_calls = db.execute("SELECT sequence, tool FROM calls WHERE outcome IS NULL OR outcome = 'unknown'").fetchall()
        unrecorded = db.execute("SELECT COUNT(*) FROM calls WHERE outcome IS NULL").fetchone()[0]
    if how == "SIGKILL":  # the run was held mid-run: it cannot have finished
        assert status == "running", where
    else:  # it ended itself, saying so, and recorded how each call in flight ended
        assert (code, status, unrecorded) == (130, "interrupted", 0), f"{where}: {run.err.read_text()}"
        assert "Traceback" not in run.err.read_text(), where
    acknowledged = finished_calls(store)
    kind, n = point
    if kind in ("before", "during"):
        assert (len(acknowledged), open_calls) == (n - 1, [(n, CALLS[n - 1].split()[0])]), where
    elif kind == "after":
        assert len(acknowledged) == n and [sequence for sequence, _ in open_calls] in ([], [n + 1]), where
    else:
        assert not acknowledged and open_calls in ([], [(1, "read")]), where
    landed[kind] += 1
    unknown = any(tool == "send" for _, tool in open_calls)  # started, never finished, not idempotent

    resumed = invoke(
        "resume", run_id, "--store", store, env={"PLANC_TEST_SENT": str(sent), "PLANC_TEST_GATE": None, "PLANC_STORE": None}
    )
    with opened(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", where
    after = finished_calls(store)
    assert all(call in after for call in acknowledged), f"{where}: an acknowledged call was lost"
    lines = sent.read_text().split() if sent.exists() else []
    assert not [text for text, count in Counter(lines).items() if count > 1], f"{where}: send repeated"
    if resumed.exit_code == 0:
        assert not unknown, f"{where}: resumed past a send whose outcome is unknown"
        assert sorted(lines) == [f"m{i}" for i in range(6)], where
        assert '"more"' in resumed.stdout, where
        return "resumed"
    assert resumed.exit_code == 1, f"{where}: {resumed.output}"
    assert "outcome unknown" in resumed.stderr, f"{where}: {resumed.stderr}"
    assert unknown, f"{where}: outcome unknown, with no send left unfinished"
    return "unknown"


def test_a_call_that_takes_its_idempotency_key_is_made_again_with_it_and_has_its_effect_once(project):
    rng = random.Random(15)
    points = rng.sample(POINTS, len(POINTS)) + [rng.choice(POINTS) for _ in range(KILLS - len(POINTS))]
    landed, made_again = Counter(), 0
    with planc_forks() as forks:
        for attempt, point in enumerate(points, 1):
            made_again += attempt_keyed(forks, project, attempt, point, landed)
    assert sum(landed.values()) == KILLS and set(landed) == {"recorded", "before", "during", "after"}, landed
    assert made_again == landed["during"] > 0  # each killed after its effect, before its result was recorded
    print("keyed", landed, made_again)


def attempt_keyed(forks, tmp_path: Path, attempt: int, point: tuple[str, int], landed: Counter) -> int:
    """Run keyed.plan, SIGKILL it at `point`, resume it: it always finishes, every `send_keyed` had its effect
    once, and a call made again got the key of its intent row. How many calls the tool was given twice."""
    store, sent, keys = (tmp_path / f"keyed{attempt}.{name}" for name in ("sqlite", "sent", "keys"))
    run = Run(forks, tmp_path, store, sent, f"keyed{attempt}", plan="keyed.plan", keys=keys)
    try:
        run.drive_to(point)
    finally:
        run.stop("SIGKILL")
    where = f"attempt {attempt}, SIGKILL at {point}"
    with opened(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", where
        ((run_id, status),) = db.execute("SELECT id, status FROM runs").fetchall()
        unfinished = {
            key for (key,) in db.execute("SELECT idempotency_key FROM calls WHERE tool = 'send_keyed' AND outcome IS NULL")
        }
    assert status == "running", where
    acknowledged = finished_calls(store)
    landed[point[0]] += 1

    resumed = invoke(
        "resume",
        run_id,
        "--store",
        store,
        env={"PLANC_TEST_SENT": str(sent), "PLANC_TEST_KEYS": str(keys), "PLANC_TEST_GATE": None, "PLANC_STORE": None},
    )
    assert resumed.exit_code == 0, f"{where}: {resumed.output}"  # never "outcome unknown"
    assert "Traceback" not in resumed.output and '"more"' in resumed.stdout, where
    assert all(call in finished_calls(store) for call in acknowledged), f"{where}: an acknowledged call was lost"
    with opened(store) as db:
        assert db.execute("SELECT status FROM runs").fetchone()[0] == "ok", where
        rows = db.execute(
            "SELECT step, input, idempotency_key, outcome FROM calls WHERE tool = 'send_keyed' ORDER BY sequence"
        ).fetchall()
    expected = [(f"2/do.1[{i}]", {"text": f"m{i}"}) for i in range(6)]
    assert [(step, json.loads(given)) for step, given, _, _ in rows] == expected, where  # one row each
    row_keys = [key for _, _, key, _ in rows]
    assert row_keys == [idempotency_key(run_id, step, given) for step, given in expected], where
    assert {outcome for *_, outcome in rows} == {"ok"}, where
    effects = [line.split() for line in sent.read_text().splitlines()]
    assert sorted(effects) == sorted([key, f"m{i}"] for i, key in enumerate(row_keys)), f"{where}: sent {effects}"
    given_keys = Counter(line.split()[0] for line in keys.read_text().splitlines())
    twice = {key for key, count in given_keys.items() if count > 1}
    assert set(given_keys) == set(row_keys) and max(given_keys.values()) <= 2, where
    assert twice == (unfinished if point[0] == "during" else set()), where  # made again with its own key
    return len(twice)


@pytest.mark.parametrize("tool, idempotent", [("stall", False), ("stall_idempotent", True)])
def test_a_call_that_hangs_past_its_timeout_ends_the_run_and_resumes_as_any_unknown_call(project, tool, idempotent):
    (project / "stall.plan").write_text(f'read(n: 1)\n{tool}(text: "s")\nread(n: 2)\n', encoding="utf-8")
    store, sent = project / "stall.sqlite", project / "stall.log"
    with planc_forks() as forks:
        run = Run(forks, project, store, sent, "stall", plan="stall.plan")
        try:
            run.go(run.next_call("read 1"))
            run.next_call("stall s")  # and never "go": the tool's thread waits for ever
            code = run.process.wait()  # the run ends by itself, at the timeout, its tool still waiting
        finally:
            run.close()
    err = run.err.read_text()
    assert code == 1 and "Traceback" not in err, err
    assert err.splitlines()[-1].startswith(f"error: step 2: `{tool}` failed: CallTimedOut: no result within 1 s")
    with opened(store) as db:
        ((run_id, status),) = db.execute("SELECT id, status FROM runs").fetchall()
        rows = db.execute("SELECT tool, outcome FROM calls ORDER BY sequence").fetchall()
    assert status == "failed" and rows == [("read", "ok"), (tool, "unknown")]
    assert not sent.exists()

    resumed = invoke(
        "resume", run_id, "--store", store, env={"PLANC_TEST_SENT": str(sent), "PLANC_TEST_GATE": None, "PLANC_STORE": None}
    )
    assert "Traceback" not in resumed.output
    if idempotent:  # made again, once, and the run goes on to its end
        assert resumed.exit_code == 0, resumed.output
        assert sent.read_text().split() == ["s"] and '"m1"' in resumed.stdout
    else:
        assert resumed.exit_code == 1 and "step 2: outcome unknown" in resumed.stderr, resumed.output
        assert "it timed out" in resumed.stderr and not sent.exists()
