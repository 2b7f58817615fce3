"""`planc.run_async` inside a program's own event loop: the same run as `planc.run` (which is it, in a loop of
its own), and a cancelled task ends the run as interrupted, recorded, and resumable without a call made
twice."""

from __future__ import annotations

import asyncio
import json

import pytest
from cli import invoke
from test_attacks_store import shown
from tool_project import tool_project

import planc

TOOLS = '''
import asyncio, json, os
from pathlib import Path

SPY = Path(__file__).with_name("calls.log")


def _called(name, text):
    with open(SPY, "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": name, "text": text}) + "\\n")


def send(text):
    _called("send", text)
    return {"sent": text}


async def wait(text):
    """Waits for ever, unless PLANC_TEST_WAIT_RETURNS is set: the test cancels the run meanwhile."""
    _called("wait", text)
    if not os.environ.get("PLANC_TEST_WAIT_RETURNS"):
        await asyncio.Event().wait()
    return {"waited": text}
'''

TOML = """
[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}

[tools.wait]
provider = "python:{module}:wait"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = true }}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "asynctools", TOOLS, TOML):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        monkeypatch.delenv("PLANC_TEST_WAIT_RETURNS", raising=False)
        yield tmp_path


def calls(project) -> list[tuple[str, str]]:
    log = project / "calls.log"
    return [(call["tool"], call["text"]) for call in map(json.loads, log.read_text().splitlines())] if log.exists() else []


def test_run_async_runs_inside_a_running_loop_as_run_runs_outside_one(project, monkeypatch):
    checked = planc.load_project(project).check('send(text: "one")\nwait(text: "{$1.sent}!")')
    monkeypatch.setenv("PLANC_TEST_WAIT_RETURNS", "1")

    async def service():  # a program whose loop is already running, as a web framework's is
        return await planc.run_async(checked, store=project / "runs.sqlite")

    inside = asyncio.run(service())
    outside = planc.run(checked, store=project / "runs.sqlite")
    assert inside.value == outside.value == {"waited": "one!"} and inside.run_id != outside.run_id
    assert [shown(each.run_id)["status"] for each in (inside, outside)] == ["ok", "ok"]
    assert calls(project) == [("send", "one"), ("wait", "one!")] * 2


def test_a_cancelled_task_ends_the_run_interrupted_and_resume_makes_no_call_twice(project):
    checked = planc.load_project(project).check('send(text: "one")\nwait(text: "two")\nsend(text: "three")')

    async def service():
        task = asyncio.create_task(planc.run_async(checked, store=project / "runs.sqlite"))
        while ("wait", "two") not in calls(project):  # the run is in its second call: observed, not guessed
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return task

    asyncio.run(service())
    [run] = json.loads(invoke("runs", "--format", "json").stdout)
    record = shown(run["id"])
    assert record["status"] == "interrupted"
    assert record["message"] == (
        f"interrupted: the task awaiting the run was cancelled: run {run['id']} is recorded "
        f"as interrupted, and `planc resume {run['id']}` continues it"
    )
    assert [(call["tool"], call["outcome"]) for call in record["calls"]] == [("send", "ok"), ("wait", "unknown")]
    assert calls(project) == [("send", "one"), ("wait", "two")]

    resumed = invoke("resume", run["id"], env={"PLANC_TEST_WAIT_RETURNS": "1"})
    assert resumed.exit_code == 0 and "Traceback" not in resumed.output
    assert json.loads(resumed.stdout) == {"sent": "three"}
    # `wait` is idempotent, so it is made again; `send` one is not, and is not.
    assert calls(project) == [("send", "one"), ("wait", "two"), ("wait", "two"), ("send", "three")]
    assert shown(run["id"])["status"] == "ok"


@pytest.mark.parametrize(
    "door, called",
    [
        ("run", lambda project, checked: planc.run(checked, store=project / "runs.sqlite")),
        ("approve", lambda project, checked: planc.approve("20260101-000000-00000000", store=project / "runs.sqlite")),
        ("plan", lambda project, checked: planc.plan("send a greeting", registry=planc.load_project(project).registry)),
    ],
)
def test_a_sync_door_called_inside_a_running_loop_names_its_async_twin_and_runs_nothing(project, door, called):
    """Not asyncio's bare "cannot be called from a running event loop" and two "never awaited" warnings: one
    error that says what to await, and nothing run, recorded or asked."""
    import gc
    import warnings

    checked = planc.load_project(project).check('send(text: "one")')

    async def service():
        with pytest.raises(RuntimeError) as refused:
            called(project, checked)
        return str(refused.value)

    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        message = asyncio.run(service())
        gc.collect()  # a coroutine never awaited warns when it is collected
    assert message == (
        f"planc.{door}() starts an event loop of its own, and this thread is running one: inside it, "
        f"`await planc.{door}_async(...)`, which takes the same arguments"
    )
    assert [str(warning.message) for warning in warned if "never awaited" in str(warning.message)] == []
    assert calls(project) == [] and not (project / "runs.sqlite").exists()
