"""planc as a complete MCP client, against the everything reference server from npm (`tests/npm_servers`,
pinned by its package-lock.json; `.ci/run` installs it with `npm ci`).

Its tools are named like `get-sum`, and some are offered only to a client that answers roots,
elicitation and sampling requests, or runs tasks. Each test's server is started through a spy that
appends a line to `starts` each time the server starts, so that a replay can be seen to start none.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import invoke
from mcp_servers import toml_list
from model_server import ModelServer

from planc.registry import load_registry
from planc.registry.mcp.lock import LOCK_NAME

pytestmark = pytest.mark.slow  # conftest.py: the slow tier

EVERYTHING = (
    Path(__file__).with_name("npm_servers") / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)
NODE = shutil.which("node")
# What the tools need beyond what their schemas say: no network (a data URI to compress), short waits.
ARGUMENTS = {
    "gzip_file_as_resource": {"data": "data:text/plain;base64,aGVsbG8gcGxhbmM="},
    "trigger_long_running_operation": {"duration": 1, "steps": 2},
    "trigger_url_elicitation": {"url": "https://example.org/consent", "message": "Do you consent?"},
}


def require_everything() -> None:
    pytest.importorskip("mcp")
    if NODE is None or not EVERYTHING.is_file():
        pytest.skip("the everything MCP server needs node and `npm ci --prefix tests/npm_servers` (.ci/run runs it)")


def everything_toml(extra: str = "", models: str = "") -> str:
    """`[mcp.everything]`, started through a spy that appends to `starts` in the folder of planc.toml."""
    command = ["sh", "-c", f'echo started >> starts; exec "{NODE}" "{EVERYTHING}" stdio']
    return f"[mcp.everything]\ncommand = {toml_list(command)}\ntimeout_s = 60\n{extra}\n{models}"


def starts(folder: Path) -> int:
    spy = folder / "starts"
    return len(spy.read_text().splitlines()) if spy.exists() else 0


def last_run(folder: Path) -> tuple[str, str, list[tuple]]:
    """The last run's id, status and recorded calls (step, tool, outcome)."""
    with sqlite3.connect(folder / "runs.sqlite") as db:
        run_id, status = db.execute("SELECT id, status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        rows = db.execute("SELECT step, tool, outcome FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)).fetchall()
    return run_id, status, rows


@pytest.fixture(scope="module")
def model():
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory, model):
    """A planc.toml declaring the everything server (`get-env` renamed, sampling by the scripted `helper`
    role) and its synced lock; the sync's output."""
    require_everything()
    folder = tmp_path_factory.mktemp("everything")
    models = f'[models.helper]\nbase_url = "{model.url}"\nmodel = "scripted"\n'
    (folder / "data").mkdir()
    (folder / "planc.toml").write_text(
        everything_toml(
            'rename = { "get-env" = "environment", "get-envv" = "x" }\nsampling = "helper"\nroots = ["data"]\n', models
        ),
        encoding="utf-8",
    )
    synced = invoke("registry", "sync", "--config", folder / "planc.toml")
    assert synced.exit_code == 0, synced.output
    return folder, synced


@pytest.fixture
def run(project, monkeypatch):
    folder, _ = project
    monkeypatch.setenv("PLANC_STORE", str(folder / "runs.sqlite"))
    monkeypatch.chdir(folder)

    def planc(*args):
        return invoke(*args, "--config", folder / "planc.toml") if args[0] != "replay" else invoke(*args)

    return planc


def write(folder: Path, text: str, name: str = "p.plan") -> str:
    (folder / name).write_text(text, encoding="utf-8")
    return str(folder / name)


def value_for(schema: dict):
    """A value `schema` allows, for a required parameter."""
    if "enum" in schema:
        return schema["enum"][0]
    return {"string": "hello", "number": 2, "integer": 2, "boolean": False}[schema.get("type", "string")]


