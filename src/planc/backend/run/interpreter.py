"""Run a checked plan: validate, run the steps, finish.

A run has three parts. This module walks the steps, in text order or as the
optimizer's schedule allows (`planc run --optimize`), and hands each step to
the handler of its built-in step (`steps/`, one module each; `control_steps.py`) or, for
a tool, to the one path every real call takes, at any depth (`dispatch.py`).
What the run holds open (its recorder, MCP servers and models) is its
session (`session.py`). Declared plans run inside the run that calls them:
their steps' paths are under the calling step (`2/1`, `2/3/do.1[0]`) and their
calls take the same path as any other.
"""

from __future__ import annotations

import asyncio
import re
from collections import ChainMap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from planc.analysis.result_labels import fails_on, failure_control, kept_input, result_view
from planc.backend.calls import plan_stack
from planc.backend.calls.approvals import AwaitingApproval
from planc.backend.calls.dispatch import Dispatch, result_problem
from planc.backend.calls.hooks import Call, Hooks
from planc.backend.models.mcp_requests import ServerRequests
from planc.backend.run.control_steps import labels_of, rendered_input, step_sources
from planc.backend.run.session import Session
from planc.backend.run.steps import CONTROL_HANDLERS
from planc.backend.state.stop import Stopped, plan_stop, settle
from planc.backend.state.stop import current as current_stop
from planc.backend.state.values import (
    NOTHING,
    ArgsView,
    Exited,
    Gates,
    Labelled,
    RunError,
    Scope,
    TemplateScope,
    ToolFailed,
    evaluate,
    failure_caught,
    unlabelled,
)
from planc.optimize.schedule import Schedule
from planc.passes.check import CheckResult
from planc.passes.policy.load import DEFAULT_PRINCIPAL
from planc.passes.resolve.resolve import ARGS
from planc.registry.loading.registry import Registry
from planc.registry.provenance.expressions import expr_labels
from planc.registry.provenance.labels import NO_LABELS, SECRET, LabelView, union
from planc.registry.provenance.redaction import RedactionKeyProblem, Redactor, redaction_key, shown_arguments
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.syntax import ast
from planc.syntax.steps import deciding

if TYPE_CHECKING:
    from planc.backend.calls.ray_executor import RayExecutor
    from planc.backend.calls.run_view import Recorder
    from planc.passes.flow.flow import CallFlow
    from planc.passes.policy.load import Policy
    from planc.registry.tools.tool import Tool


ITEM = re.compile(r"\[\d+\]")  # a map item's index in a run-time step path


@attrs.frozen
class RunResult:
    value: object  # the plan's result: its last top-level step's, or an exit's output
    status: str = "ok"  # "ok" or "error" (an exit step with status error)
    message: str | None = None
    labels: frozenset = frozenset()  # what the result carries (where it came from)
    run_id: str | None = None  # the run's: its id in the run store when it is recorded
    # The run's redaction step, which knows its secrets.
    redactor: Redactor | None = attrs.field(default=None, eq=False, repr=False)

    def kept(self) -> object:
        """The result as planc writes it anywhere (a record, an answer): its mark when it is
        labelled `secret`, else with every secret value the run knows marked."""
        return (self.redactor or Redactor()).labelled(self.value, self.labels)


