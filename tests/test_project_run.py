"""`planc run` between a model and the tools, with what the project's planc.toml says: its budget and
principal, the run store beside it, arguments read as their declared types, and stdout that holds the
result alone. Without a planc.toml, tool names cannot be checked: `check` warns and `run` refuses.

The tools are spies: each call appends a line to `calls.log` first, so a test counts the calls made.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest
from cli import HANG_GUARD_S, invoke, planc_completed, planc_process
from tool_project import tool_project

TOOLS = '''
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import planc

SPY = Path(__file__).with_name("calls.log")


def _called(name, **args):
    with open(SPY, "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")


@planc.tool
def greet(city: str) -> dict:
    """Greet a city."""
    _called("greet", city=city)
    print("noise from print()")
    sys.stdout.write("noise from sys.stdout\\n")
    subprocess.run(["echo", "noise from a subprocess"], check=True)
    return {"city": city, "kind": type(city).__name__}


@planc.tool
def hold(text: str) -> dict:
    """With PLANC_TEST_HOLD set, wait for what never comes (the test kills planc meanwhile)."""
    _called("hold", text=text)
    if os.environ.get("PLANC_TEST_HOLD"):
        threading.Event().wait()
    return {"held": text}


@planc.tool
def count(n: int) -> dict:
    """Count to n."""
    _called("count", n=n)
    return {"n": n, "kind": type(n).__name__}
'''

TOML = """
principal = 'User::"ops"'
policy = "policy.cedar"

[budget]
max_calls = 2

[tools.greet]
provider = "python:{module}:greet"

[tools.tally]
provider = "python:{module}:count"

[tools.hold]
provider = "python:{module}:hold"

[plans.visit]
file = "visit.plan"
params = {{ city = {{ type = "string" }} }}
"""

POLICY = 'permit(principal == User::"ops", action == Action::"call", resource);\n'
THREE = 'greet(city: "a")\ngreet(city: "b")\ngreet(city: "c")\n'


@pytest.fixture(autouse=True)
def store_where_the_project_is(monkeypatch):
    """These tests look for the store where a user finds it, not in the session's (conftest.py)."""
    monkeypatch.delenv("PLANC_STORE")


@pytest.fixture
def project(tmp_path):
    with tool_project(
        tmp_path,
        "project_run",
        TOOLS,
        TOML,
        {
            "policy.cedar": POLICY,
            "visit.plan": "greet(city: $args.city)\n",
            "three.plan": THREE,
            "one.plan": 'greet(city: "a")\n',
        },
    ):
        yield tmp_path


def calls(folder) -> list[dict]:
    log = folder / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def runs_in(store) -> list[tuple[str, str]]:
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return db.execute("SELECT id, status FROM runs ORDER BY started_at, rowid").fetchall()


def no_traceback(result) -> None:
    assert "Traceback" not in result.output + (result.stderr or "")


# --- budget and principal from planc.toml


def test_the_budget_of_planc_toml_refuses_a_plan_before_anything_runs(project):
    result = invoke("run", project / "three.plan")
    assert result.exit_code == 1
    assert "over budget: the plan may make up to 3 tool calls, and `[budget] max_calls` is 2" in result.stderr
    assert calls(project) == [] and runs_in(project / ".planc" / "runs.sqlite") == []
    no_traceback(result)


def test_an_option_overrides_the_budget_of_planc_toml(project):
    assert invoke("check", project / "three.plan", "--max-calls", "3").exit_code == 0
    result = invoke("run", project / "three.plan", "--max-calls", "3")
    assert result.exit_code == 0, result.output
    assert [call["city"] for call in calls(project)] == ["a", "b", "c"]
    refused = invoke("run", project / "one.plan", "--max-calls", "0")
    assert refused.exit_code == 1 and "`--max-calls` is 0" in refused.stderr
    assert len(calls(project)) == 3


