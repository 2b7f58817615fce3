"""`planc batch`: a run per line of arguments, refused lines never started, and `--resume` after a SIGKILL.

The tool appends each call to a spy file (its path written into the tools module, as a Ray worker
inherits no environment from planc) with the line's number and the pid that made it. A call for a
line from HOLD_FROM on waits for a release file, so the test can kill the batch with runs in flight
and finished runs behind them, each seen in the store, never after a guessed delay.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, planc_completed, planc_process
from tool_project import tool_project

POLL_S = 0.01
HANG_GUARD_POLLS = int(HANG_GUARD_S / POLL_S)
HOLD_FROM = 11  # lines from here on wait for the release file
PARALLEL = 3

TOOLS = """
import os, time
from pathlib import Path


def work(n: int, label: str) -> dict:
    with open(SPY, "a") as f:
        f.write(f"{n} {os.getpid()}\\n")
    if n >= HOLD_FROM:
        while not Path(RELEASE).exists():
            time.sleep(0.01)
    return {"n": n, "label": label}
"""

TOML = """
[tools.work]
provider = "python:{module}:work"
params = {{ n = {{ type = "integer" }}, label = {{ type = "string" }} }}
required = ["n", "label"]

[plans.one]
file = "one.plan"
params = {{ n = {{ type = "integer", minimum = 1 }}, label = {{ type = "string", default = "x" }} }}
"""

PLAN = "work(n: $args.n, label: $args.label)\n"
REFUSED = {7: '["not", "an", "object"]', 19: '{"label": "no n"}', 33: '{"n": 0}'}


@pytest.fixture
def project(tmp_path):
    tools = f"SPY = {str(tmp_path / 'spy.log')!r}\nRELEASE = {str(tmp_path / 'release')!r}\nHOLD_FROM = {HOLD_FROM}\n" + TOOLS
    with tool_project(tmp_path, "batchtools", tools, TOML, {"one.plan": PLAN}):
        lines = [REFUSED.get(n, json.dumps({"n": n, "label": f"line {n}"})) for n in range(1, 51)]
        (tmp_path / "args.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        yield tmp_path
        (tmp_path / "release").touch()


def spied(project: Path) -> Counter:
    """How many calls each line's argument `n` got."""
    spy = project / "spy.log"
    return Counter(int(line.split()[0]) for line in spy.read_text().splitlines()) if spy.exists() else Counter()


def batch_runs(store: Path) -> dict[int, tuple]:
    """The batch's runs by line: (id, status, finished_at); a line with two runs would show as a failure."""
    with sqlite3.connect(store) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
            return {}  # the store's file is there, its tables not yet: no run yet
        rows = db.execute("SELECT batch_line, id, status, finished_at FROM runs WHERE batch IS NOT NULL").fetchall()
    assert len(rows) == len({row[0] for row in rows}), "a line ran twice"
    return {row[0]: row[1:] for row in rows}


def test_a_batch_runs_every_line_the_check_accepts_and_never_starts_a_refused_one(project):
    (project / "release").touch()
    result = planc_completed(
        "batch",
        "one.plan",
        "--args",
        "args.jsonl",
        "--store",
        "runs.sqlite",
        "--format",
        "json",
        "--parallel",
        PARALLEL,
        cwd=project,
    )
    assert result.returncode == 1, result.stderr  # not every line ran ok: three were refused
    assert "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    assert (summary["lines"], summary["ok"], summary["failed"], summary["exited"], summary["refused"]) == (50, 47, 0, 0, 3)
    assert sorted(summary["refused_lines"]) == ["19", "33", "7"]
    refused = [line for line in result.stderr.splitlines() if ": refused: " in line]
    assert refused == [
        "line 7: refused: not a JSON object of arguments",
        "line 19: refused: the plan reads `$args.n`, but the run has no argument `n` (give it with `--arg n=VALUE`)",
        "line 33: refused: the argument `n` is invalid: 0 is less than the minimum of 1",
    ]
    assert result.stderr.index(refused[-1]) < result.stderr.index("batch: ")  # reported before any run
    runs = batch_runs(project / "runs.sqlite")
    assert sorted(runs) == [n for n in range(1, 51) if n not in REFUSED]
    assert {status for _, status, _ in runs.values()} == {"ok"}
    assert spied(project) == Counter({n: 1 for n in range(1, 51) if n not in REFUSED})
    assert summary["cost"]["spent"] == {"calls": 47, "inferences": 0, "usd": 0.0}
    assert summary["cost"]["estimated"]["calls"] == [47, 47]


