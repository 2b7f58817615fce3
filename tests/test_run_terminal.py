"""`planc run` on and off a terminal: `--approve`, progress on stderr, `--finish solver`/`none`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import select
import subprocess

import pytest
from cli import HANG_GUARD_S, planc_process
from model_server import model_server  # noqa: F401  (the loopback model server fixture)
from rich.console import Console
from test_run import calls, check, project, run  # noqa: F401  (the project fixture: recording Python tools)

from planc.backend.calls.approve import approval_gate
from planc.backend.calls.hooks import Hooks
from planc.backend.report.progress import Progress
from planc.backend.run.interpreter import run_plan
from planc.backend.state.values import RunError

PLAN = 'search(query: "disk", limit: 2)\nnotify(channel: "#ops", text: "found {$1.length}")'


def test_approve_without_a_terminal_makes_the_effectful_call_wait_for_planc_approve(project):
    result = run(project, PLAN, "--approve")
    assert result.exit_code == 3 and result.stdout == "" and "Traceback" not in result.output
    assert "call 2 (step 2): notify" in result.stderr and "`planc approve " in result.stderr
    assert [call["tool"] for call in calls(project)] == ["search"]  # read-only: made; notify waits, unmade


def test_the_gate_asks_only_for_effectful_calls_and_shows_the_rendered_input(project):
    checked, registry = check(project, PLAN)
    screen, asked = io.StringIO(), []
    console = Console(file=screen, width=100)

    def ask(question):
        asked.append(question)
        return True

    result = asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(gate=approval_gate(console, ask))))
    assert result.value["text"] == "found 2" and len(asked) == 1 and "notify" in asked[0]
    shown = screen.getvalue()
    assert "step 2" in shown and "notify" in shown and '"found 2"' in shown and "search" not in shown
    assert [c["tool"] for c in calls(project)] == ["search", "notify"]


def test_no_aborts_the_run_before_the_call(project):
    checked, registry = check(project, PLAN)
    gate = approval_gate(Console(file=io.StringIO()), lambda question: False)
    with pytest.raises(RunError, match="not approved"):
        asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(gate=gate)))
    assert [c["tool"] for c in calls(project)] == ["search"]


def _on_a_terminal(project, answer: bytes, *args, once: bytes | None = None) -> tuple[int, str, str]:
    """`planc run p.plan --approve` with stdin and stderr on a pseudo-terminal, typing `answer` (at once, or
    when the screen shows `once`)."""
    master, slave = os.openpty()
    process = planc_process(
        "run",
        "p.plan",
        "--approve",
        *args,
        cwd=project,
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(slave)
    if once is None:
        os.write(master, answer)
    screen = b""
    while True:  # until the terminal is closed: planc has ended (reading it then fails with EIO)
        if not select.select([master], [], [], HANG_GUARD_S)[0]:
            process.kill()
            pytest.fail(f"planc run --approve wrote nothing for {HANG_GUARD_S} s:\n{screen.decode(errors='replace')}")
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
        if once is not None and once in screen:
            os.write(master, answer)
            once = None
    process.wait(timeout=HANG_GUARD_S)
    stdout = process.stdout.read().decode()
    process.stdout.close()
    os.close(master)
    return process.returncode, stdout, screen.decode(errors="replace")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("answer, code, called", [(b"n\n", 1, ["search"]), (b"y\n", 0, ["search", "notify"])])
def test_approve_on_a_terminal(project, answer, code, called):
    (project / "p.plan").write_text(PLAN, encoding="utf-8")
    returncode, stdout, screen = _on_a_terminal(project, answer)
    assert returncode == code, screen
    assert "notify" in screen and "found 2" in screen
    assert [c["tool"] for c in calls(project)] == called
    if code == 0:
        assert json.loads(stdout)["text"] == "found 2"  # stdout holds the result only
    else:
        assert stdout == "" and "not approved" in screen


def test_progress_goes_to_stderr_as_plain_lines_and_events_still_to_the_file(project):
    result = run(project, 'search(query: "disk", limit: 2)\n  |> map(do: { get(id: item.id) })', "--events", "e.jsonl")
    assert result.exit_code == 0, result.output
    assert [item["id"] for item in json.loads(result.stdout)] == ["I0", "I1"]
    lines = result.stderr.splitlines()
    assert '[1] search {"query": "disk", "limit": 2}' in lines and "[1] search -> list of 2" in lines
    assert '[2/do.1[1]] get {"id": "I1"}' in lines and "[2] map -> list of 2" in lines
    events = [json.loads(line) for line in (project / "e.jsonl").read_text().splitlines()]
    assert sum(event["event"] == "tool_finished" for event in events) == 3


def test_the_progress_display_on_a_terminal():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with Progress(console, total_calls=2) as progress:
        progress.sink({"event": "step_started", "step": "1", "tool": "search"})
        progress.sink({"event": "tool_started", "step": "1", "tool": "search", "input": {"q": "x"}})
        with progress.paused():
            console.print("a question")
        progress.sink({"event": "tool_finished", "step": "1", "tool": "search", "result": [1]})
    assert progress.calls == 1 and "[1] search -> list of 1" in screen.getvalue() and "a question" in screen.getvalue()


def test_finish_none_prints_nothing(project):
    result = run(project, 'search(query: "x", limit: 1)', "--finish", "none")
    assert result.exit_code == 0 and result.stdout == ""


def test_finish_solver_prints_the_report(project, model_server):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + f'\n[models.solver]\nbase_url = "{model_server.url}"\nmodel = "planc-test-model"\n')
    model_server.play("answer_prose")
    result = run(project, 'search(query: "disk", limit: 1)', "--finish", "solver", "--query", "Is db-1 in trouble?")
    assert result.exit_code == 0, result.output
    assert result.stdout == "The incident looks severe: the disk on db-1 is full.\n"
    prompt = model_server.bodies()[0]["messages"][-1]["content"]
    assert "Is db-1 in trouble?" in prompt and '"disk 0"' in prompt


def test_finish_solver_is_refused_before_any_call_without_a_query_or_a_model(project):
    result = run(project, 'search(query: "x", limit: 1)', "--finish", "solver")
    assert result.exit_code == 2 and "--query" in result.stderr
    result = run(project, 'search(query: "x", limit: 1)', "--finish", "solver", "--query", "What?")
    assert result.exit_code == 2 and "[models.solver]" in result.stderr
    assert calls(project) == []
