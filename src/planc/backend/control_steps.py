"""The built-in steps at run time: one handler each, in `CONTROL_HANDLERS` (one for every pure step).

A handler is `handler(run, step, path, scope, piped, in_loop)` and returns the
step's result. A control step is never dispatched as a tool call and never
gated; what it runs (its blocks' steps, an agent's tools) takes the dispatch
like any other call. An argument left out takes the default its declaration
in `planc.registry.builtins` gives.
"""

from __future__ import annotations

import asyncio
import math

import attrs

from planc.backend import plan_stack
from planc.backend.dispatch import recorded_call
from planc.backend.hooks import Call, Unanswered
from planc.backend.questions import answer
from planc.backend.results import NotPlain, plain
from planc.backend.stop import current as current_stop
from planc.backend.stop import settle
from planc.backend.values import (
    NOTHING,
    Exited,
    RunError,
    Scope,
    TemplateScope,
    ToolFailed,
    evaluate,
    render,
    truth,
)
from planc.registry.builtins import CONTROL_STEPS
from planc.registry.declarations import Limits
from planc.registry.pure_steps import PURE_STEPS, PureStepError
from planc.syntax import ast
from planc.syntax.steps import step_blocks


def value(step: ast.Step, name: str, scope: Scope, piped=NOTHING):
    """The value of `step`'s argument `name`: as written, else piped in (for its pipe parameter), else
    its declared default (None when it has none)."""
    arg = step.arg(name)
    if arg is not None:
        return evaluate(arg.value, scope)
    declared = CONTROL_STEPS[step.tool.text]
    if name == declared.pipe and piped is not NOTHING:
        return piped
    return declared.params.get(name, {}).get("default")


def rendered_input(step: ast.Step, scope: Scope, piped) -> dict:
    """What `step_started` shows of a control step's input: each argument that is one value for the whole
    step (not a block, a condition, or a template rendered per item) and its piped input. An argument
    the step reads only in some cases (`exit`'s `output` when it exits) may not render here: it is left
    out, and the step fails on it only if it reads it."""
    declared = CONTROL_STEPS[step.tool.text]
    shown = {}
    for arg in step.args:
        name = arg.name.text
        if declared.kind(name) != "value" or declared.binds.get(name):
            continue
        try:
            shown[name] = evaluate(arg.value, scope)
        except RunError:
            continue
    if piped is not NOTHING and declared.pipe is not None and declared.pipe not in shown:
        shown[declared.pipe] = piped
    return shown


async def block(run, step: ast.Step, name: str, path: str, scope: Scope, in_loop: bool, item: int | None = None):
    """Run the block of `step`'s argument `name`, its results visible only inside it."""
    block_node, label = next((found, label) for found, label in step_blocks(step) if label == name)
    inner = attrs.evolve(scope, results=scope.results.new_child(), conversations=scope.conversations.new_child())
    suffix = "" if item is None else f"[{item}]"
    return await run.pipelines(block_node.pipelines, inner, f"{path}/{label}.", suffix, in_loop)


def items(step: ast.Step, path: str, scope: Scope, piped) -> list:
    over = value(step, "over", scope, piped)
    if not isinstance(over, list):
        raise RunError(f"step {path}: `{step.tool.text}` needs a list to go over", step.tool)
    return over


async def each_item(run, step: ast.Step, path: str, scope: Scope, over: list, concurrency: int = 1) -> list:
    """The `do` block's result for every item, at most `concurrency` items at once, in order."""
    limit = asyncio.Semaphore(concurrency)

    async def one(index, item):
        async with limit:
            return await block(run, step, "do", path, scope.bind(item=item, index=index), True, item=index)

    tasks = [asyncio.ensure_future(one(index, item)) for index, item in enumerate(over)]
    await settle(tasks)  # after a failure or an exit no item starts, and the items running finish their calls
    return [task.result() for task in tasks]


async def judge(run, question: str, step: ast.Step, path: str) -> bool:
    """An `infer` question put to the `judge` role: yes or no."""
    from planc.backend.agent_loop import ask_yes_no
    from planc.backend.models import ModelError

    current_stop().check(path, step.tool)
    run.emit("inference_started", step=path, question=question)
    try:
        answer = await ask_yes_no(run.session.model("judge", step, path), question)
    except ModelError as error:
        raise RunError(f"step {path}: {error}", step.tool) from None
    run.emit("inference_finished", step=path, answer=answer)
    return answer


