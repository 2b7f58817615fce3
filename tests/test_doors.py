"""Every door that runs a plan, given the same plans, does the same: `planc run`, `planc replay` of
what it recorded, `planc resume` of a run stopped before its first step, `planc batch`, `planc plan
--run`, MCP's `run_plan` over stdio, `planc.run_async`, `Project.run`, the service example, and the
LangGraph and OpenAI Agents adapters.

- an argument of the wrong type is refused before anything runs, and nothing is recorded;
- a call the policy refuses, a tool that fails and a plan that succeeds record the same status and
  make the same calls, whichever door ran them (a replay makes none);
- the progress lines (a control step's finished line among them) are the same on the terminal, in
  `--events`, in a replay, in a resume, in MCP progress notifications and in the API's events.

A run a door only continues is started by another: the replay's by `planc run`; the resume's by
`planc.run_async`, whose task is cancelled at the run's first event (recorded interrupted, nothing
called), so its wrong-typed argument is refused there, and nothing is recorded to resume. `planc
plan --run` records its planning first, and runs the plan in that record: a run it refuses leaves
the planning's own record, ok. A run waiting for a person, continued by `planc approve`,
`planc.approve_async`, MCP's `approve_run`, `planc resume` or `planc replay` with its principal and
its author's labels, is tests/test_continued_runs.py's. Each door's runs are recorded in the
project's `runs.sqlite`; the tools are spies that append each call to `spy.log` before doing
anything else; a door's output holds no traceback.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from cli import invoke
from model_server import model_server  # noqa: F401  (the fixture)
from test_attacks import calls, statuses  # the spy's lines, the recorded statuses
from test_mcp_server import planc_mcp, run_plan  # noqa: F401 (`planc mcp`, for the module)
from tool_project import spied_project

import planc
from planc.backend.calls.hooks import Hooks
from planc.backend.report.progress import line
from planc.backend.state.values import RunError

TOOLS = """
import os

SPY = os.environ["PLANC_TEST_SPY"]


def _called(text):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(text + "\\n")


def lookup(topic):
    _called(f"lookup {topic}")
    return {"topic": topic}


def broken(topic):
    _called(f"broken {topic}")
    raise ValueError("the index is down")
"""

TOML = """
policy = "policy.cedar"
store = "runs.sqlite"

[tools.lookup]
provider = "python:{module}:lookup"
params = {{ topic = {{ type = "string" }} }}
required = ["topic"]
labels = []
effects = {{ read_only = true, idempotent = true }}

[tools.broken]
provider = "python:{module}:broken"
params = {{ topic = {{ type = "string" }} }}
required = ["topic"]
labels = []
effects = {{ read_only = true, idempotent = true }}

[models.default]
base_url = "{{url}}"
model = "m"
retries = 0
"""

POLICY = """
permit(principal, action, resource);