def test_the_principal_of_planc_toml_is_who_the_policy_judges(project):
    assert invoke("check", project / "one.plan").exit_code == 0
    denied = invoke("run", project / "one.plan", "--principal", 'User::"eve"')
    assert denied.exit_code == 1 and "E400" in denied.stderr and 'User::"eve"' in denied.stderr
    assert calls(project) == []
    assert invoke("run", project / "one.plan").exit_code == 0
    ((run_id, status),) = runs_in(project / ".planc" / "runs.sqlite")
    assert status == "ok"
    shown = json.loads(invoke("show-run", run_id[:12], "--store", project / ".planc" / "runs.sqlite", "--format", "json").stdout)
    assert shown["options"]["principal"] == 'User::"ops"'


# --- a model's reply straight into planc run


def test_run_extract_runs_the_plan_in_a_model_reply(project):
    (project / "reply.md").write_text('Here is the plan:\n\n```\ngreet(city: "Oslo")\n```\nIt greets Oslo.\n')
    result = invoke("run", "--extract", project / "reply.md")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"city": "Oslo", "kind": "str"}
    assert calls(project) == [{"tool": "greet", "city": "Oslo"}]


def test_run_extract_refuses_a_reply_over_budget_with_no_call_and_no_record(project):
    (project / "reply.md").write_text("```\n" + THREE + "```\n")
    result = invoke("run", "--extract", project / "reply.md", "--max-calls", "1")
    assert result.exit_code == 1
    assert "E401" in result.stderr and "`--max-calls` is 1" in result.stderr
    assert calls(project) == [] and runs_in(project / ".planc" / "runs.sqlite") == []
    no_traceback(result)


# --- without a planc.toml


def test_without_planc_toml_check_warns_that_tool_names_were_not_checked(tmp_path):
    (tmp_path / "a.plan").write_text('search(query: "x") |> filter(where: severity > 1)\n')
    checked = planc_completed("check", "a.plan", cwd=tmp_path)
    assert checked.returncode == 0
    assert "warning: no planc.toml was found for a.plan: the tools it calls were not checked" in checked.stderr
    assert "planc init" in checked.stderr
    strict = planc_completed("check", "--strict", "a.plan", cwd=tmp_path)
    assert strict.returncode == 1 and "no planc.toml" in strict.stderr


def test_without_planc_toml_run_refuses_before_recording_anything(tmp_path):
    (tmp_path / "a.plan").write_text('search(query: "x") |> filter(where: severity > 1)\n')
    result = planc_completed("run", "a.plan", cwd=tmp_path)
    assert result.returncode == 1
    assert "error: a.plan: no planc.toml declares `search`" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / ".planc").exists()


def test_without_planc_toml_a_plan_of_control_steps_alone_checks_and_runs(tmp_path):
    (tmp_path / "a.plan").write_text("reshape(value: [1, 2, 3]) |> filter(where: item > 1)\n")
    checked = planc_completed("check", "--strict", "a.plan", cwd=tmp_path)
    assert checked.returncode == 0 and "no planc.toml" not in checked.stderr
    ran = planc_completed("run", "a.plan", cwd=tmp_path)
    assert ran.returncode == 0 and json.loads(ran.stdout) == [2, 3]


# --- the run store where the project is


