"""What a new user met when one door did not do what another did, each now as every door does it
(the doors side by side are tests/test_doors.py's): an argument of the wrong type refused before
anything runs, the `planc approve` a waiting run names finding its store, a compiled plan away from
its project told what is missing, a value a step cannot read naming the step, and `planc plan` with
no model a configuration mistake. The tools are spies; each test asserts the calls made, the exit
code, what the run store holds and that no traceback reached the user.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from pathlib import Path

import pytest
from cli import invoke
from test_mcp_server import planc_mcp, run_plan  # noqa: F401 (`planc mcp`, for the module)
from tool_project import tool_project

TOOLS = """
import os


def send(text):
    with open(os.environ["PLANC_TEST_SPY"], "a", encoding="utf-8") as spy:
        spy.write(f"send {text}\\n")
    return {"sent": text}
"""

TOML = """
[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
labels = []
effects = {{ read_only = false, idempotent = false }}

[mcp_server]
labels = []
"""

COUNTED = 'send(text: "one")\ntake(over: [1, 2, 3], count: $args.n)\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "roadtools", TOOLS, TOML):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
        monkeypatch.delenv("PLANC_STORE", raising=False)
        yield tmp_path


def sent(folder: Path) -> list[str]:
    spy = folder / "spy.log"
    return spy.read_text(encoding="utf-8").splitlines() if spy.exists() else []


def recorded(store: Path) -> list[str]:
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return [status for (status,) in db.execute("SELECT status FROM runs ORDER BY started_at, id")]


def test_planc_run_refuses_an_argument_of_the_wrong_type_before_anything_runs(project):
    (project / "p.plan").write_text(COUNTED, encoding="utf-8")
    ran = invoke("run", "p.plan", "--arg", "n=abc")
    assert ran.exit_code == 1 and "Traceback" not in ran.output and "run: " not in ran.stderr
    assert (
        "error[E300]: wrong value for `count` of `take`: expected an integer of at least 0, found `$args.n`, a string"
        in ran.stderr
        and "p.plan:2:30" in ran.stderr
    )
    assert sent(project) == [] and recorded(project / ".planc" / "runs.sqlite") == []
    fits = invoke("run", "p.plan", "--arg", "n=2")
    assert fits.exit_code == 0 and json.loads(fits.stdout) == [1, 2] and sent(project) == ["send one"]


def test_mcp_run_plan_refuses_an_argument_of_the_wrong_type_and_records_nothing(project):
    ran, progress = run_plan(project, COUNTED, arguments={"n": "abc"})
    assert ran["status"] == "refused" and "run" not in ran and progress == []
    assert "E300" in [each["code"] for each in ran["diagnostics"]] and "`$args.n`" in ran["repair"]
    assert sent(project) == [] and recorded(project / ".planc" / "runs.sqlite") == []


def test_mcp_progress_says_a_control_steps_finished_line_as_the_terminal_does(project):
    (project / "p.plan").write_text(COUNTED, encoding="utf-8")
    terminal = [
        each for each in invoke("run", "p.plan", "--arg", "n=2").stderr.splitlines() if each.startswith(("[", "run finished"))
    ]
    with open(project / "planc.toml", "a", encoding="utf-8") as toml:  # the client's answer lets `send` through
        toml.write("answers_from_person = true\n")
    ran, progress = run_plan(project, COUNTED, arguments={"n": 2}, elicit=accept)
    assert ran["status"] == "ok" and "[2] take -> list of 2" in progress and progress == terminal


async def accept(context, params):
    from mcp import types

    return types.ElicitResult(action="accept", content={"approve": True})


def test_the_approve_a_waiting_run_names_finds_the_store_it_waits_in(project):
    """Run with another folder's planc.toml: the run waits in that folder's store, and the command
    it names (`planc approve RUN --store ...`), typed where the run was, approves it."""
    other = project / "other"
    other.mkdir()
    for moved in (
        project / "planc.toml",
        *project.glob("roadtools_*.py"),
    ):  # the project, tools and all
        moved.rename(other / moved.name)
    (other / "p.plan").write_text('send(text: "one")\n', encoding="utf-8")
    ran = invoke("run", "other/p.plan", "--config", "other/planc.toml", "--approve")
    assert ran.exit_code == 3 and sent(project) == [] and "Traceback" not in ran.output
    [named] = {line.split("`")[1] for line in ran.stderr.splitlines() if "approves it and continues" in line}
    assert named.startswith("planc approve ") and " --store " in named
    approved = invoke(*shlex.split(named)[1:])
    assert approved.exit_code == 0 and json.loads(approved.stdout) == {"sent": "one"}
    assert sent(project) == ["send one"] and recorded(other / ".planc" / "runs.sqlite") == ["ok"]


def test_a_compiled_plan_away_from_its_project_says_no_planc_toml_declares_its_tools(project, tmp_path_factory, monkeypatch):
    (project / "p.plan").write_text('send(text: "one")\n', encoding="utf-8")
    assert invoke("compile", "p.plan", "-o", "p.json").exit_code == 0
    away = tmp_path_factory.mktemp("away")
    (away / "p.json").write_text((project / "p.json").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(away)
    ran = invoke("run", "p.json")
    assert ran.exit_code == 1 and "Traceback" not in ran.output and "stale" not in ran.stderr
    assert ran.stderr.startswith(
        "error: p.json: no planc.toml declares `send`, so nothing says what to call: declare the tools in a planc.toml"
    )
    assert sent(project) == [] and not (away / ".planc").exists()


def test_a_value_a_step_cannot_read_names_that_step(project):
    (project / "p.plan").write_text('take(over: [1], count: 0)\nsend(text: "{$1[0]}")\n', encoding="utf-8")
    ran = invoke("run", "p.plan")
    assert ran.exit_code == 1 and "Traceback" not in ran.output
    assert ran.stderr.splitlines()[-1] == "error: step 2: `$1[0]`: index 0 of a list of 0"
    assert sent(project) == [] and recorded(project / ".planc" / "runs.sqlite") == ["failed"]


def test_planc_plan_with_no_model_is_a_configuration_mistake_and_records_nothing(project):
    planned = invoke("plan", "send a note")
    assert planned.exit_code == 2 and "Traceback" not in planned.output and "run: " not in planned.stderr
    assert (
        planned.stderr.startswith("Error: no model for the role `planner`: ")
        or "no model for the role `planner`" in planned.stderr
    )
    assert sent(project) == [] and recorded(project / ".planc" / "runs.sqlite") == []
