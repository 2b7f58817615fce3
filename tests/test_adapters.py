"""A checked plan as one tool of LangGraph and of the OpenAI Agents SDK, run by those libraries' own code.

LangGraph: a graph whose model node is langchain-core's scripted chat model and whose tool node is
LangGraph's `ToolNode`. The OpenAI Agents SDK: an `Agent` whose model is the SDK's chat-completions model
talking to a real HTTP server on loopback that plays scripted replies. The plan's tool is a spy that appends
each call to `spy.log`; each test asserts the calls made, what the framework's model got back, the run's
recorded status and that nothing raised out of the framework.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from model_server import model_server  # noqa: F401  (the fixture)
from test_attacks import calls, statuses  # the spy's lines, and the recorded runs' statuses
from tool_project import spied_project

import planc
from planc.adapters.plan_tool import plan_tool

TOOLS = """
import os

SPY = os.environ["PLANC_TEST_SPY"]


def refund(order):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(f"refund {order}\\n")
    return {"refunded": order}


async def arefund(order):
    import asyncio

    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(f"arefund {order} in loop {id(asyncio.get_running_loop())}\\n")
    return {"refunded": order}
"""

TOML = """
policy = "policy.cedar"

[tools.refund]
provider = "python:{module}:refund"
params = {{ order = {{ type = "string" }} }}
required = ["order"]
returns = {{ type = "object" }}

[tools.arefund]
provider = "python:{module}:arefund"
params = {{ order = {{ type = "string" }} }}
required = ["order"]
returns = {{ type = "object" }}
"""

POLICY = """
permit(principal, action, resource);

@id("no-vip-refunds")
forbid(principal, action, resource == Tool::"refund")
when { context.args has order && context.args.order like "vip-*" };
"""

PLAN = "refund(order: $args.order)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    with spied_project(tmp_path, monkeypatch, "adaptertools", TOOLS, TOML, {"policy.cedar": POLICY}) as folder:
        yield folder


def test_the_tool_takes_the_plans_run_arguments_as_parameters(project):
    tool = plan_tool(PLAN, name="refund_order", project=project)
    assert tool.parameters() == {
        "type": "object",
        "properties": {"order": {"type": "string"}},
        "required": ["order"],
        "additionalProperties": False,
    }


def test_a_plan_that_does_not_check_is_no_tool(project):
    with pytest.raises(ValueError, match="E400 calling `refund` is forbidden by policy `no-vip-refunds`"):
        plan_tool('refund(order: "vip-9")\n', name="refund_vip", project=project)
    assert calls(project) == []


def test_call_async_runs_the_plan_in_the_callers_own_event_loop(project):
    """An async framework awaits the tool: the plan's async tools run in its loop, not in a thread of their own."""
    tool = plan_tool(
        "arefund(order: $args.order)\n", name="refund_order", project=planc.load_project(project, store=project / "runs.sqlite")
    )

    async def framework():
        return await tool.call_async({"order": "a-1"}), id(asyncio.get_running_loop())

    answer, loop = asyncio.run(framework())
    assert answer == {"status": "ok", "output": {"refunded": "a-1"}}
    assert calls(project) == [f"arefund a-1 in loop {loop}"]
    assert statuses(project) == ["ok"]


def refund_tool(project):
    """The plan as the tool `refund_order`, its runs recorded in the project's `runs.sqlite`."""
    return plan_tool(PLAN, name="refund_order", project=planc.load_project(project, store=project / "runs.sqlite"))


# --- LangGraph ------------------------------------------------------------------------------------------


def langgraph_run(project, arguments: dict):
    """A graph: the scripted model asks for the plan's tool with `arguments`; LangGraph's ToolNode calls it."""
    pytest.importorskip("langgraph", reason="LangGraph is not installed: pip install 'planc[langgraph]'")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from planc.adapters.langgraph_tool import langgraph_tool

    tool = langgraph_tool(refund_tool(project))
    model = GenericFakeChatModel(
        messages=iter(
            [AIMessage(content="", tool_calls=[{"name": "refund_order", "args": arguments, "id": "call_1", "type": "tool_call"}])]
        )
    )
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([tool], handle_tool_errors=False))
    graph.add_edge(START, "model")
    graph.add_edge("model", "tools")
    graph.add_edge("tools", END)
    final = graph.compile().invoke({"messages": [HumanMessage("refund order o-1")]})
    return json.loads(final["messages"][-1].content)


def test_langgraph_runs_the_plan_as_a_tool(project):
    assert langgraph_run(project, {"order": "o-1"}) == {"status": "ok", "output": {"refunded": "o-1"}}
    assert calls(project) == ["refund o-1"] and statuses(project) == ["ok"]


def test_langgraph_a_refused_call_goes_back_to_the_model_and_the_tool_is_never_called(project):
    answer = langgraph_run(project, {"order": "vip-2"})
    assert "calling `refund` is forbidden by policy `no-vip-refunds`" in answer["error"]
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_langgraph_arguments_of_the_wrong_type_never_reach_the_tool(project):
    answer = langgraph_run(project, {"order": 5})  # refused before the run: nothing is recorded
    assert (
        "the arguments do not fit the plan: E300 1:15 wrong value for `order` of `refund`: expected a string, "
        "found `$args.order`, an integer" in answer["error"]
    )
    assert calls(project) == [] and statuses(project) == []


# --- the OpenAI Agents SDK ------------------------------------------------------------------------------


def agents_run(project, model_server, arguments: dict) -> tuple[str, dict]:
    """An Agent with the plan as its one tool: the scripted model asks for it, then answers `done`. What the
    run ended with, and what the tool's result sent back to the model said."""
    pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed: pip install 'planc[openai-agents]'")
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from planc.adapters.openai_agents_tool import openai_agents_tool

    set_tracing_disabled(True)  # nothing is sent to OpenAI's trace exporter: the network is loopback only
    tool = openai_agents_tool(refund_tool(project))
    model_server.call("refund_order", arguments)
    model_server.reply("done")
    client = AsyncOpenAI(base_url=model_server.url, api_key="test", max_retries=0)
    agent = Agent(
        name="support",
        instructions="Refund what you are asked to.",
        tools=[tool],
        model=OpenAIChatCompletionsModel(model="m", openai_client=client),
    )
    result = Runner.run_sync(agent, "refund order o-1")
    assert len(model_server.requests) == 2
    [sent] = [m for m in model_server.bodies()[-1]["messages"] if m["role"] == "tool"]
    return result.final_output, json.loads(sent["content"])


def test_the_openai_agents_sdk_runs_the_plan_as_a_tool(project, model_server):
    final, sent = agents_run(project, model_server, {"order": "o-1"})
    assert final == "done" and sent == {"status": "ok", "output": {"refunded": "o-1"}}
    assert calls(project) == ["refund o-1"] and statuses(project) == ["ok"]


def test_the_openai_agents_sdk_a_refused_call_goes_back_to_the_model(project, model_server):
    final, sent = agents_run(project, model_server, {"order": "vip-2"})
    assert final == "done" and "calling `refund` is forbidden by policy `no-vip-refunds`" in sent["error"]
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_the_openai_agents_sdk_a_missing_argument_never_reaches_the_tool(project, model_server):
    final, sent = agents_run(project, model_server, {})
    assert final == "done" and "order" in sent["error"]
    assert calls(project) == [] and statuses(project) == []
