"""`planc run` and `planc.backend.run.interpreter.run_plan` with real Python tools."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from cli import invoke
from tool_project import tool_project

import planc
from planc.backend.calls.hooks import Abort, Hooks, Replace, Skip
from planc.backend.run.interpreter import run_plan
from planc.backend.state.values import RunError
from planc.registry import load_registry

TOOLS = """
import asyncio, json, os
LOG = os.environ["PLANC_TEST_CALLS"]

def _called(name, **args):
    with open(LOG, "a") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")

def search(query, limit=3):
    _called("search", query=query, limit=limit)
    return [{"id": f"I{i}", "title": f"{query} {i}", "severity": i % 4 + 1,
             "status": "open" if i % 2 else "resolved"} for i in range(limit)]

async def get(id):
    _called("get", id=id)
    await asyncio.sleep(0.01 * (5 - int(id[1:]) % 5))  # later items finish first
    return {"id": id, "text": f"details of {id}"}

def notify(channel, text):
    _called("notify", channel=channel, text=text)
    return {"sent": True, "channel": channel, "text": text}

def broken(x):
    _called("broken", x=x)
    return {"unexpected": x}

def fails(x):
    _called("fails", x=x)
    raise ValueError("no such thing")
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, default = 3 }} }}
required = ["query"]
returns = {{ type = "array", items = {{ type = "object", properties = {{ id = {{ type = "string" }}, severity = {{ type = "integer" }}, status = {{ type = "string" }}, title = {{ type = "string" }} }} }} }}
returns_at_most = "limit"
effects = {{ read_only = true }}

[tools.get]
provider = "python:{module}:get"
params = {{ id = {{ type = "string" }} }}
required = ["id"]
returns = {{ type = "object", properties = {{ id = {{ type = "string" }}, text = {{ type = "string" }} }} }}
effects = {{ read_only = true }}

[tools.notify]
provider = "python:{module}:notify"
params = {{ channel = {{ type = "string", pattern = "^#" }}, text = {{ type = "string" }} }}
required = ["channel", "text"]

[tools.broken]
provider = "python:{module}:broken"
params = {{ x = {{ type = "integer" }} }}
returns = {{ type = "object", properties = {{ id = {{ type = "string" }} }}, required = ["id"] }}
effects = {{ read_only = true }}

[tools.fails]
provider = "python:{module}:fails"
params = {{ x = {{ type = "integer" }} }}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "runtools", TOOLS, TOML, {"calls.jsonl": ""}):
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.jsonl"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def calls(project) -> list[dict]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def run(project, text, *args):
    (project / "p.plan").write_text(text, encoding="utf-8")
    return invoke("run", "p.plan", *args)


PIPELINE = """search(query: "disk", limit: $args.n)
  |> filter(where: severity >= 2 and status == "open")
  |> map(concurrency: 3, do: { get(id: item.id) })
decide(when: $3.length > 0, then: { notify(channel: "#ops", text: "found {$3.length}: {$3[0].text}") })
reshape(value: {found: $3, count: $3.length, sent: $4})
"""


def test_a_pipeline_runs_end_to_end(project):
    result = run(project, PIPELINE, "--arg", "n=6", "--events", "events.jsonl")
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)  # progress lines go to stderr
    assert [item["id"] for item in output["found"]] == ["I1", "I3", "I5"]  # map keeps the order
    assert output["count"] == 3 and output["sent"]["text"] == "found 3: details of I1"
    events = [json.loads(line) for line in (project / "events.jsonl").read_text().splitlines()]
    paths = [event["step"] for event in events if event["event"] == "tool_started"]
    assert paths[0] == "1" and {"3/do.1[0]", "3/do.1[1]", "3/do.1[2]"} <= set(paths) and "4/then.1" in paths
    assert [c["tool"] for c in calls(project)].count("get") == 3


def test_a_missing_argument_is_refused_before_any_call(project):
    result = run(project, PIPELINE)
    assert result.exit_code == 1 and "--arg n=" in result.output and calls(project) == []


def test_a_plan_with_errors_is_refused_with_no_call(project):
    result = run(project, 'notify(channel: "#x", text: 5)\nsearch(query: "a")')
    assert result.exit_code == 1 and "E300" in result.output and calls(project) == []


def test_exit_with_status_error_is_exit_code_4_and_its_output(project):
    text = 'search(query: "x", limit: 1)\n  |> exit(when: $1.length < 5, status: "error", message: "too few", output: {n: $1.length})\nnotify(channel: "#x", text: "never")'
    result = run(project, text)
    assert result.exit_code == 4 and json.loads(result.stdout) == {"n": 1}
    assert [c["tool"] for c in calls(project)] == ["search"]