async def condition(run, step: ast.Step, path: str, scope: Scope) -> bool:
    """A `decide`'s or `exit`'s `when` condition, or its `infer` question put to the judge."""
    if step.arg("when") is not None:
        when = step.arg("when").value
        return truth(evaluate(when, scope), when)
    return await judge(run, evaluate(step.arg("infer").value, scope), step, path)


# --- the handlers


async def run_map(run, step, path, scope, piped, in_loop):
    over = items(step, path, scope, piped)
    return await each_item(run, step, path, scope, over, value(step, "concurrency", scope))


async def run_filter(run, step, path, scope, piped, in_loop):
    over = items(step, path, scope, piped)
    if step.arg("where") is not None:
        where = step.arg("where").value
        return [item for item in over
                if truth(evaluate(where, attrs.evolve(scope.bind(item=item), fields=item)), where)]
    if step.arg("do") is not None:
        kept = await each_item(run, step, path, scope, over)
        return [item for item, keep in zip(over, kept) if truth(keep, step.arg("do").value)]
    question = step.arg("infer").value
    kept = [await judge(run, render(question, scope.bind(item=item, index=index)), step, f"{path}[{index}]")
            for index, item in enumerate(over)]
    return [item for item, keep in zip(over, kept) if keep]


async def run_reduce(run, step, path, scope, piped, in_loop):
    accumulator = value(step, "initial", scope)
    for index, item in enumerate(items(step, path, scope, piped)):
        bound = scope.bind(item=item, index=index, accumulator=accumulator)
        accumulator = await block(run, step, "do", path, bound, True, item=index)
    return accumulator


async def run_decide(run, step, path, scope, piped, in_loop):
    branch = "then" if await condition(run, step, path, scope) else "else"
    if step.arg(branch) is None:
        return None
    return await block(run, step, branch, path, scope, in_loop)


async def run_exit(run, step, path, scope, piped, in_loop):
    passed = value(step, "value", scope, piped)
    if (step.arg("when") or step.arg("infer")) is not None and not await condition(run, step, path, scope):
        return passed
    output = value(step, "output", scope) if step.arg("output") is not None else passed
    raise Exited(value(step, "status", scope), value(step, "message", scope), output)


async def run_reshape(run, step, path, scope, piped, in_loop):
    return value(step, "value", scope)


async def run_ask(run, step, path, scope, piped, in_loop):
    question = value(step, "question", scope)
    said = await answer(run, step, path, question)
    if not isinstance(said, Unanswered):
        return said
    unanswered = value(step, "when_unanswered", scope)
    if unanswered == "default":
        return value(step, "default", scope)
    if unanswered == "skip":
        return None
    raise RunError(f"step {path}: nobody answered `{question}`: {said.reason}", step.tool)


async def run_pure(run, step, path, scope, piped, in_loop):
    """A pure step: its implementation over its inputs, which must conform to its parameters as any call's
    arguments must. Its result must be plain JSON data within `[limits] result_bytes`. Bad input fails the
    step, saying which step and why. `today` reads the clock: what it read is recorded like a call, and a
    replay or a resume gives that.

    This is where a pure step's result is made at run time (its value is returned to `Run.step`)."""
    pure = PURE_STEPS[step.tool.text]
    limits = run.registry.limits if run.registry is not None else Limits()
    inputs = {arg.name.text: evaluate(arg.value, scope) for arg in step.args}
    if piped is not NOTHING and pure.tool.pipe not in inputs:
        inputs[pure.tool.pipe] = piped
    # The values of a plan are JSON data already (literals, `$args`, results); their types are what the
    # check could not always see (`$args`, a tool without `returns`). The declared defaults conform.
    run.dispatch.check_arguments(pure.tool, inputs, path, step)
    for name, default in pure.defaults:
        inputs.setdefault(name, default)
    if pure.tool.effects.deterministic:
        return _pure_result(pure, inputs, limits, path, step)
    call = Call(path, pure.tool, inputs, stack=plan_stack.current())
    recorder = run.session.recorder
    replayed = recorder.replayed(call, step) if recorder is not None else None
    if replayed is not None:
        return replayed.result

    async def read():
        return _pure_result(pure, inputs, limits, path, step)
    return await recorded_call(recorder, call, read, what=f"step {path}: `{pure.tool.name}`",
                               explain=lambda error: error, limit_bytes=limits.result_bytes)


def _pure_result(pure, inputs: dict, limits: Limits, path: str, step: ast.Step):
    try:
        return _bounded(pure(inputs, limits), limits.result_bytes)
    except (PureStepError, NotPlain) as error:
        raise RunError(f"step {path}: `{pure.tool.name}` failed: {error}", step.tool) from None
    except Exception as error:  # noqa: BLE001  an input planc's types did not rule out: the step fails, not the run
        raise RunError(f"step {path}: `{pure.tool.name}` failed: {type(error).__name__}: {error}", step.tool) \
            from None