async def run_plan(
    checked: CheckResult,
    *,
    registry: Registry | None = None,
    arguments: Mapping | None = None,
    hooks: Hooks = Hooks(),
    policy: Policy | None = None,
    principal: str = DEFAULT_PRINCIPAL,
    recorder: Recorder | None = None,
    schedule: Schedule | None = None,
    returns: Mapping | None = None,
    executor: RayExecutor | None = None,
) -> RunResult:
    """Run `checked` (a plan `planc.check` accepted); RunError says what failed and where.

    `returns` (a declared plan's `returns`, when it is run itself) is what its result must conform to:
    a result it does not allow fails the run at its finish, as a call of `plan__NAME` would fail.

    With a `schedule` of its steps (`planc.optimize.optimize.optimize`), each top-level step starts
    as soon as the steps it waits for have finished, rather than after the step before it.

    `recorder` (a `planc.backend.calls.run_view.Recorder`: the run store's), if given, is told of every
    real tool call and model inference, and may answer it from its record instead (a replay).

    `executor` (a connected `planc.backend.calls.ray_executor.RayExecutor`), if given, makes the Python tool
    calls of loop items and scheduled steps; everything else about them stays in this process.
    """
    if not checked.ok:
        raise RunError("the plan has errors: `planc check` it first")
    plan, resolution = checked.plan, checked.resolution
    assert plan is not None and resolution is not None  # a plan that checks was parsed and resolved
    if may_hold_secrets(checked):  # a key that cannot be used stops the run before its first step
        try:
            redaction_key()
        except RedactionKeyProblem as problem:
            raise RunError(str(problem)) from None
    session = Session(checked, registry, recorder, hooks.events, executor)
    run = Run(checked, session, hooks, policy, principal, by_schedule=schedule is not None)
    # Its literals and `$args` carry the labels of whoever wrote it, as they did when it was checked.
    written = checked.context.written_by if checked.context is not None else NO_LABELS
    scope = Scope(
        ChainMap(), resolution.targets, run_arguments(checked, arguments or {}), args_view=ArgsView({}, written), written=written
    )
    run.emit("run_started")
    try:
        try:
            await session.open()  # the MCP servers the run may call, checked against the lock before any step
            with plan_stop(nested=False):
                if schedule is None:
                    last = await run.pipelines(plan.pipelines, scope, prefix="", suffix="", in_loop=False)
                else:
                    last = await run.scheduled(plan.pipelines, schedule, scope)
            result = RunResult(last.value, labels=last.view.whole(), run_id=session.run_id, redactor=session.redactor)
        except Exited as exit_:  # its message was made safe to write where it was made (`run_exit`)
            message = session.redactor.text(exit_.message) if exit_.message else exit_.message
            result = RunResult(exit_.output, exit_.status, message, exit_.labels, session.run_id, session.redactor)
        finally:
            await session.close()  # never raises: servers and models are closed whatever happened
        if returns is not None and result.status == "ok":
            _check_returns(returns, result.value)
    except RunError as error:  # it is written (store, stderr): every secret it knows taken out
        session.redactor.scrub(error)
        run.emit("run_finished", error, status="awaiting_approval" if isinstance(error, AwaitingApproval) else "failed")
        raise
    run.emit("run_finished", status=result.status, **({"message": result.message} if result.message else {}))
    return result


def may_hold_secrets(checked: CheckResult) -> bool:
    """Whether a value labelled `secret` may reach a step of `checked`, as its check's flow says."""
    flow = checked.flow
    return flow is not None and any(
        SECRET in call.result.whole() or any(SECRET in labels for labels in call.sources.values()) for call in flow.calls.values()
    )


def _check_returns(returns: Mapping, value: object) -> None:
    """A RunError when the plan's result is not what its declared `returns` allows."""
    from jsonschema.validators import validator_for

    problem = result_problem(validator_for(returns)(returns), value)
    if problem is not None:
        raise RunError(f"the plan's result is not what its declared `returns` allows ({problem})")


def run_arguments(checked: CheckResult, arguments: Mapping) -> dict:
    """The arguments a run of `checked` gets: checked against its declared `params` when it is a declared
    plan (over their defaults, each of the declared type, no other), as a call of `plan__NAME` is; and
    every `$args.NAME` it reads given. A RunError, before any step, otherwise."""
    params = checked.context.arguments if checked.context is not None else None
    if params is not None:
        unknown = sorted(set(arguments) - set(params))
        if unknown:
            declared = ", ".join(f"`{name}`" for name in params) or "none"
            raise RunError(f"the plan declares no parameter `{unknown[0]}`; its parameters are {declared}")
        arguments = with_defaults(params, arguments)
        from jsonschema.validators import validator_for

        for name, value in arguments.items():
            error = next(iter(validator_for(params[name])(params[name]).iter_errors(value)), None)
            if error is not None:
                raise RunError(f"the argument `{name}` is invalid: {error.message}")
    missing_arguments(checked, arguments)
    return dict(arguments)