def test_sync_locks_every_tool_under_its_own_name_and_names_it_for_plans(project):
    folder, synced = project
    lock = json.loads((folder / LOCK_NAME).read_text(encoding="utf-8"))
    wire = set(lock["servers"]["everything"]["tools"])
    # Offered only to a client that answers roots, elicitation and sampling, or runs a task:
    assert {
        "get-roots-list",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
        "simulate-research-query",
        "get-sum",
    } <= wire
    tools = {name for name, tool in load_registry(folder / "planc.toml").tools.items() if tool.provider == "mcp:everything"}
    assert len(tools) == len(wire) and all(name.replace("_", "").isalnum() for name in tools)
    assert {"everything__get_sum", "everything__environment"} <= tools and "everything__get_env" not in tools
    assert "`get-sum` is `everything__get_sum` in plans" in synced.output
    assert "`get-env` is `everything__environment` in plans" in synced.output
    assert "`echo`" not in synced.output  # a name a plan can write already is not renamed
    assert "warning: `rename` of [mcp.everything] names `get-envv`, which is not one of its tools" in synced.output


def test_every_tool_the_server_offers_checks_runs_and_replays_without_server_or_model(project, run, model):
    """The acceptance: each tool called from one plan, its arguments checked against its schema; sampling
    answered by the scripted model, elicitation by `--answers`; the replay starts no server, asks no model."""
    folder, _ = project
    registry = load_registry(folder / "planc.toml")
    tools = sorted(name for name, tool in registry.tools.items() if tool.provider == "mcp:everything")
    lines, answers = [], {}
    for number, name in enumerate(tools, 1):
        tool = registry.tools[name]
        short = name.removeprefix("everything__")
        args = {param: value_for(tool.params[param]) for param in tool.required} | ARGUMENTS.get(short, {})
        lines.append(f"{name}({', '.join(f'{key}: {json.dumps(value)}' for key, value in args.items())})")
        if short == "trigger_elicitation_request":
            answers[str(number)] = {"name": "Ada"}
        if short == "trigger_url_elicitation":
            answers[str(number)] = True
    lines.append(f"reshape(value: [{', '.join(f'${number}' for number in range(1, len(tools) + 1))}])")
    plan = write(folder, "\n".join(lines) + "\n", "every.plan")
    (folder / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    checked = run("check", plan, "--format", "json")
    assert checked.exit_code == 0 and json.loads(checked.stdout)["ok"], checked.output
    model.reply("A haiku from the scripted model")
    before, asked = starts(folder), len(model.requests)
    ran = run("run", plan, "--answers", folder / "answers.json")
    assert ran.exit_code == 0, ran.output
    assert "Traceback" not in ran.output
    run_id, status, calls = last_run(folder)
    assert status == "ok"
    assert [tool for _, tool, _ in calls if tool.startswith("everything__")] == tools
    assert all(outcome == "ok" for _, _, outcome in calls)
    assert ("1", "model:helper") not in [(step, tool) for step, tool, _ in calls]
    assert sum(tool == "model:helper" for _, tool, _ in calls) == 1 and len(model.requests) == asked + 1
    assert sum(tool == "ask" for _, tool, _ in calls) == 2  # the two elicitations, recorded
    assert starts(folder) == before + 1
    result = ran.stdout
    assert "A haiku from the scripted model" in result and "Ada" in result  # the answers reached the server
    replayed = run("replay", run_id)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == result
    assert starts(folder) == before + 1 and len(model.requests) == asked + 1  # no server, no model


def progress_of(run, folder: Path, text: str):
    """`planc run` of the plan `text` (which must succeed), and its `tool_progress` events."""
    events = folder / "events.jsonl"
    events.unlink(missing_ok=True)
    ran = run("run", write(folder, text), "--events", events)
    assert ran.exit_code == 0, ran.output
    return ran, [json.loads(line) for line in events.read_text().splitlines() if '"tool_progress"' in line]


def test_a_long_running_tools_progress_is_events_at_the_calls_step_path(project, run):
    folder, _ = project
    ran, progress = progress_of(
        run, folder, "map(over: [1], do: { everything__trigger_long_running_operation(duration: 1, steps: 3) })\n"
    )
    assert [(event["step"], event["progress"], event["total"]) for event in progress] == [
        ("1/do.1[0]", 1.0, 3.0),
        ("1/do.1[0]", 2.0, 3.0),
        ("1/do.1[0]", 3.0, 3.0),
    ]
    assert all(event["tool"] == "everything__trigger_long_running_operation" for event in progress)
    assert "[1/do.1[0]] everything__trigger_long_running_operation ... 2/3" in ran.stderr  # the progress line


def test_a_tool_that_requires_a_task_is_polled_until_done_with_its_status_as_progress(project, run):
    folder, _ = project
    ran, progress = progress_of(run, folder, 'everything__simulate_research_query(topic: "owls")\n')
    assert "# Research Report: owls" in json.loads(ran.stdout)
    assert "working: Generating report..." in [event["message"] for event in progress]
    assert {event["step"] for event in progress} == {"1"}


def test_an_elicitation_inside_a_task_is_answered_from_answers(project, run):
    folder, _ = project
    plan = write(folder, 'everything__simulate_research_query(topic: "python", ambiguous: true)\n')
    (folder / "research.json").write_text(json.dumps({"1": {"interpretation": "programming"}}), encoding="utf-8")
    ran = run("run", plan, "--answers", folder / "research.json")
    assert ran.exit_code == 0, ran.output
    assert "# Research Report: python (programming)" in json.loads(ran.stdout)


def test_an_elicitation_nobody_can_answer_is_declined_and_recorded(project, run):
    folder, _ = project
    plan = write(folder, "everything__trigger_elicitation_request()\n")
    ran = run("run", plan)
    assert ran.exit_code == 0, ran.output
    assert "User declined" in json.loads(ran.stdout)[0]
    _, _, calls = last_run(folder)
    assert [(step, tool) for step, tool, _ in calls] == [("1", "everything__trigger_elicitation_request"), ("1", "ask")]


def test_annotated_text_keeps_its_annotations(project, run):
    folder, _ = project
    ran = run("run", write(folder, 'everything__get_annotated_message(messageType: "error")\n'))
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout) == {
        "type": "text",
        "text": "Error: Operation failed",
        "annotations": {"audience": ["user", "assistant"], "priority": 1.0},
    }