def test_missing_data_names_the_step_path_and_what_exists(project):
    result = run(project, 'search(query: "x", limit: 1)\nnotify(channel: "#x", text: "{$1[3].id}")')
    assert result.exit_code == 1 and "index 3 of a list of 1" in result.output


def test_a_result_that_breaks_its_declaration_fails_the_step(project):
    result = run(project, "broken(x: 1)")
    assert result.exit_code == 1 and "step 1" in result.output and "declaration" in result.output


def test_arguments_are_validated_at_run_time(project):
    result = run(project, 'search(query: "x", limit: 1)\nnotify(channel: $1[0].title, text: "hi")')
    assert result.exit_code == 1 and "`channel`" in result.output
    assert [c["tool"] for c in calls(project)] == ["search"]


def check(project, text):
    registry = load_registry(project / "planc.toml")
    return planc.check(text, registry=registry), registry


def test_the_gate_can_skip_and_abort(project):
    checked, registry = check(project, 'notify(channel: "#a", text: "one")\nnotify(channel: "#b", text: "two")')

    async def gate(call):
        return Skip({"sent": False}) if call.args["channel"] == "#a" else Abort("not today")

    with pytest.raises(RunError, match="not today"):
        asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(gate=gate)))
    assert calls(project) == []


def test_on_tool_error_can_replace_the_result(project):
    checked, registry = check(project, "fails(x: 1)")

    async def replace(call, error):
        return Replace({"recovered": str(error)})

    result = asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(on_tool_error=replace)))
    assert result.value == {"recovered": "no such thing"}
    with pytest.raises(RunError, match="no such thing"):
        asyncio.run(run_plan(checked, registry=registry))


def test_ask_uses_the_interlocutor_or_the_default(project):
    text = 'team = ask(question: "Which team?", when_unanswered: "default", default: "ENG")\nreshape(value: $team)'
    checked, registry = check(project, text)

    async def answer(question):
        return "OPS"

    assert asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(interlocutor=answer))).value == "OPS"
    assert asyncio.run(run_plan(checked, registry=registry)).value == "ENG"


def test_the_policy_is_asked_again_with_the_real_values(project):
    from pathlib import Path

    from planc.passes.policy.load import policy_from_text

    policy = policy_from_text(
        """
        @id("allow") permit(principal, action, resource);
        @id("ops-only") forbid(principal, action, resource == Tool::"notify")
          when { context.args has channel && context.args.channel != "#ops" };
    """,
        Path("p.cedar"),
    )
    checked, registry = check(project, 'search(query: "x", limit: 1)\nnotify(channel: "#{$1[0].status}", text: "hi")')
    assert checked.ok  # the channel is only known at run time
    with pytest.raises(RunError, match="ops-only"):
        asyncio.run(run_plan(checked, registry=registry, policy=policy))
    assert [c["tool"] for c in calls(project)] == ["search"]


from model_server import model_server  # noqa: E402,F401  (the loopback model server fixture)

SCHEMA = (
    '{type: "object", properties: {severity: {type: "string"}, summary: {type: "string"}}, required: ["severity", "summary"]}'
)


def with_models(project, server):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + f'\n[models.default]\nbase_url = "{server.url}"\nmodel = "planc-test-model"\n')
    return load_registry(toml)


def test_an_agent_calls_its_tools_through_the_same_dispatch(project, model_server):
    registry = with_models(project, model_server)
    model_server.play("tool_call_search", "answer_triage")
    checked = planc.check(
        f'agent(prompt: "Triage the disk alerts", output_schema: {SCHEMA}, tools: ["search"])', registry=registry
    )
    assert checked.ok, checked.diagnostics
    events = []
    result = asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(events=events.append)))
    assert result.value == {
        "output": {"severity": "high", "summary": "Disk full on db-1"},
        "iterations": 2,
        "tools_called": [{"tool": "search", "round": 1}],
        "final": True,
    }
    assert calls(project) == [{"tool": "search", "query": "disk full", "limit": 3}]
    assert [e["step"] for e in events if e["event"] == "tool_started"] == ["1/agent.1/search"]
    offered = [tool["function"]["name"] for tool in model_server.bodies()[0]["tools"]]
    assert offered == ["search"]