def test_the_store_is_beside_planc_toml_wherever_planc_runs(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    ran = planc_completed("run", project / "one.plan", cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    assert not (elsewhere / ".planc").exists()
    ((run_id, status),) = runs_in(project / ".planc" / "runs.sqlite")
    (project / "sub").mkdir()
    listed = planc_completed("runs", "--format", "json", cwd=project / "sub")
    assert listed.returncode == 0 and [run["id"] for run in json.loads(listed.stdout)] == [run_id]
    for name in ("last", run_id[:-3]):
        shown = planc_completed("show-run", name, "--format", "json", cwd=project)
        assert shown.returncode == 0 and json.loads(shown.stdout)["id"] == run_id


def test_the_store_of_planc_toml_is_honoured(project):
    toml = project / "planc.toml"
    toml.write_text('store = "state/runs.db"\n' + toml.read_text())
    ran = planc_completed("run", "one.plan", cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert [status for _, status in runs_in(project / "state" / "runs.db")] == ["ok"]
    assert not (project / ".planc").exists()
    replayed = planc_completed("replay", "last", cwd=project)
    assert replayed.returncode == 0 and len(calls(project)) == 1


def test_a_run_named_by_a_prefix_two_runs_share_is_one_message(project):
    for _ in range(2):
        assert planc_completed("run", "one.plan", cwd=project).returncode == 0
    (first, _), (second, _) = runs_in(project / ".planc" / "runs.sqlite")
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    result = planc_completed("show-run", first[:shared], cwd=project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert first in result.stderr and second in result.stderr
    missing = planc_completed("show-run", "nosuchrun", cwd=project)
    assert missing.returncode == 2 and "no run" in missing.stderr


def test_a_run_whose_process_was_killed_shows_as_interrupted_and_resumes(project):
    (project / "held.plan").write_text('hold(text: "x")\ngreet(city: "after")\n')
    process = planc_process(
        "run",
        "held.plan",
        cwd=project,
        env={**os.environ, "PLANC_TEST_HOLD": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + HANG_GUARD_S  # a guard against a hung test, not a claim about speed
    while not calls(project):  # the call has started: its intent is committed
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=HANG_GUARD_S)
    (run,) = json.loads(planc_completed("runs", "--format", "json", cwd=project).stdout)
    assert run["status"] == "interrupted"
    assert run["message"] == f"its process is gone: `planc resume {run['id']}` continues it"
    listed = planc_completed("runs", cwd=project)
    assert "interrupted" in listed.stdout
    resumed = planc_completed("resume", "last", cwd=project)  # `hold` is not idempotent: outcome unknown
    assert resumed.returncode == 1 and "outcome unknown" in resumed.stderr and "Traceback" not in resumed.stderr
    assert [call["tool"] for call in calls(project)] == ["hold"]


# --- arguments by their declared type


def test_an_argument_declared_a_string_keeps_its_text(project):
    result = invoke("run", project / "visit.plan", "--arg", "city=42")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"city": "42", "kind": "str"}


def test_an_undeclared_argument_is_read_as_the_parameter_it_is_given_to(project):
    (project / "both.plan").write_text("greet(city: $args.city)\ntally(n: $args.n)\n")
    result = invoke("run", project / "both.plan", "--arg", "city=007", "--arg", "n=7")
    assert result.exit_code == 0, result.output
    assert calls(project) == [{"tool": "greet", "city": "007"}, {"tool": "count", "n": 7}]


def test_arg_json_gives_json_and_refuses_text_that_is_not(project):
    result = invoke("run", project / "visit.plan", "--arg-json", 'city="Oslo"')
    assert result.exit_code == 0 and json.loads(result.stdout)["city"] == "Oslo"
    wrong = invoke("run", project / "visit.plan", "--arg-json", "city=Oslo")
    assert wrong.exit_code == 2
    assert "--arg-json city: `Oslo` is not JSON" in wrong.stderr and "--arg city=" in wrong.stderr
    twice = invoke("run", project / "visit.plan", "--arg", "city=a", "--arg-json", 'city="b"')
    assert twice.exit_code == 2 and "given twice" in twice.stderr
    not_a_string = invoke("run", project / "visit.plan", "--arg-json", "city=42")
    assert not_a_string.exit_code == 1 and "`city` is invalid" in not_a_string.stderr
    assert calls(project) == [{"tool": "greet", "city": "Oslo"}]
    no_traceback(not_a_string)


# --- stdout holds the result


def test_what_a_tool_prints_never_mixes_into_the_result(project):
    result = planc_completed("run", "one.plan", cwd=project)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"city": "a", "kind": "str"}
    for noise in ("noise from print()", "noise from sys.stdout", "noise from a subprocess"):
        assert noise in result.stderr
