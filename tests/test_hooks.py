"""The hooks as a program embedding planc sees them: what the gate is given (the rendered call, its step
path, the template scope, the declared plans it is in), what an abort gives back (the partial state, and
the tool's error), what the events say (a tool's error and `on_tool_error`'s replacement apart, the
rendered input of each step, the stack of declared plans). The tools are the recording ones of
test_run.py: every call they get is in calls.jsonl."""

from __future__ import annotations

import asyncio
import json

import pytest
from cli import invoke
from model_server import model_server  # noqa: F401  (the loopback model server fixture)
from test_run import SCHEMA, calls, check, project, with_models  # noqa: F401  (the recording tools' project)

from planc.backend.calls.hooks import Abort, Hooks, PlanCall, Proceed, Replace
from planc.backend.run.interpreter import run_plan
from planc.backend.state.values import Aborted

PLANS = """
[plans.inner]
file = "inner.plan"
params = {{ channel = {{ type = "string" }} }}

[plans.outer]
file = "outer.plan"
"""


@pytest.fixture
def plans(project):
    """The project with two declared plans: `inner` searches and notifies, `outer` calls `inner`."""
    (project / "inner.plan").write_text('search(query: "x", limit: 1)\nnotify(channel: $args.channel, text: "{$1[0].title}")\n')
    (project / "outer.plan").write_text('plan__inner(channel: "#outer")\n')
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + PLANS.format())
    return project


PLAN = """hits = search(query: "disk", limit: 2)
map(over: $hits, do: { notify(channel: "#ops", text: "{item.title} ({index})") })
plan__inner(channel: "#inner")
"""


def run(checked, registry, **hooks):
    return asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(**hooks)))


def test_the_gate_sees_the_rendered_call_its_step_path_its_template_scope_and_its_plans(plans):
    checked, registry = check(plans, PLAN)
    seen = []

    async def gate(call):
        seen.append((call.step, call.tool.name, dict(call.args), dict(call.scope), call.stack))
        return Proceed()

    run(checked, registry, gate=gate)
    found = calls(plans)
    hits = [
        {"id": "I0", "title": "disk 0", "severity": 1, "status": "resolved"},
        {"id": "I1", "title": "disk 1", "severity": 2, "status": "open"},
    ]
    inner_hit = [{"id": "I0", "title": "x 0", "severity": 1, "status": "resolved"}]
    assert seen == [
        ("1", "search", {"query": "disk", "limit": 2}, {"$args": {}}, ()),
        (
            "2/do.1[0]",
            "notify",
            {"channel": "#ops", "text": "disk 0 (0)"},
            {"$1": hits, "$hits": hits, "$args": {}, "item": hits[0], "index": 0},
            (),
        ),
        (
            "2/do.1[1]",
            "notify",
            {"channel": "#ops", "text": "disk 1 (1)"},
            {"$1": hits, "$hits": hits, "$args": {}, "item": hits[1], "index": 1},
            (),
        ),
        (
            "3",
            "plan__inner",
            {"channel": "#inner"},
            {
                "$1": hits,
                "$hits": hits,
                "$2": [{"sent": True, "channel": "#ops", "text": f"disk {i} ({i})"} for i in range(2)],
                "$args": {},
            },
            (),
        ),
        ("3/1", "search", {"query": "x", "limit": 1}, {"$args": {"channel": "#inner"}}, (PlanCall("inner", "3"),)),
        (
            "3/2",
            "notify",
            {"channel": "#inner", "text": "x 0"},
            {"$1": inner_hit, "$args": {"channel": "#inner"}},
            (PlanCall("inner", "3"),),
        ),
    ]
    assert [call["tool"] for call in found] == ["search", "notify", "notify", "search", "notify"]


def test_an_abort_at_the_gate_gives_back_the_partial_state(project):
    checked, registry = check(project, PLAN.split("plan__")[0])

    async def gate(call):
        return Abort("not that one") if call.step == "2/do.1[1]" else Proceed()

    with pytest.raises(Aborted) as aborted:
        run(checked, registry, gate=gate)
    assert str(aborted.value) == "step 2/do.1[1]: stopped before calling `notify`: not that one"
    assert aborted.value.error is None
    assert aborted.value.results == {
        "1": [
            {"id": "I0", "title": "disk 0", "severity": 1, "status": "resolved"},
            {"id": "I1", "title": "disk 1", "severity": 2, "status": "open"},
        ],
        "2/do.1[0]": {"sent": True, "channel": "#ops", "text": "disk 0 (0)"},
    }  # not step 2: it did not finish
    assert [call["tool"] for call in calls(project)] == ["search", "notify"]


def test_an_abort_inside_a_declared_plan_stops_the_run_and_is_asked_about_once(plans):
    checked, registry = check(plans, 'plan__outer()\nnotify(channel: "#after", text: "never")\n')
    asked, errors = [], []

    async def gate(call):
        asked.append(call.step)
        return Abort("not in there") if call.tool.name == "notify" else Proceed()

    async def on_tool_error(call, error):
        errors.append(call.step)
        return Replace("never used")

    with pytest.raises(Aborted) as aborted:
        run(checked, registry, gate=gate, on_tool_error=on_tool_error)
    assert str(aborted.value) == "step 1/1/2: stopped before calling `notify`: not in there"
    assert asked == ["1", "1/1", "1/1/1", "1/1/2"] and errors == []  # neither plan's call asked again
    assert list(aborted.value.results) == ["1/1/1"]
    assert [call["tool"] for call in calls(plans)] == ["search"]