def missing_arguments(checked: CheckResult, arguments: Mapping) -> None:
    """A `$args.NAME` the run does not give is refused before any step runs."""
    assert checked.resolution is not None  # a plan that checks was resolved
    for ref, target in checked.resolution.targets.items():
        if target == ARGS and ref.accessors and isinstance(ref.accessors[0], ast.Field):
            name = ref.accessors[0].name
            if name not in arguments:
                raise RunError(
                    f"the plan reads `$args.{name}`, but the run has no argument `{name}` (give it with `--arg {name}=VALUE`)",
                    ref,
                )


class Run:
    """One run of a checked plan: it walks the steps and hands each to its handler or to the dispatch."""

    def __init__(
        self,
        checked: CheckResult,
        session: Session,
        hooks: Hooks,
        policy: Policy | None,
        principal: str,
        by_schedule: bool = False,
    ) -> None:
        assert checked.resolution is not None  # a plan that checks was resolved
        self.checked, self.session, self.hooks = checked, session, hooks
        self.by_schedule = by_schedule  # its top-level steps run as a schedule allows, side by side
        self.registry = session.registry
        self.tools = dict(checked.resolution.tools)  # step -> Tool, for the plan and the declared plans it ran
        self.names = template_names(checked)  # step -> the names a template reads its result by, likewise
        self.finished: dict[str, object] = {}  # step path -> result, of every step that has finished
        self.asking = asyncio.Lock()  # one `ask` question at a time, even from a map's items running at once
        self.emit = session.emit  # the run's events
        self.dispatch = Dispatch(self, policy, principal)
        session.mcp.requests = ServerRequests(self)  # what its MCP servers ask during its calls

    def flow_of(self, path: str) -> CallFlow | None:
        """The check's flow of the step at run-time path `path` (a map item's `[k]` taken away), if it has one."""
        flow = self.checked.flow
        return flow.calls.get(ITEM.sub("", path)) if flow is not None else None

    async def pipelines(
        self, pipelines: Sequence[ast.Pipeline], scope: Scope, prefix: str, suffix: str, in_loop: bool
    ) -> Labelled:
        """Run `pipelines` (a plan's or a block's); the result is the last step's, with its labels.

        Step paths are `prefix` + number + `suffix`: `3/do.2` + `[17]` in a map's 18th item.
        """
        number, result, last = 0, None, None
        for pipeline in pipelines:
            piped = NOTHING
            for step in pipeline.steps:
                number += 1
                result = await self.step(
                    step, f"{prefix}{number}{suffix}", scope, piped, in_loop, scope.labels[last] if piped is not NOTHING else None
                )
                scope.results[step] = result
                piped, last = result, step
        return Labelled(result, scope.labels[last] if last is not None else LabelView())

    async def scheduled(self, pipelines: Sequence[ast.Pipeline], schedule: Schedule, scope: Scope) -> Labelled:
        """Run the top-level `pipelines`, each step once the steps `schedule` says it waits for have finished.

        Only steps that change nothing run beside each other, since a step that changes something waits
        for every step before it. After the first failure no step starts, and the steps already running
        finish their calls; the run fails with that first failure. The result is the last step's.
        """
        tasks: list[asyncio.Task] = []
        index: dict[ast.Step, int] = {}

        async def one(step: ast.Step, path: str, piped_from: ast.Step | None) -> object:
            waits = [tasks[index[earlier]] for earlier in schedule.waits[step]]
            pending = [task for task in waits if not task.done()]
            if pending:
                await asyncio.wait(pending)  # never cancels them, unlike awaiting a task
            if any(task.cancelled() or task.exception() is not None for task in waits):
                raise Stopped(f"step {path} did not start: a step it waits for failed", step.tool)
            piped = NOTHING if piped_from is None else scope.results[piped_from]
            result = await self.step(step, path, scope, piped, False, None if piped_from is None else scope.labels[piped_from])
            scope.results[step] = result
            return result

        for pipeline in pipelines:
            piped_from = None
            for step in pipeline.steps:
                index[step] = len(tasks)
                tasks.append(asyncio.ensure_future(one(step, str(len(tasks) + 1), piped_from)))
                piped_from = step
        await settle(tasks)
        return Labelled(tasks[-1].result(), scope.labels[next(reversed(index))]) if tasks else Labelled(None, LabelView())

    async def step(
        self, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, piped_view: LabelView | None = None
    ) -> object:
        """Run one step; when it fails or exits, its plan stops: nothing starts in it after.

        `step_started` carries its rendered input: a tool's arguments, as the call gets them; a control
        step's values (its blocks and conditions run inside it)."""
        stop = current_stop()
        stop.check(path, step.tool)
        tool = self.tools.get(step)
        try:
            arguments = self.arguments(step, tool, path, scope, piped)
        except Exception as error:  # it fails as it starts
            if type(error) is RunError and not str(error).startswith("step "):  # a value it reads: say whose
                error = RunError(f"step {path}: {error}", error.node, error.code)
            self.emit("step_started", step=path, tool=step.tool.text)
            stop.set(error)
            raise error from None
        assert tool is not None  # `arguments` refused a step without one
        sources, control = step_sources(step, tool, scope, piped_view), scope.controlled()
        self.emit("step_started", step=path, tool=step.tool.text, input=shown_arguments(arguments, sources))
        labelled_piped = piped  # a control step reads its piped input with its labels; a tool's call has them
        if piped is not NOTHING and tool.builtin:
            labelled_piped = Labelled(piped, piped_view or LabelView())
        try:
            if tool.builtin:
                result = await CONTROL_HANDLERS[tool.name](self, step, path, scope, labelled_piped, in_loop, arguments)
            else:
                call = Call(path, tool, arguments, scope=TemplateScope(scope, self.names), sources=sources, control=control)
                result = await self.dispatch(call, step, in_loop)
        except Exception as error:  # a failure, or an exit: either ends the plan
            stop.set(error)
            if isinstance(error, Exited):
                self.emit("step_exited", step=path, status=error.status, **({"message": error.message} if error.message else {}))
            else:
                self.emit("step_failed", error, step=path, tool=step.tool.text)
            raise
        # What any call's result carries (its own labels, its arguments', its control's), and what its
        # handler or declared plan says it adds; a step that keeps its input's items keeps their labels part by part.
        if type(result) is Labelled and result.gates:  # a declared plan's exits decided
            scope.gates.labels = union(scope.gates.labels, result.gates)
        result, added = unlabelled(result)
        kept = kept_input(tool)
        items = labels_of(step, kept, scope, labelled_piped) if kept else None
        added_labels = added.whole() if added is not None else NO_LABELS
        block = added if added is not None and tool.name == "map" else None
        view = scope.labels[step] = result_view(step, tool, sources, control, added_labels, items, block)
        # Whether it might have failed decides whether every later step of its plan runs.
        decided = deciding(step) if tool.name != "filter" and step.arg("infer") is not None else None
        asked = expr_labels(decided.value, scope) if decided is not None else added_labels
        fails = failure_control(tool.labels, fails_on(step, tool, sources, control, added_labels, asked), scope.gates.caught)
        if fails:
            scope.gates.labels = union(scope.gates.labels, fails)
        self.finished[path] = result
        whole = view.whole()
        if (
            SECRET in whole
            and tool.name in PURE_STEPS
            and tool.kind == "pure"
            and any(SECRET in labels for labels in sources.values())
        ):
            self.session.redactor.learn(result, view)  # a secret made over (`upper`) is one too
        self.emit("step_finished", step=path, tool=step.tool.text, result=self.session.redactor.labelled(result, whole))
        return result

    def arguments(self, step: ast.Step, tool: Tool | None, path: str, scope: Scope, piped: object) -> dict:
        """The step's rendered input: a tool's arguments (piped input included), a control step's values."""
        if tool is None:
            raise RunError(f"step {path}: no registry declares the tool `{step.tool.text}`", step.tool)
        if tool.builtin:
            return rendered_input(step, scope, piped)
        args = {arg.name.text: evaluate(arg.value, scope) for arg in step.args}
        if piped is not NOTHING and tool.pipe:
            args[tool.pipe] = piped
        return args

    async def declared_plan(self, call: Call, step: ast.Step, in_loop: bool) -> Labelled:
        """Run the declared plan that `call` (of `plan__NAME`) calls, inside this run, with the call's arguments
        over its declared defaults; its steps' paths are under the calling step's, and it runs in the
        caller's loops. It was checked with the plan that calls it, so it runs as checked then."""
        name = call.tool.address
        checked = self.checked.context.plans.get(name) if self.checked.context is not None else None
        if checked is None or not checked.ok:  # only when the caller was not checked with the registry
            raise RunError(f"step {call.step}: the plan `{name}` was not checked with this plan: check it first", step.tool)
        plan, resolution = checked.plan, checked.resolution
        assert self.registry is not None and plan is not None and resolution is not None  # it was checked with it
        arguments = with_defaults(self.registry.plans[name].params, call.args)
        missing_arguments(checked, arguments)
        self.tools.update(resolution.tools)
        self.names.update(template_names(checked))
        # Its `$args` carry the labels of the caller's arguments; its steps run under the call's control.
        # A failure in it fails the call, which an agent takes back as an error and goes on from.
        scope = Scope(
            ChainMap(),
            resolution.targets,
            arguments,
            args_view=ArgsView({param: LabelView(labels) for param, labels in call.sources.items()}),
            control=call.control,
            gates=Gates(failure_caught.get()),
        )
        # What decided its `exit`s decides whether the caller's later steps run (`Labelled.gates`),
        # as an `exit` written in the caller does; and its failure carries it.
        try:
            with plan_stop(nested=True), plan_stack.calling(name, call.step):
                result = await self.pipelines(plan.pipelines, scope, f"{call.step}/", "", in_loop)
                gates = scope.gates.labels
                return Labelled(result.value, result.view.adding(gates), gates)
        except Exited as exit_:
            gates = scope.gates.labels
            if exit_.status == "error":
                raise ToolFailed(
                    f"step {call.step}: the plan `{name}` exited with status error: {exit_.message}",
                    step.tool,
                    labels=union(exit_.labels, gates),
                ) from None
            return Labelled(exit_.output, LabelView(union(exit_.labels, gates)), gates)


def template_names(checked: CheckResult) -> dict[ast.Step, tuple[str, ...]]:
    """The names a template of `checked` reads each step's result by: `$3` for a top-level step, `$label`
    for a labelled one."""
    assert checked.resolution is not None  # a plan that checks was resolved
    names: dict[ast.Step, tuple[str, ...]] = {}
    for step, path in checked.resolution.paths.items():
        found = (f"${path}",) if "/" not in path else ()
        names[step] = found + ((f"${step.label.text}",) if step.label is not None else ())
    return names


def with_defaults(params: Mapping[str, Mapping], arguments: Mapping) -> dict:
    """`arguments` over the defaults a declared plan's `params` give."""
    defaults = {param: schema["default"] for param, schema in params.items() if "default" in schema}
    return {**defaults, **arguments}
