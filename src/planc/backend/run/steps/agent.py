"""`agent` at run time: a conversation with a model, each tool it calls dispatched like any call.

Its declaration (signature, type, cost and flow rules) is `registry/steps/agent.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.calls.hooks import Call
from planc.backend.run.control_steps import piped_labels, quoting, step_sources, value
from planc.backend.state.values import (
    Labelled,
    RunError,
    Scope,
    TemplateScope,
    ToolFailed,
    failure_caught,
    unlabelled,
)
from planc.registry.provenance.labels import NO_LABELS, LabelView, union, union_all
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.syntax import ast
from planc.syntax.steps import agent_call_path

if TYPE_CHECKING:
    from planc.backend.models.agent_loop import Conversation
    from planc.backend.run.interpreter import Run
    from planc.registry.tools.tool import Tool


async def run_agent(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    from planc.backend.models.agent_loop import CheckFailed, ToolFailure, Turn, check_problems
    from planc.backend.models.agent_loop import run_agent as agent_loop
    from planc.backend.models.client import ModelError

    registry = run.registry
    conversation = _conversation(run, step, path, scope)
    scope.conversations[step] = conversation
    calls = checks = 0
    # What the model has been shown, as labels: its conversation, this step's arguments, the results of the
    # tools it calls. Every argument it writes carries all of it, and so does its answer.
    control = scope.controlled()
    given = union_all(step_sources(step, CONTROL_STEPS["agent"], scope, piped_labels(piped)).values())
    conversation.labels = union(conversation.labels, union(given, control))

    async def dispatched(call: Call) -> Any:
        caught = failure_caught.set(True)  # its failure comes back here, and the model goes on
        try:
            result = await run.dispatch(call, step, in_loop)
        finally:
            failure_caught.reset(caught)
        value_, added = unlabelled(result)
        read = union(union(call.tool.labels, control), added.whole() if added is not None else NO_LABELS)
        conversation.labels = union(conversation.labels, read)
        return value_

    def labelled(arguments: dict) -> dict:
        return {argument: conversation.labels for argument in arguments}

    async def call_tool(name: str, arguments: dict, call_id: str) -> Any:
        nonlocal calls
        calls += 1
        assert registry is not None  # the model was offered this tool: a registry's
        call = Call(
            agent_call_path(path, calls, name),
            registry.tools[name],
            arguments,
            scope=TemplateScope(scope, run.names),
            id=call_id,
            sources=labelled(arguments),
            control=control,
        )
        try:
            return await dispatched(call)
        except ToolFailed as error:  # goes back to the model, which may try again, and has read it
            conversation.labels = union(conversation.labels, error.labels)
            raise ToolFailure(str(error)) from None

    async def check(answer: dict) -> list[str]:
        nonlocal checks
        checks += 1
        assert registry is not None  # the check names a tool: a registry's
        tool = registry.tools[name]  # the check takes the answer's fields it declares
        arguments = {key: answer[key] for key in tool.params if key in answer}
        call = Call(f"{path}/check.{checks}/{name}", tool, arguments, sources=labelled(arguments), control=control)
        try:
            return check_problems(await dispatched(call))
        except ToolFailed as error:  # a check that raises fails: the model is told why
            conversation.labels = union(conversation.labels, error.labels)
            return [str(error)]

    name = value(step, "check", scope)
    turn = Turn(
        prompt=value(step, "prompt", scope),
        output_schema=value(step, "output_schema", scope),
        tools=_turn_tools(run, step, path, scope, conversation),
        context=value(step, "context", scope, piped),
        max_iterations=value(step, "max_iterations", scope),
        check=check if name is not None else None,
        check_name=name or "",
        repairs=value(step, "repairs", scope),
    )
    chat, repair = (
        run.session.model(conversation.role, step, path),
        run.session.model("repair", step, path, instead=conversation.role),
    )
    chat.shown = repair.shown = lambda: conversation.labels
    try:
        answered = await agent_loop(chat, turn, call_tool, conversation.messages, repair)
        return Labelled(answered, LabelView(conversation.labels))
    except (ModelError, CheckFailed) as error:
        raise RunError(f"step {path}: {quoting(error, conversation.labels)}", step.tool) from None


def _conversation(run: Run, step: ast.Step, path: str, scope: Scope) -> Conversation:
    """The conversation `step` continues (`continue: $review`), or a new one."""
    from planc.backend.models.agent_loop import Conversation, system_message
    from planc.registry.steps.agent import continued

    if step.arg("continue") is None:
        patterns = value(step, "tools", scope)  # none written: every tool; `[]`: none
        return Conversation(
            value(step, "model", scope),
            _offered(run, ["*"] if patterns is None else patterns),
            [system_message(value(step, "system_prompt", scope))],
        )
    earlier = continued(step, scope.targets)
    if earlier is None or earlier not in scope.conversations:  # the check refuses this: a plan that was not checked
        raise RunError(f"step {path}: `continue` refers to no agent step that has run", step.tool)
    return scope.conversations[earlier]


def _turn_tools(run: Run, step: ast.Step, path: str, scope: Scope, conversation: Conversation) -> list[Tool]:
    """The tools this turn offers: the conversation's, or those of them `tools` names."""
    patterns = value(step, "tools", scope)
    if step.arg("continue") is None or patterns is None:
        return conversation.tools
    tools = _offered(run, patterns)
    widened = [tool.name for tool in tools if tool not in conversation.tools]
    if widened:
        raise RunError(
            f"step {path}: `tools` offers `{widened[0]}`, which the conversation it continues does not offer", step.tool
        )
    return tools


def _offered(run: Run, patterns: list[str]) -> list[Tool]:
    """The registry's tools that `patterns` match and that can run (a declared plan leading back to itself cannot)."""
    from planc.analysis.agent_tools import matching_tools, runnable

    if run.registry is None:  # no tool to offer: the step fails when it asks for a model
        return []
    plans = run.checked.context.plans if run.checked.context is not None else None
    return [tool for tool in matching_tools(run.registry, patterns) if runnable(tool, plans)]