@id("no-secret-lookups")
forbid(principal, action, resource == Tool::"lookup")
when { context.args has topic && context.args.topic like "secret*" };
"""

LOOKUP = "lookup(topic: $args.topic)\ntake(over: [1, 2, 3], count: 2)\n"
BROKEN = "broken(topic: $args.topic)\n"

# name: the plan, its arguments, the status its run records (None: refused, nothing recorded), the
# calls made
CASES = {
    "ok": (LOOKUP, {"topic": "disk"}, "ok", ["lookup disk"]),
    "wrong type": (LOOKUP, {"topic": 5}, None, []),
    "policy": (LOOKUP, {"topic": "secret-plans"}, "failed", []),
    "failure": (BROKEN, {"topic": "disk"}, "failed", ["broken disk"]),
}
# The progress of each case's run, as every door that shows progress shows it.
OK_LINES = [
    '[1] lookup {"topic": "disk"}',
    "[1] lookup -> object",
    "[2] take ...",
    "[2] take -> list of 2",
    "run finished: ok",
]
LINES = {
    "ok": OK_LINES,
    "wrong type": [],
    "policy": ["run finished: failed"],  # refused before the call starts
    "failure": ['[1] broken {"topic": "disk"}', "[1] broken -> failed", "run finished: failed"],
}


@pytest.fixture
def project(tmp_path, monkeypatch, model_server):  # noqa: F811
    toml = TOML.replace("{{url}}", model_server.url)
    with spied_project(tmp_path, monkeypatch, "doortools", TOOLS, toml, {"policy.cedar": POLICY}) as folder:
        monkeypatch.delenv("PLANC_STORE", raising=False)  # planc.toml's store, whichever door opens it
        yield folder


def cli_run(project: Path, plan: str, arguments: dict, _) -> tuple[bool, list[str]]:
    (project / "p.plan").write_text(plan, encoding="utf-8")
    ran = invoke("run", "p.plan", *given(arguments), "--events", project / "events.jsonl")
    assert "Traceback" not in ran.output
    lines = [each for each in ran.stderr.splitlines() if each.startswith(("[", "run finished"))]
    events = (
        [json.loads(each) for each in (project / "events.jsonl").read_text().splitlines()]
        if (project / "events.jsonl").exists()
        else []
    )
    assert [said for said in map(line, events) if said is not None] == lines  # --events says what stderr says
    return ran.exit_code == 1 and "E300" in ran.stderr and "run: " not in ran.stderr, lines


def cli_replay(project: Path, plan: str, arguments: dict, model) -> tuple[bool, list[str] | None]:
    """`planc run`, then `planc replay` of what it recorded: the same end, from the record, calling
    nothing."""
    refused, _ = cli_run(project, plan, arguments, model)
    if refused:
        return True, None
    made = calls(project)
    replayed = invoke("replay", "last")
    assert "Traceback" not in replayed.output and calls(project) == made
    assert replayed.exit_code == (0 if statuses(project) == ["ok"] else 1)
    lines = replayed.stderr.splitlines()
    return False, [each for each in lines if each.startswith(("[", "run finished"))]


def cli_resume(project: Path, plan: str, arguments: dict, _) -> tuple[bool, list[str]]:
    """`planc resume` of a run stopped before its first step, then carried to its end. It is started by
    `planc.run_async`, whose events hook raises CancelledError at the run's first event (`run_started`):
    the cancellation of the task awaiting the run, landed there, before any step, as no real one can be
    timed (the first call's thread starts before the run's first await). The run is recorded
    interrupted, and nothing was called. An argument of the wrong type is refused at that start, and
    there is no run to resume."""
    checked = planc.load_project(project).check(plan)
    stopped: list[dict] = []

    def stop(event: dict) -> None:
        if not stopped:  # once: the interruption's own event is recorded
            stopped.append(event)
            raise asyncio.CancelledError

    try:
        asyncio.run(planc.run_async(checked, arguments=arguments, store=project / "runs.sqlite", hooks=Hooks(events=stop)))
    except planc.ArgumentsRefused as error:
        assert "E300" in str(error) and stopped == [] and statuses(project) == []
        return True, []
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the run was not stopped")
    [run] = json.loads(invoke("runs", "--format", "json").stdout)
    record = json.loads(invoke("show-run", run["id"], "--format", "json").stdout)
    assert [event["event"] for event in stopped] == ["run_started"]
    assert (run["status"], record["calls"], calls(project)) == ("interrupted", [], [])
    assert [event["event"] for event in record["events"]] == ["run_finished"]  # no step began
    assert run["message"].endswith(f"`planc resume {run['id']}` continues it")
    resumed = invoke("resume", run["id"], "--events", project / "events.jsonl")
    assert "Traceback" not in resumed.output and f"run: {run['id']} (resumed)" in resumed.stderr
    assert resumed.exit_code == (0 if statuses(project) == ["ok"] else 1)
    lines = [each for each in resumed.stderr.splitlines() if each.startswith(("[", "run finished"))]
    events = [json.loads(each) for each in (project / "events.jsonl").read_text().splitlines()]
    assert [said for said in map(line, events) if said is not None] == lines  # --events says what stderr says
    return False, lines


def cli_batch(project: Path, plan: str, arguments: dict, _) -> tuple[bool, None]:
    (project / "p.plan").write_text(plan, encoding="utf-8")
    (project / "lines.jsonl").write_text(json.dumps(arguments) + "\n", encoding="utf-8")
    ran = invoke("batch", "p.plan", "--args", project / "lines.jsonl", "--format", "json")
    assert "Traceback" not in ran.output
    return "line 1: refused: " in ran.stderr and "E300" in ran.stderr, None


def cli_plan_run(project: Path, plan: str, arguments: dict, model) -> tuple[bool, list[str]]:
    """`planc plan --run`: the planning is recorded first, and the plan's run in its record. A run
    refused leaves the planning's record as `planc plan` without --run leaves it: ok, the plan its
    output, which the refusal names."""
    model.reply(f"```\n{plan}```")
    ran = invoke("plan", "--run", *given(arguments), "the task")
    assert "Traceback" not in ran.output
    [planning] = [each.removeprefix("run: ") for each in ran.stderr.splitlines() if each.startswith("run: ")]
    lines = [each for each in ran.stderr.splitlines() if each.startswith(("[", "run finished"))]
    refused = ran.exit_code == 1 and "E300" in ran.stderr
    if refused:
        assert f"`planc show-run {planning}`" in ran.stderr.splitlines()[-1] and lines == []
        kept = json.loads(invoke("show-run", planning, "--format", "json").stdout)
        assert (kept["status"], kept["output"], kept["calls"][-1]["step"]) == ("ok", plan, "plan")
        replayed = invoke("replay", planning)  # the planning again, and its run refused again
        assert (replayed.exit_code, replayed.stdout) == (1, "") and replayed.stderr.endswith(ran.stderr.splitlines()[-1] + "\n")
    return refused, lines


def mcp_run_plan(project: Path, plan: str, arguments: dict, _) -> tuple[bool, list[str]]:
    with open(project / "planc.toml", "a", encoding="utf-8") as toml:
        toml.write("\n[mcp_server]\nlabels = []\n")  # the client's plans as trusted as a file's
    ran, progress = run_plan(project, plan, arguments=arguments)
    if ran["status"] == "refused":
        assert "E300" in [each["code"] for each in ran["diagnostics"]] and "run" not in ran
    return ran["status"] == "refused", progress


def api_run_async(project: Path, plan: str, arguments: dict, _) -> tuple[bool, list[str]]:
    checked = planc.load_project(project).check(plan)
    events: list = []
    try:
        asyncio.run(
            planc.run_async(
                checked,
                arguments=arguments,
                store=project / "runs.sqlite",
                hooks=Hooks(events=events.append),
            )
        )
    except planc.ArgumentsRefused as error:
        assert "E300" in str(error) and events == []
        return True, []
    except RunError:
        pass
    return False, [said for said in map(line, events) if said is not None]


def api_project_run(project: Path, plan: str, arguments: dict, _) -> tuple[bool, None]:
    loaded = planc.load_project(project)
    try:
        loaded.run(loaded.check(plan), arguments=arguments)
    except planc.ArgumentsRefused:
        return True, None
    except RunError:
        pass
    return False, None


def service_example(project: Path, plan: str, arguments: dict, _) -> tuple[bool, None]:
    pytest.importorskip("fastapi", reason="the service example needs FastAPI: pip install 'planc[service]'")
    from fastapi.testclient import TestClient

    shutil.copy(Path(__file__).resolve().parents[1] / "examples" / "service" / "app.py", project / "app.py")
    spec = importlib.util.spec_from_file_location(f"door_app_{project.name}", project / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    response = TestClient(app.app).post("/runs", json={"plan": plan, "arguments": arguments})
    body = response.json()
    assert "Traceback" not in response.text
    return response.status_code == 422 and body["status"] == "refused" and "E300" in body["problems"], None


def langgraph_adapter(project: Path, plan: str, arguments: dict, _) -> tuple[bool, None]:
    pytest.importorskip("langgraph", reason="LangGraph is not installed: pip install 'planc[langgraph]'")
    from langchain_core.messages import ToolCall

    from planc.adapters.langgraph_tool import langgraph_tool
    from planc.adapters.plan_tool import plan_tool

    tool = langgraph_tool(plan_tool(plan, name="look", project=planc.load_project(project)))
    answer = json.loads(tool.invoke(ToolCall(name="look", args=arguments, id="call_1", type="tool_call")).content)
    return "E300" in answer.get("error", ""), None


def openai_agents_adapter(project: Path, plan: str, arguments: dict, model) -> tuple[bool, None]:
    pytest.importorskip(
        "agents",
        reason="the OpenAI Agents SDK is not installed: pip install 'planc[openai-agents]'",
    )
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from planc.adapters.openai_agents_tool import openai_agents_tool
    from planc.adapters.plan_tool import plan_tool

    set_tracing_disabled(True)
    tool = openai_agents_tool(plan_tool(plan, name="look", project=planc.load_project(project)))
    model.call("look", arguments)
    model.reply("done")
    client = AsyncOpenAI(base_url=model.url, api_key="test", max_retries=0)
    agent = Agent(
        name="door",
        instructions="Look it up.",
        tools=[tool],
        model=OpenAIChatCompletionsModel(model="m", openai_client=client),
    )
    assert Runner.run_sync(agent, "look").final_output == "done"
    [sent] = [m for m in model.bodies()[-1]["messages"] if m["role"] == "tool"]
    return "E300" in json.loads(sent["content"]).get("error", ""), None


def given(arguments: dict) -> list[str]:
    return [part for name, value in arguments.items() for part in ("--arg-json", f"{name}={json.dumps(value)}")]


DOORS = {
    "planc run": cli_run,
    "planc replay": cli_replay,
    "planc resume": cli_resume,
    "planc batch": cli_batch,
    "planc plan --run": cli_plan_run,
    "mcp run_plan": mcp_run_plan,
    "planc.run_async": api_run_async,
    "Project.run": api_project_run,
    "service example": service_example,
    "langgraph": langgraph_adapter,
    "openai agents": openai_agents_adapter,
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("door", DOORS)
def test_every_door_runs_a_plan_alike(project, model_server, door, case):  # noqa: F811
    plan, arguments, status, made = CASES[case]
    refused, lines = DOORS[door](project, plan, arguments, model_server)
    assert calls(project) == made
    recorded = statuses(project)
    if door == "planc plan --run" and refused:  # the planning's own record, which keeps the plan (above)
        assert recorded == ["ok"]
        recorded = []
    assert refused is (status is None)
    assert recorded == ([status] if status is not None else [])
    if lines is not None:
        assert lines == LINES[case]