def test_the_roots_are_the_servers_roots_and_no_other(project, run):
    folder, _ = project
    ran = run("run", write(folder, "everything__get_roots_list()\n"))
    assert ran.exit_code == 0, ran.output
    said = json.loads(ran.stdout)
    assert "(1 total)" in said and f"URI: {(folder / 'data').resolve().as_uri()}" in said
    assert f"URI: {folder.resolve().as_uri()}\n" not in said  # not the folder of planc.toml


def test_sampling_counts_in_the_inference_budget(project, run):
    folder, _ = project
    checked = run("check", write(folder, 'everything__trigger_sampling_request(prompt: "hi")\n'), "--max-inferences", "0")
    assert checked.exit_code == 1 and "E401" in checked.output
    # Any tool of a server that may sample may ask for `samples_per_call` (1) inferences per call:
    checked = run("check", write(folder, "map(over: [1, 2], do: { everything__get_sum(a: 1, b: 2) })\n"), "--max-inferences", "1")
    assert checked.exit_code == 1 and "up to 2 model inferences" in checked.output


def test_a_misspelt_tool_is_offered_the_name_a_plan_can_write(project, run):
    folder, _ = project
    checked = run("check", write(folder, "everything__get_summ(a: 1, b: 2)\n"))
    assert checked.exit_code == 1 and "E200" in checked.output
    assert "`everything__get_sum`" in checked.output and "get-sum" not in checked.output


def test_sampling_without_a_role_is_refused_and_no_model_is_asked(tmp_path, model, monkeypatch):
    """Attack: a server asks for an inference that planc.toml gave it no model for."""
    require_everything()
    models = f'[models.default]\nbase_url = "{model.url}"\nmodel = "scripted"\n'
    (tmp_path / "planc.toml").write_text(everything_toml(models=models), encoding="utf-8")
    assert invoke("registry", "sync", "--config", tmp_path / "planc.toml").exit_code == 0
    # No `roots`: planc declares no roots capability, so the server offers no tool that needs it.
    assert "get-roots-list" not in json.loads((tmp_path / LOCK_NAME).read_text())["servers"]["everything"]["tools"]
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    asked = len(model.requests)
    checked = invoke(
        "check",
        write(tmp_path, 'everything__trigger_sampling_request(prompt: "hi")\n'),
        "--config",
        tmp_path / "planc.toml",
        "--max-inferences",
        "0",
    )
    assert checked.exit_code == 0, checked.output  # no role: no inference to count
    ran = invoke("run", tmp_path / "p.plan", "--config", tmp_path / "planc.toml")
    assert ran.exit_code == 1 and "Traceback" not in ran.output
    assert "planc.toml names no model role for MCP server `everything`" in ran.output
    assert len(model.requests) == asked and starts(tmp_path) == 2  # the sync's start and the run's
    _, status, calls = last_run(tmp_path)
    assert status == "failed" and [tool for _, tool, _ in calls] == ["everything__trigger_sampling_request"]