def _bounded(result, limit: int):
    """`result` as plain JSON data within `limit` bytes, or NotPlain; a number or a short string without
    the walk `plain` makes (the result of most pure steps)."""
    if result is None or type(result) in (bool, int) or (type(result) is float and math.isfinite(result)):
        return result
    if type(result) is str and 6 * len(result) + 2 <= limit:  # a character is at most 6 bytes of JSON: \u001f
        return result
    return plain(result, limit)


async def run_agent(run, step, path, scope, piped, in_loop):
    from planc.backend.agent_loop import CheckFailed, ToolFailure, Turn, check_problems
    from planc.backend.agent_loop import run_agent as agent_loop
    from planc.backend.models import ModelError

    registry = run.registry
    conversation = _conversation(run, step, path, scope)
    scope.conversations[step] = conversation
    calls = checks = 0

    async def call_tool(name: str, arguments: dict, call_id: str):
        nonlocal calls
        calls += 1
        call = Call(f"{path}/agent.{calls}/{name}", registry.tools[name], arguments,
                    scope=TemplateScope(scope, run.names), id=call_id)
        try:
            return await run.dispatch(call, step, in_loop)
        except ToolFailed as error:  # goes back to the model, which may try again
            raise ToolFailure(str(error)) from None

    async def check(answer: dict) -> list[str]:
        nonlocal checks
        checks += 1
        tool = registry.tools[name]  # the check takes the answer's fields it declares
        call = Call(f"{path}/check.{checks}/{name}", tool, {key: answer[key] for key in tool.params if key in answer})
        try:
            return check_problems(await run.dispatch(call, step, in_loop))
        except ToolFailed as error:  # a check that raises fails: the model is told why
            return [str(error)]

    name = value(step, "check", scope)
    turn = Turn(prompt=value(step, "prompt", scope), output_schema=value(step, "output_schema", scope),
                tools=_turn_tools(run, step, path, scope, conversation), context=value(step, "context", scope, piped),
                max_iterations=value(step, "max_iterations", scope), check=check if name is not None else None,
                check_name=name or "", repairs=value(step, "repairs", scope))
    try:
        return await agent_loop(run.session.model(conversation.role, step, path), turn, call_tool,
                                conversation.messages, run.session.model("repair", step, path, instead=conversation.role))
    except (ModelError, CheckFailed) as error:
        raise RunError(f"step {path}: {error}", step.tool) from None


def _conversation(run, step, path: str, scope: Scope):
    """The conversation `step` continues (`continue: $review`), or a new one."""
    from planc.analysis.agent_tools import continued
    from planc.backend.agent_loop import Conversation, system_message

    if step.arg("continue") is None:
        return Conversation(value(step, "model", scope), _offered(run, value(step, "tools", scope) or ["*"]),
                            [system_message(value(step, "system_prompt", scope))])
    earlier = continued(step, scope.targets)
    if earlier is None or earlier not in scope.conversations:  # the check refuses this: a plan that was not checked
        raise RunError(f"step {path}: `continue` refers to no agent step that has run", step.tool)
    return scope.conversations[earlier]


def _turn_tools(run, step, path: str, scope: Scope, conversation) -> list:
    """The tools this turn offers: the conversation's, or those of them `tools` names."""
    patterns = value(step, "tools", scope)
    if step.arg("continue") is None or patterns is None:
        return conversation.tools
    tools = _offered(run, patterns)
    widened = [tool.name for tool in tools if tool not in conversation.tools]
    if widened:
        raise RunError(f"step {path}: `tools` offers `{widened[0]}`, which the conversation it continues does not "
                       "offer", step.tool)
    return tools


def _offered(run, patterns) -> list:
    """The registry's tools that `patterns` match and that can run (a declared plan leading back to itself cannot)."""
    from planc.analysis.agent_tools import matching_tools, runnable

    if run.registry is None:  # no tool to offer: the step fails when it asks for a model
        return []
    plans = run.checked.context.plans if run.checked.context is not None else None
    return [tool for tool in matching_tools(run.registry, patterns) if runnable(tool, plans)]


# The handler of each built-in step.
CONTROL_HANDLERS = {"map": run_map, "filter": run_filter, "reduce": run_reduce, "decide": run_decide,
                    "exit": run_exit, "agent": run_agent, "ask": run_ask, "reshape": run_reshape,
                    **dict.fromkeys(PURE_STEPS, run_pure)}
