"""The built-in steps at run time: what the control steps' handlers share, and `run_pure`, the
handler of every pure step.

Each control step's handler is `run_<name>` in the module of `steps/` named after it (its
declaration, `registry/steps/<name>.py`, has the same name); `steps.CONTROL_HANDLERS` gathers them.
A handler is `handler(run, step, path, scope, piped, in_loop, shown)` and returns the step's result
(`piped` is the piped input, `Labelled` with its labels, or NOTHING; `shown` its rendered input, as
`step_started` showed it: the values it has already). A control step is never dispatched as a tool
call and never gated; what it runs (its blocks' steps, an agent's tools) takes the dispatch like any
other call. An argument left out takes the default its declaration gives.

Where values came from: a step's result carries what any call's carries (its arguments' labels and
its control's, added by the interpreter); a handler whose result carries more (a block's results, a
condition, what an agent read) returns it `Labelled` with those, as the step's flow rule (in its
declaration) says before the run.

A text a handler makes from a `secret` input (an `exit`'s message, an `ask`'s question, a pure
step's error quoting its input) is made as its mark (`planc.registry.provenance.redaction`), so nothing it
reaches (the record, events, stderr, whoever answers) holds the secret.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from planc.backend.calls import plan_stack
from planc.backend.calls.dispatch import recorded_call
from planc.backend.calls.hooks import Call, Skip
from planc.backend.calls.results import NotPlain, plain
from planc.backend.state.stop import current as current_stop
from planc.backend.state.stop import settle
from planc.backend.state.values import (
    NOTHING,
    Labelled,
    RunError,
    Scope,
    evaluate,
    truth,
    unlabelled,
)
from planc.registry.provenance.control import Loop
from planc.registry.provenance.expressions import expr_labels, expr_view
from planc.registry.provenance.labels import NO_LABELS, SECRET, LabelView, union_all
from planc.registry.provenance.redaction import mark
from planc.registry.settings.declarations import limits_of
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.registry.steps.pure_steps import PURE_STEPS, PureStepError
from planc.syntax import ast
from planc.syntax.steps import deciding, step_blocks, walk_steps

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run
    from planc.registry.steps.pure_steps import PureStep
    from planc.registry.tools.tool import Tool


def value(step: ast.Step, name: str, scope: Scope, piped: object = NOTHING) -> Any:
    """The value of `step`'s argument `name`: as written, else piped in (for its pipe parameter), else
    its declared default (None when it has none)."""
    arg = step.arg(name)
    if arg is not None:
        return evaluate(arg.value, scope)
    declared = CONTROL_STEPS[step.tool.text]
    if name == declared.pipe and piped is not NOTHING:
        return piped.value if type(piped) is Labelled else piped
    return declared.params.get(name, {}).get("default")


def labels_of(step: ast.Step, name: str, scope: Scope, piped: object = NOTHING) -> LabelView:
    """The labels of `step`'s argument `name`, as `value` finds it (a default carries none)."""
    arg = step.arg(name)
    if arg is not None:
        return expr_view(arg.value, scope)
    if name == CONTROL_STEPS[step.tool.text].pipe and type(piped) is Labelled:
        return piped.view
    return LabelView()


def step_sources(step: ast.Step, tool: Tool, scope: Scope, piped_view: LabelView | None) -> dict[str, frozenset[str]]:
    """The labels of each of `step`'s value arguments, its piped input's under its pipe parameter (what a
    control step reads per item, `infer` of a filter, is its handler's)."""
    sources: dict[str, frozenset[str]] = {}
    for arg in step.args:
        name = arg.name.text
        if tool.param_kind(name) == "value" and not tool.binds.get(name):
            sources[name] = expr_labels(arg.value, scope)
    if piped_view is not None and tool.pipe and tool.pipe not in sources:
        sources[tool.pipe] = piped_view.whole()
    return sources