def test_filter_infer_asks_the_judge_per_item(project, model_server):
    registry = with_models(project, model_server)
    model_server.play("answer_yes", "answer_no", "answer_yes")
    checked = planc.check('search(query: "disk", limit: 3) |> filter(infer: "Is {item.title} urgent?")', registry=registry)
    result = asyncio.run(run_plan(checked, registry=registry))
    assert [item["id"] for item in result.value] == ["I0", "I2"]
    questions = [body["messages"][-1]["content"] for body in model_server.bodies()]
    assert [q for q in questions if "disk 1" in q] and all("{item" not in q for q in questions)


def test_filter_infer_may_read_its_question_from_a_reference(project, model_server):
    """`infer: $args.question` checks (a string), so it runs: the question is the value it reads, asked
    once per item, not a traceback (run time rendered only a written text)."""
    registry = with_models(project, model_server)
    model_server.play("answer_yes", "answer_no")
    checked = planc.check('filter(over: ["disk", "memory"], infer: $args.question)', registry=registry)
    assert checked.ok, checked.diagnostics
    result = asyncio.run(run_plan(checked, registry=registry, arguments={"question": "Is it urgent?"}))
    assert result.value == ["disk"]
    questions = [body["messages"][-1]["content"] for body in model_server.bodies()]
    assert len(questions) == 2 and all("Is it urgent?" in question for question in questions)


def test_a_model_role_nobody_declares_fails_the_step(project):
    checked, registry = check(project, 'decide(infer: "Is it Monday?", then: { notify(channel: "#x", text: "y") })')
    with pytest.raises(RunError, match="judge"):
        asyncio.run(run_plan(checked, registry=registry))


SLOW_TOOLS = """
import asyncio, os, sqlite3, time


async def nap(s):
    if s:
        await asyncio.sleep(300)  # a hang guard: only the step's timeout (a timer of the same loop) ends it sooner
    return s


def snooze(s):
    if s:  # in a thread, which planc stops waiting for: it returns once planc has recorded the timeout
        store = os.environ["PLANC_TEST_SLOW_STORE"]
        for _ in range(60_000):  # a hang guard, not a delay
            with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
                if db.execute("SELECT 1 FROM calls WHERE tool = 'snooze' AND error IS NOT NULL").fetchone():
                    break
            time.sleep(0.005)
    return s
"""


def test_a_tool_that_takes_longer_than_its_timeout_fails_the_step(project, monkeypatch):
    (project / "slowtools.py").write_text(SLOW_TOOLS)
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text() + '\n[tools.nap]\nprovider = "python:slowtools:nap"\n'
        'params = { s = { type = "number" } }\ntimeout_s = 0.05\n'
        '\n[tools.snooze]\nprovider = "python:slowtools:snooze"\n'
        'params = { s = { type = "number" } }\ntimeout_s = 0.05\n'
        '\n[tools.patient_nap]\nprovider = "python:slowtools:nap"\n'
        'params = { s = { type = "number" } }\ntimeout_s = 300\n'
    )
    store = project / "slow.sqlite"
    monkeypatch.setenv("PLANC_TEST_SLOW_STORE", str(store))
    try:
        fast = run(project, "patient_nap(s: 0)")  # done well within its timeout_s
        assert fast.exit_code == 0 and json.loads(fast.stdout) == 0
        for tool in ("nap", "snooze"):  # never done before their timeout_s, however long that is
            slow = run(project, f"{tool}(s: 1)", "--store", str(store))
            assert slow.exit_code == 1 and "0.05 s" in slow.output and "step 1" in slow.output
    finally:
        sys.modules.pop("slowtools", None)


def test_a_declared_plan_runs_as_a_tool_with_its_defaults(project):
    (project / "plans").mkdir()
    (project / "plans" / "top.plan").write_text(
        'search(query: "disk", limit: $args.limit)\n  |> filter(where: status == "open")\n', encoding="utf-8"
    )
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text() + '\n[plans.top]\nfile = "plans/top.plan"\nparams = { limit = { type = "integer", default = 4 } }\n'
    )
    result = run(project, "plan__top()\nplan__top(limit: 2) |> map(do: { get(id: item.id) })", "--events", "e.jsonl")
    assert result.exit_code == 0, result.output
    assert [item["id"] for item in json.loads(result.stdout)] == ["I1"]
    assert [c["limit"] for c in calls(project) if c["tool"] == "search"] == [4, 2]
    events = [json.loads(line) for line in (project / "e.jsonl").read_text().splitlines()]
    assert {"1/1", "1/2", "2/1"} <= {e["step"] for e in events if e["event"] == "step_started"}
    checked, registry = check(project, "plan__top(limit: 2)")
    assert checked.cost.total.calls.high == 1  # the plan's own calls: one search