def test_two_tools_with_one_name_in_plans_fail_the_sync_naming_both(tmp_path):
    require_everything()
    (tmp_path / "planc.toml").write_text(everything_toml('rename = { "get-sum" = "echo" }\n'), encoding="utf-8")
    synced = invoke("registry", "sync", "--config", tmp_path / "planc.toml")
    assert synced.exit_code == 1 and "Traceback" not in synced.output
    assert "the tools `echo` and `get-sum` of MCP server `everything` would both be `everything__echo`" in synced.output
    assert not (tmp_path / LOCK_NAME).exists() or "everything" not in json.loads((tmp_path / LOCK_NAME).read_text())["servers"]


def test_a_request_planc_cannot_tie_to_one_call_or_over_its_allowance_is_refused():
    """Attack: a server asks while two of its calls are in flight (stdio says not which asked), or asks for
    more inferences than one call may make: refused, and nothing is asked."""
    pytest.importorskip("mcp")
    import asyncio
    import contextvars

    from mcp import types

    from planc.backend.calls.mcp_runtime import InFlight, McpRuntime
    from planc.registry.settings.declarations import McpServer

    asked = []

    class Requests:
        async def sample(self, server, flight, params):
            asked.append(flight)
            return "a reply"

    runtime = McpRuntime.__new__(McpRuntime)
    runtime.requests, runtime.in_flight = Requests(), {}
    server = McpServer("s", ("s",), sampling="chat")
    params = types.CreateMessageRequestParams(messages=[], max_tokens=5)
    one, other = (InFlight(f"call {n}", None, contextvars.copy_context()) for n in (1, 2))

    runtime.in_flight["s"] = [one, other]
    refused = asyncio.run(runtime.sample(server, params))
    assert isinstance(refused, types.ErrorData) and "2 of its calls are being made at once" in refused.message
    runtime.in_flight["s"] = []
    assert "no step of a plan is calling it" in asyncio.run(runtime.sample(server, params)).message
    runtime.in_flight["s"] = [one]
    assert asyncio.run(runtime.sample(server, params)) == "a reply" and asked == [one]
    from planc.backend.models.mcp_requests import ServerRequests

    spent = InFlight("call", None, contextvars.copy_context(), samples=1)  # one inference asked for already
    over = asyncio.run(ServerRequests(run=None).sample(server, spent, params))
    assert "one call may ask for 1 (`samples_per_call` of [mcp.s])" in over.message and spent.samples == 1


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('rename = { "get-sum" = "echo" }\n', "the tools `echo` and `get-sum` of MCP server `everything` would both be"),
        ('sampling = "writer"\n', '`sampling = "writer"` names a role no `[models.writer]` (nor `[models.default]`)'),
        ('rename = { "get-sum" = "get-sum" }\n', "`rename` must be a table from a tool's name on the server to a name"),
    ],
)
def test_a_planc_toml_whose_mcp_table_cannot_be_used_is_exit_2(project, tmp_path, table, said):
    """Renames that clash after the sync, a sampling role no model answers, a name no plan can write: each a
    configuration error before anything runs, starting no server."""
    folder, _ = project
    shutil.copy(folder / LOCK_NAME, tmp_path / LOCK_NAME)
    (tmp_path / "planc.toml").write_text(everything_toml(table), encoding="utf-8")
    plan = write(tmp_path, 'everything__echo(message: "hi")\n')
    checked = invoke("check", plan, "--config", tmp_path / "planc.toml")
    assert checked.exit_code == 2 and said in checked.output and "Traceback" not in checked.output
    assert starts(tmp_path) == 0