def rendered_input(step: ast.Step, scope: Scope, piped: object) -> dict:
    """What `step_started` shows of a control step's input: each argument that is one value for the whole
    step (not a block, a condition, or a template rendered per item) and its piped input. An argument
    the step reads only in some cases (`exit`'s `output` when it exits) may not render here: it is left
    out, and the step fails on it only if it reads it."""
    declared = CONTROL_STEPS[step.tool.text]
    shown = {}
    for arg in step.args:
        name = arg.name.text
        if declared.param_kind(name) != "value" or declared.binds.get(name):
            continue
        try:
            shown[name] = evaluate(arg.value, scope)
        except RunError:
            continue
    if piped is not NOTHING and declared.pipe is not None and declared.pipe not in shown:
        shown[declared.pipe] = piped
    return shown


async def block(
    run: Run,
    step: ast.Step,
    name: str,
    path: str,
    scope: Scope,
    in_loop: bool,
    item: int | None = None,
    control: frozenset = NO_LABELS,
) -> Labelled:
    """Run the block of `step`'s argument `name`, its results visible only inside it, under `control` too;
    its result with its labels."""
    block_node, label = next((found, label) for found, label in step_blocks(step) if label == name)
    suffix = "" if item is None else f"[{item}]"
    return await run.pipelines(block_node.pipelines, scope.inner(control), f"{path}/{label}.", suffix, in_loop)


def items(step: ast.Step, path: str, scope: Scope, piped: object) -> list:
    over = value(step, "over", scope, piped)
    if not isinstance(over, list):
        raise RunError(f"step {path}: `{step.tool.text}` needs a list to go over", step.tool)
    return over


async def each_item(
    run: Run, step: ast.Step, path: str, scope: Scope, over: list, loop: Loop, concurrency: int = 1
) -> list[Labelled]:
    """The `do` block's result for every item (bound as `loop` says, its steps under its control),
    at most `concurrency` items at once, in order."""
    limit = asyncio.Semaphore(concurrency)
    views = {"item": loop.item, "index": loop.index}

    async def one(index: int, item: object) -> Labelled:
        async with limit:
            bound = scope.bind(views, item=item, index=index)
            return await block(run, step, "do", path, bound, True, item=index, control=loop.control)

    tasks = [asyncio.ensure_future(one(index, item)) for index, item in enumerate(over)]
    await settle(tasks)  # after a failure or an exit no item starts, and the items running finish their calls
    return [task.result() for task in tasks]


def carried(results: list[Labelled]) -> LabelView:
    return LabelView(union_all(result.view.whole() for result in results))


async def judge(run: Run, question: str, step: ast.Step, path: str, shown: frozenset = NO_LABELS) -> bool:
    """An `infer` question (whose text carries the labels `shown`) put to the `judge` role: yes or no."""
    from planc.backend.models.agent_loop import ask_yes_no
    from planc.backend.models.client import ModelError

    current_stop().check(path, step.tool)
    asked = run.session.redactor.labelled(question, shown)
    run.emit("inference_started", step=path, question=asked)
    model = run.session.model("judge", step, path)
    model.shown = lambda: shown
    try:
        answer = await ask_yes_no(model, question)
    except ModelError as error:
        raise RunError(f"step {path}: {quoting(error, shown)}", step.tool) from None
    run.emit("inference_finished", step=path, answer=answer)
    return answer


def quoting(error: Exception, shown: frozenset[str]) -> str:
    """What a model's failure says (it may quote the question or the answer): its mark when the
    model was shown a `secret`."""
    return mark(str(error)) if SECRET in shown else str(error)


async def condition(run: Run, step: ast.Step, path: str, scope: Scope) -> tuple[bool, frozenset]:
    """A `decide`'s or `exit`'s `when` condition, or its `infer` question put to the judge; and its labels."""
    decides = deciding(step)
    assert decides is not None  # a `decide` has one (the check's), an `exit` is asked only when it has
    if decides.name.text == "when":
        return truth(evaluate(decides.value, scope), decides.value), expr_labels(decides.value, scope)
    infer = decides.value
    shown = expr_labels(infer, scope)
    return await judge(run, evaluate(infer, scope), step, path, shown), shown


# --- what the handlers share


@functools.lru_cache(maxsize=4096)
def may_exit(step: ast.Step) -> bool:
    """Whether a step in `step`'s blocks is an `exit` (the steps are nodes, hashed by identity)."""
    return any(inner.tool.text == "exit" for block_node, _ in step_blocks(step) for inner, _ in walk_steps(block_node.pipelines))