def test_a_killed_batch_resumed_finishes_the_rest_and_repeats_no_finished_run(project):
    store = project / "runs.sqlite"
    process = planc_process(
        "batch",
        "one.plan",
        "--args",
        "args.jsonl",
        "--store",
        store,
        "--parallel",
        PARALLEL,
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    finished_before = [n for n in range(1, HOLD_FROM) if n not in REFUSED]
    for _ in range(HANG_GUARD_POLLS):  # until the lines before HOLD_FROM have finished and three calls wait
        if process.poll() is not None:
            pytest.fail(f"planc batch ended ({process.returncode}) before the kill: {process.stderr.read()}")
        runs = batch_runs(store) if store.exists() else {}
        if (
            all(runs.get(n, (None, None))[1] == "ok" for n in finished_before)
            and sum(count for n, count in spied(project).items() if n >= HOLD_FROM) == PARALLEL
        ):
            break
        time.sleep(POLL_S)
    else:
        pytest.fail("the batch never got to three calls waiting")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=HANG_GUARD_S)
    process.stderr.close()
    before = batch_runs(store)
    in_flight = sorted(n for n in spied(project) if n >= HOLD_FROM)
    assert sorted(before) == finished_before + in_flight  # nothing else had started

    (project / "release").touch()
    with sqlite3.connect(store) as db:
        batch_id = db.execute("SELECT id FROM batches").fetchone()[0]
    resumed = planc_completed("batch", "--resume", batch_id[:12], "--store", store, "--format", "json", cwd=project)
    assert resumed.returncode == 1, resumed.stderr
    assert "Traceback" not in resumed.stderr
    summary = json.loads(resumed.stdout)
    assert (summary["ok"], summary["failed"], summary["refused"]) == (47 - len(in_flight), len(in_flight), 3)
    after = batch_runs(store)
    assert sorted(after) == [n for n in range(1, 51) if n not in REFUSED]
    assert all(after[n] == before[n] for n in finished_before)  # finished runs untouched
    assert all(after[n][0] == before[n][0] and after[n][1] == "failed" for n in in_flight)  # resumed in their record
    with sqlite3.connect(store) as db:
        messages = [db.execute("SELECT message FROM runs WHERE id = ?", (after[n][0],)).fetchone()[0] for n in in_flight]
    assert all("outcome unknown" in message for message in messages)
    # Every call made once at most: the finished lines' not again, the ones cut short not again (their
    # outcome is unknown and `work` is not idempotent), the rest once each.
    assert spied(project) == Counter({n: 1 for n in range(1, 51) if n not in REFUSED})

    again = planc_completed("batch", "--resume", batch_id, "--store", store, "--format", "json", cwd=project)
    assert json.loads(again.stdout)["ok"] == summary["ok"] and batch_runs(store) == after  # nothing left to do
    assert spied(project) == Counter({n: 1 for n in range(1, 51) if n not in REFUSED})


@pytest.mark.slow  # a Ray cluster: conftest.py, the slow tier
def test_a_batch_on_ray_makes_its_loop_calls_in_workers(project, ray_address):
    (project / "release").touch()
    (project / "map.plan").write_text(
        'map(over: $args.ns, concurrency: 2, do: { work(n: item, label: "m") })\n', encoding="utf-8"
    )
    (project / "ns.jsonl").write_text('{"ns": [1, 2]}\n{"ns": [3]}\n{"ns": "three"}\n', encoding="utf-8")
    process = planc_process(
        "batch",
        "map.plan",
        "--args",
        "ns.jsonl",
        "--store",
        "runs.sqlite",
        "--executor",
        "ray",
        "--ray-address",
        ray_address,
        "--format",
        "json",
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 1, stderr
    summary = json.loads(stdout)
    assert (summary["ok"], summary["refused"]) == (2, 1)
    assert "line 3: refused: E300" in stderr and "expected a list" in stderr  # typed by its value, checked
    pids = {int(line.split()[1]) for line in (project / "spy.log").read_text().splitlines()}
    assert spied(project) == Counter({1: 1, 2: 1, 3: 1}) and process.pid not in pids


def test_a_batch_on_a_terminal_shows_a_bar_and_a_summary_table(project):
    (project / "release").touch()
    (project / "few.jsonl").write_text('{"n": 1, "label": "a"}\n{"n": 2, "label": "b"}\n', encoding="utf-8")
    master, slave = os.openpty()
    process = planc_process(
        "batch",
        "one.plan",
        "--args",
        "few.jsonl",
        "--store",
        "runs.sqlite",
        cwd=project,
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(slave)
    screen = b""
    while select.select([master], [], [], HANG_GUARD_S)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # planc has ended and closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    process.wait(timeout=HANG_GUARD_S)
    os.close(master)
    shown = screen.decode(errors="replace")
    assert process.returncode == 0, shown
    assert "━" in shown and "runs" in shown  # the bar
    assert "ok" in shown and "refused" in shown and "spent: 2 tool calls" in shown
    assert "line 1: ok" not in shown  # a line per run is for where there is no terminal


def test_batch_usage_mistakes_are_one_message_each(project):
    for args, message in (
        (["one.plan"], "give the plan and its arguments"),
        (["--resume", "x", "one.plan"], "leave out PLAN"),
        (["one.plan", "--args", "missing.jsonl"], "missing.jsonl"),
        (["--resume", "nope"], "no batch `nope`"),
    ):
        result = planc_completed("batch", *args, "--store", "runs.sqlite", cwd=project)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
    assert spied(project) == Counter()