def test_an_abort_inside_an_agents_tool_call_ends_the_run_and_never_goes_back_to_the_model(project, model_server):
    registry = with_models(project, model_server)
    model_server.play("tool_call_search", "answer_triage")
    checked = check(project, f'agent(prompt: "Triage", output_schema: {SCHEMA}, tools: ["search"])')[0]

    async def gate(call):
        return Abort(f"{call.tool.name} is not for agents")

    with pytest.raises(Aborted, match="step 1/agent.1/search: stopped before calling `search`"):
        asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(gate=gate)))
    assert len(model_server.requests) == 1 and calls(project) == []


def test_on_tool_error_aborting_gives_back_the_tools_own_error(project):
    checked, registry = check(project, 'search(query: "x", limit: 1)\nfails(x: 1)\nnotify(channel: "#x", text: "y")')

    async def on_tool_error(call, error):
        return Abort("giving up")

    with pytest.raises(Aborted) as aborted:
        run(checked, registry, on_tool_error=on_tool_error)
    assert str(aborted.value) == "step 2: `fails` failed, and the run stops: giving up"
    assert isinstance(aborted.value.error, ValueError) and str(aborted.value.error) == "no such thing"
    assert list(aborted.value.results) == ["1"]
    assert [call["tool"] for call in calls(project)] == ["search", "fails"]


def test_tool_finished_reports_the_tools_error_and_the_replacement_apart(project):
    checked, registry = check(project, "fails(x: 1)\nreshape(value: {got: $1})")
    events = []

    async def replace(call, error):
        return Replace({"recovered": True})

    result = run(checked, registry, on_tool_error=replace, events=events.append)
    assert result.value == {"got": {"recovered": True}}
    finished = [event for event in events if event["event"] in ("tool_finished", "step_finished")]
    assert finished[:2] == [
        {
            "event": "tool_finished",
            "step": "1",
            "tool": "fails",
            "error": "step 1: `fails` failed: ValueError: no such thing",
            "replacement": {"recovered": True},
            "stack": [],
        },  # the real call: it failed
        {"event": "step_finished", "step": "1", "tool": "fails", "result": {"recovered": True}, "stack": []},
    ]  # what the run used
    assert [call["tool"] for call in calls(project)] == ["fails"]


def test_a_failed_call_is_reported_failed_with_its_error(project):
    (project / "p.plan").write_text('fails(x: 1)\nnotify(channel: "#x", text: "never")\n')
    result = invoke("run", "p.plan", "--events", "e.jsonl")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == "error: step 1: `fails` failed: ValueError: no such thing"
    events = [json.loads(line) for line in (project / "e.jsonl").read_text().splitlines()]
    ended = [
        {key: event[key] for key in ("event", "step", "tool", "error", "error_type", "stack") if key in event}
        for event in events
        if event["event"] in ("tool_finished", "tool_failed")
    ]
    assert ended == [
        {
            "event": "tool_failed",
            "step": "1",
            "tool": "fails",
            "error": "step 1: `fails` failed: ValueError: no such thing",
            "error_type": "ToolFailed",
            "stack": [],
        }
    ]
    assert "[1] fails -> failed" in result.stderr.splitlines()
    assert [call["tool"] for call in calls(project)] == ["fails"]


def test_step_started_carries_each_steps_rendered_input(project):
    (project / "p.plan").write_text("""search(query: "disk {$args.n}", limit: $args.n)
  |> filter(where: severity > 1)
exit(when: $2.length > 5, output: {first: $2[9].id}, message: "many: {$2[9].id}")
reshape(value: {n: $2.length, first: $2[0].id})
""")
    result = invoke("run", "p.plan", "--arg", "n=2", "--events", "e.jsonl")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in (project / "e.jsonl").read_text().splitlines()]
    started = {event["step"]: event.get("input") for event in events if event["event"] == "step_started"}
    hit = {"id": "I1", "title": "disk 2 1", "severity": 2, "status": "open"}
    assert started == {
        "1": {"query": "disk 2", "limit": 2},  # a tool's arguments, as its call gets them
        "2": {"over": [{"id": "I0", "title": "disk 2 0", "severity": 1, "status": "resolved"}, hit]},  # piped in
        "3": {},  # `when` is a condition; `output` and `message` are read only when it exits, and cannot be here
        "4": {"value": {"n": 1, "first": "I1"}},
    }
    assert json.loads(result.stdout) == {"n": 1, "first": "I1"}


def test_events_carry_the_stack_of_declared_plans(plans):
    (plans / "p.plan").write_text('plan__outer()\nplan__inner(channel: "#top")\n')
    result = invoke("run", "p.plan", "--events", "e.jsonl")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in (plans / "e.jsonl").read_text().splitlines()]
    stacks = {(event["event"], event["step"]): event["stack"] for event in events if "step" in event}
    outer, inner = {"plan": "outer", "step": "1"}, {"plan": "inner", "step": "1/1"}
    assert stacks[("step_started", "1")] == [] and stacks[("tool_started", "1")] == []
    assert stacks[("tool_started", "1/1")] == [outer]  # outer's call of inner
    assert stacks[("tool_started", "1/1/2")] == stacks[("step_finished", "1/1/1")] == [outer, inner]
    assert stacks[("tool_finished", "2/2")] == [{"plan": "inner", "step": "2"}]
    assert all("stack" not in event for event in events if event["event"] in ("run_started", "run_finished"))
    assert [call["channel"] for call in calls(plans) if call["tool"] == "notify"] == ["#outer", "#top"]