def piped_labels(piped: object) -> LabelView | None:
    """The labels of a piped input that carries them, else None."""
    return piped.view if type(piped) is Labelled else None


async def run_pure(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    """A pure step: its implementation over its inputs, which must conform to its parameters as any call's
    arguments must. Its result must be plain JSON data within `[limits] result_bytes`. Bad input fails the
    step, saying which step and why. `today` reads the clock: what it read is recorded like a call, and a
    replay or a resume gives that.

    Its inputs are its rendered input (`shown`: every argument, and the piped input under its pipe
    parameter), each evaluated once; when one did not render, they are evaluated again, to fail the step.
    This is where a pure step's result is made at run time (its value is returned to `Run.step`)."""
    pure = PURE_STEPS[step.tool.text]
    inputs, piping = shown, piped is not NOTHING
    if len(inputs) < len(step.args) + piping or piping and pure.tool.pipe and step.arg(pure.tool.pipe) is not None:
        inputs = {arg.name.text: evaluate(arg.value, scope) for arg in step.args}  # raises what did not render
        if piping and pure.tool.pipe not in inputs:
            inputs[pure.tool.pipe] = unlabelled(piped)[0]  # its labels are the interpreter's: a pure step adds none

    # The values of a plan are JSON data already (literals, `$args`, results); their types are what the
    # check could not always see (`$args`, a tool without `returns`). The declared defaults conform.
    def said(problem: str) -> str:  # what a failure says of its inputs: its mark, if one is secret
        labels = union_all(step_sources(step, pure.tool, scope, piped_labels(piped)).values())
        return mark(problem) if SECRET in labels else problem

    if not pure.surely_valid(inputs):  # most inputs are known good by their Python types alone
        sources = step_sources(step, pure.tool, scope, piped_labels(piped))
        run.dispatch.check_arguments(pure.tool, inputs, path, step, sources)
    if pure.deterministic:  # its implementation's own defaults are the declared ones
        return _pure_result(pure, inputs, run, path, step, said)
    if pure.defaults:  # the recorded call shows every input, defaults included
        inputs = {**pure.default_inputs, **inputs}
    call = Call(path, pure.tool, inputs, stack=plan_stack.current())
    recorder = run.session.recorder
    replayed = recorder.replayed(call, step) if recorder is not None else None
    if isinstance(replayed, Skip):  # a pure step is never approved (Proceed): it is no tool call
        return replayed.result

    async def read() -> Any:
        return _pure_result(pure, inputs, run, path, step, said)

    return await recorded_call(
        recorder,
        call,
        read,
        what=f"step {path}: `{pure.tool.name}`",
        explain=lambda error: error,
        limit_bytes=limits_of(run.registry).result_bytes,
    )


def _pure_result(pure: PureStep, inputs: dict, run: Run, path: str, step: ast.Step, said: Callable[[str], str]) -> Any:
    """The step's result for `inputs`, as plain JSON data within the run's `[limits] result_bytes`: a number
    (what most pure steps give) as it is, a short string without the walk `plain` makes. A failure
    says what went wrong as `said` words it (it may quote an input)."""
    try:
        result: Any = pure.run(**inputs, limits=limits_of(run.registry)) if pure.limited else pure.run(**inputs)
        kind = type(result)
        if result is None or kind is int or kind is bool or (kind is float and math.isfinite(result)):
            return result
        limits = limits_of(run.registry)
        if kind is str and 6 * len(result) + 2 <= limits.result_bytes:  # a character is at most 6 bytes: \u001f
            return result
        return plain(result, limits.result_bytes)
    except (PureStepError, NotPlain) as error:
        problem = said(str(error))
        raise RunError(f"step {path}: `{pure.tool.name}` failed: {problem}", step.tool) from None
    except Exception as error:  # noqa: BLE001  an input planc's types did not rule out: the step fails, not the run
        problem = f"{type(error).__name__}: {said(str(error))}"
        raise RunError(f"step {path}: `{pure.tool.name}` failed: {problem}", step.tool) from None


# A built-in step's handler: (run, step, path, scope, piped, in_loop, shown) -> its result.
Handler = Callable[["Run", ast.Step, str, Scope, object, bool, dict], Awaitable[Any]]
