"""The one path every real tool call takes, at any depth: a plan's steps, blocks, declared plans, agents.

In order: the call gets its idempotency key (`idempotency.py`) and the stack of declared plans it is
in; the policy decides with the real arguments and the labels they carry (a refusal owed to the labels
alone flags the call, for the gate to let through or not); the arguments are validated against the tool's
schemas; the recorder answers from its record (a replay, a resume) or else the gate is asked (a
refusal is recorded) and the recorder commits the intent (with the key); the tool is called, given
its key when it takes one (here, or on the run's executor: `executor_for`); its result is made plain
JSON data (or refused: `results.py`), recorded and validated against the tool's `returns`; events
are sent before and after (`tool_finished`, or `tool_failed`). Model inferences are recorded
through the same `recorded_call`. A failure of the tool goes to `on_tool_error`, which may replace
it: `tool_finished` then reports the tool's error and the replacement, each in its own field.

A tool whose answers may depend on the calls of it made before (`answers_depend`) answers with what
decided those calls too (`counted`): its result is then `Labelled`, as a declared plan's is.

Secrets: the key is computed over the arguments with each `secret` one, and each secret value the
run knows, as its mark (a key computed over a value the run knows is secret is one itself); the run's
redaction step learns the secret parts of a result before it is recorded; an error made from a
`secret` input (the tool's own, a JSON Schema error quoting an argument or a result) quotes its
mark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from planc.analysis.result_labels import answers_depend, decided_calls
from planc.backend.calls import plan_stack
from planc.backend.calls.hooks import Abort, Call, Proceed, Replace, Skip
from planc.backend.calls.idempotency import idempotency_key
from planc.backend.calls.mcp_runtime import calling
from planc.backend.calls.providers import UnknownOutcome, call_provider
from planc.backend.calls.results import usable
from planc.backend.calls.run_view import Recorder, RunView
from planc.backend.calls.spending import more_than_declared
from planc.backend.state.stop import current as current_stop
from planc.backend.state.values import Aborted, Labelled, RunError, ToolFailed
from planc.registry.provenance.labels import NO_LABELS, SECRET, LabelView, subtree_labels, union
from planc.registry.provenance.redaction import mark
from planc.registry.settings.declarations import limits_of
from planc.registry.tools.tool import PYTHON_TYPES
from planc.syntax import ast

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from planc.backend.calls.ray_executor import RayExecutor
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry
    from planc.registry.tools.tool import Tool


class Dispatch:
    """The dispatch of one run: `await dispatch(call, step, in_loop)` is the call's result."""

    def __init__(self, run: RunView, policy: Policy | None, principal: str) -> None:
        self.run, self.policy, self.principal = run, policy, principal
        self.hooks, self.session = run.hooks, run.session
        self.validators: dict[int, tuple] = {}  # id(schema) -> (schema, its jsonschema validator)

    async def __call__(self, call: Call, step: ast.Step, in_loop: bool) -> Any:
        try:
            return await self.made(call, step, in_loop)
        except ToolFailed as error:  # its text, and that it failed, carry what the call was given
            error.labels = union(error.labels, call.result_labels())
            raise

    async def made(self, call: Call, step: ast.Step, in_loop: bool) -> Any:
        """The call's result (a declared plan's `Labelled`), made as the module's docstring says."""
        current_stop().check(call.step, step.tool)  # nothing starts after a failure, at any depth
        tool = call.tool
        if tool.kind != "plan":  # a declared plan's own calls are counted as they are made
            self.session.spending.call(tool, call.step, step.tool)
        self.validate(call, step)
        shown = call.shown_input()
        written = self.session.redactor.data(shown)  # a secret value no label marks, as its mark too
        assert isinstance(written, dict)  # data keeps a value's shape
        key = idempotency_key(self.session.run_id, call.step, written)
        if written != shown:  # computed over a secret: a secret itself, wherever it is written
            self.session.redactor.add(key, mark(key))
        call = Call(
            call.step,
            tool,
            call.args,
            call.scope,
            plan_stack.current(),  # not attrs.evolve: 5x as slow
            key,
            call.id,
            call.sources,
            call.control,
            self.authorize(call, step, in_loop),
        )
        made_and_failed: ToolFailed | None = None
        try:
            answer = self.from_record(call, step)
        except ToolFailed as error:  # made, and failed, in the record: its events as the run that made it sent them
            answer, made_and_failed = Skip(), error
        if answer is None:  # only a call that will really be made is put to the gate
            answer = await self.approved(call, step)
        earlier = self.counted(call)
        # `usd`: what the call costs when it is really made (not answered from the record): what the run spent.
        self.run.emit(
            "tool_started",
            step=call.step,
            tool=tool.name,
            input=shown,
            **({"call_id": call.id} if call.id is not None else {}),
            **({"usd": tool.cost.usd} if tool.cost.usd and not isinstance(answer, Skip) else {}),
        )
        try:
            if made_and_failed is not None:
                raise made_and_failed
            if isinstance(answer, Skip):
                result = answer.result
            elif tool.kind == "plan":  # its own calls come this way, each recorded
                labelled = await self.run.declared_plan(call, step, in_loop)
                result = labelled.value
            else:
                try:
                    result = await self.recorded(call, step, in_loop)
                except (ToolFailed, RunError):  # its result refused (the call was made), or the run's trouble
                    raise
                except Exception as error:  # the tool's own failure: `on_tool_error` may yet replace it
                    replaced = await self.tool_failed(call, step, error)
                    return Labelled(replaced, LabelView(earlier)) if earlier else replaced
            self.check_result(result, call, step)
        except Exception as error:
            if isinstance(error, ToolFailed):  # whether it failed may depend on the calls before it too
                error.labels = union(error.labels, earlier)
            self.run.emit("tool_failed", error, step=call.step, tool=tool.name)
            raise
        self.run.emit(
            "tool_finished", step=call.step, tool=tool.name, result=self.session.redactor.labelled(result, call.result_labels())
        )
        if tool.kind == "plan" and not isinstance(answer, Skip):
            return labelled
        if earlier and not earlier <= call.result_labels():  # what its result carries anyway needs no more
            return Labelled(result, LabelView(earlier))
        return result

    def counted(self, call: Call) -> frozenset[str]:
        """Count `call` among its tool's calls: what decided those made before it (that they were made,
        and with which arguments, the same as its own or not), which its answer carries when it may
        depend on them."""
        if not answers_depend(call.tool):
            return NO_LABELS
        earlier = self.session.called.get(call.tool.name, NO_LABELS)
        self.session.called[call.tool.name] = union(earlier, decided_calls(call.sources, call.control))
        return earlier

    def from_record(self, call: Call, step: ast.Step) -> Skip | Proceed | None:
        """The call's result when the recorder holds it (a replay, a resume): it is neither asked for nor made
        again; Proceed for a call a person approved in the record (`planc approve`): made, and not asked
        again. A declared plan is not recorded as a call: its own calls are."""
        recorder = self.session.recorder
        if recorder is None or call.tool.kind == "plan":
            return None
        return recorder.replayed(call, step)

    async def approved(self, call: Call, step: ast.Step) -> Proceed | Skip:
        """The gate's answer; when it aborts, the run stops before the call, and the recorder keeps the refusal
        (so that no resume makes the call). A call the policy refuses for where its values came from
        (`flagged`) is made only if the gate lets it through."""
        if call.flagged is not None and self.hooks.gate is None:
            raise RunError(f"step {call.step}: {call.flagged}", step.tool)
        gate = await self.hooks.gate(call) if self.hooks.gate else Proceed()
        if not isinstance(gate, Abort):
            return gate
        error = Aborted(
            f"step {call.step}: stopped before calling `{call.tool.name}`: {gate.reason}", step.tool, results=self.run.finished
        )
        recorder = self.session.recorder
        if recorder is not None and call.tool.kind != "plan":
            recorder.declined(call, str(error))
        raise error

    def authorize(self, call: Call, step: ast.Step, in_loop: bool) -> str | None:
        """The policy, asked again with the real arguments and the labels they carry: a denial stops the run
        before the call, with the message `planc check` gives it (E400). A denial owed to the labels alone
        is the call's flag instead: only the gate (a person) may let it through (`approved`)."""
        if self.policy is None:
            return None
        from planc.passes.policy.decide import Ask, decide_all
        from planc.passes.policy.denial import denial, flow_blame

        ask = Ask(call.tool, call.args, call.step, in_loop, (), call.sources, call.control)
        [decision] = decide_all(self.policy, self.principal, [ask])
        if decision.allowed:
            return None
        blame = flow_blame(self.policy, self.principal, ask, self.run.flow_of(call.step))
        denied = denial(step, call.step, decision, self.principal, self.policy, tool=call.tool.name, blame=blame)
        if blame is not None:  # the record of a run a person approved it in answers it, or else the gate
            return denied.message
        raise RunError(f"step {call.step}: {denied.message}", step.tool, code=denied.code)

    def executor_for(self, in_loop: bool) -> RayExecutor | None:
        """Where a Python tool's call is made: on the run's executor (a Ray cluster) when it may run beside
        others, in a loop's item or under a schedule; else (None) in this process, where a lone call
        is made for less."""
        return self.session.executor if in_loop or self.run.by_schedule else None

    async def recorded(self, call: Call, step: ast.Step, in_loop: bool) -> Any:
        """The tool's result, called with its key if it takes one, the recorder told before and after; as
        JSON data (`results.plain`), or the call is refused. What the tool raised is raised. An MCP server's
        requests during the call are answered for it (`mcp_runtime.calling`)."""
        registry, mcp = self.session.registry, self.session.mcp
        executor = self.executor_for(in_loop)
        token = calling.set((call, step))
        learn = None
        if SECRET in call.tool.labels or SECRET in subtree_labels(call.tool.returns):
            redactor, own = self.session.redactor, LabelView(call.tool.labels, call.tool.returns)
            learn = lambda result: redactor.learn(result, own)  # noqa: E731
        try:
            return await recorded_call(
                self.session.recorder,
                call,
                lambda: call_provider(call.tool, call.args, registry, mcp, key=call.key, executor=executor),
                what=f"step {call.step}: `{call.tool.name}`",
                explain=lambda error: recorded_error(call, error),
                limit_bytes=result_bytes(registry),
                learn=learn,
            )
        finally:
            calling.reset(token)

    async def tool_failed(self, call: Call, step: ast.Step, error: Exception) -> object:
        """The tool raised `error` (it is recorded so): `on_tool_error` says what the run makes of it. A
        replacement is the call's result, and `tool_finished` reports the error and the replacement; else
        the call fails (and `tool_failed` reports it)."""
        action = await self.hooks.on_tool_error(call, error) if self.hooks.on_tool_error else None
        message = failed(call, error)
        if isinstance(action, Replace):
            self.check_result(action.result, call, step)
            replacement = self.session.redactor.labelled(action.result, call.result_labels())
            self.run.emit("tool_finished", step=call.step, tool=call.tool.name, error=message, replacement=replacement)
            return action.result
        if isinstance(action, Abort):
            raise Aborted(
                f"step {call.step}: `{call.tool.name}` failed, and the run stops: {action.reason}",
                step.tool,
                results=self.run.finished,
                error=error,
            )
        raise ToolFailed(message, step.tool)

    def validator(self, schema: Mapping) -> Validator:
        """The jsonschema validator of `schema`, made once per run (the schema kept, so its id stays its own)."""
        made = self.validators.get(id(schema))
        if made is None:
            from jsonschema.validators import validator_for

            made = self.validators[id(schema)] = (schema, validator_for(schema)(schema))
        return made[1]

    def validate(self, call: Call, step: ast.Step) -> None:
        """The real arguments against the tool's signature, before the policy and the call (`check_arguments`).
        A plan's were checked already; an agent's were chosen by its model, which is told what is wrong (a
        ToolFailed goes back to it)."""
        self.check_arguments(call.tool, call.args, call.step, step, call.sources)

    def check_arguments(
        self, tool: Tool, args: Mapping, path: str, step: ast.Step, sources: Mapping[str, frozenset[str]] | None = None
    ) -> None:
        """`args` against `tool`'s signature: each declared and of its parameter's schema, none required
        missing; ToolFailed, saying which argument of the step at `path` is wrong and why,
        otherwise. What is wrong with a `secret` argument (by `sources`) is said by its mark."""
        problem = None
        undeclared = sorted(set(args) - set(tool.params))
        missing = [name for name in tool.required if name not in args]
        if undeclared:
            declared = ", ".join(f"`{name}`" for name in tool.params) or "none"
            problem = f"`{tool.name}` has no parameter `{undeclared[0]}` (its parameters are {declared})"
        elif missing:
            problem = f"`{tool.name}` needs the argument `{missing[0]}`, which is missing"
        else:
            for name, value in args.items():
                schema = tool.params.get(name)
                if not schema or _surely_valid(value, schema):
                    continue
                error = next(iter(self.validator(schema).iter_errors(value)), None)
                if error is not None:
                    secret = SECRET in (sources or {}).get(name, NO_LABELS)
                    problem = (
                        f"argument `{name}` of `{tool.name}` is invalid at run time: "
                        f"{mark(error.message) if secret else error.message}"
                    )
                    break
        if problem is not None:
            raise ToolFailed(f"step {path}: {problem}", step.tool)

    def check_result(self, result: object, call: Call, step: ast.Step) -> None:
        """A result that breaks the tool's declared `returns` (or has more items than its `returns_at_most`
        allows) fails the step: later steps, and the budget, rely on it."""
        tool = call.tool
        if tool.returns is None and tool.returns_at_most is None:
            return
        problem = more_than_declared(tool, call.args, result)
        if problem is None and tool.returns is not None:
            problem = result_problem(self.validator(tool.returns), result)
        if problem is not None:
            if SECRET in call.result_labels():  # the problem quotes the result
                problem = mark(problem)
            raise ToolFailed(
                f"step {call.step}: `{tool.name}` returned a result its declaration does not allow ({problem})", step.tool
            )


def _surely_valid(value: object, schema: Mapping) -> bool:
    """True when `schema` is only a `type` and `value` is of it: what most arguments are, known without
    jsonschema (which is many times slower). False says nothing: jsonschema decides.

    >>> _surely_valid(2.5, {"type": "number"}), _surely_valid(True, {"type": "integer"})
    (True, False)
    >>> _surely_valid("", {"type": "string", "minLength": 1}), _surely_valid("", {"type": ["string", "null"]})
    (False, False)
    """
    kind = schema.get("type")
    kinds = PYTHON_TYPES.get(kind) if len(schema) == 1 and type(kind) is str else None
    return kinds is not None and type(value) in kinds


def result_problem(validator: Validator, result: Any) -> str | None:
    """Why `result` breaks the schema of `validator` (`at items/0/id: 3 is not of type 'string'`), or None."""
    error = next(iter(validator.iter_errors(result)), None)
    if error is None:
        return None
    return f"at {'/'.join(str(part) for part in error.absolute_path) or 'the result'}: {error.message}"


async def recorded_call(
    recorder: Recorder | None,
    call: Call,
    make: Callable[[], Awaitable],
    *,
    what: str,
    explain: Callable[[Exception], Exception],
    limit_bytes: int | None,
    learn: Callable[[object], None] | None = None,
) -> Any:
    """`await make()` (the real work of `call`, `what` in messages) as plain JSON data, `recorder` (if any)
    told before and after; `learn` is given the result first, so that the run's redaction step
    knows its secrets before anything records it.

    The intent is committed before the work starts, so a store that cannot record it stops the run
    before the call. The call's end is recorded whatever it is: its result; or what it raised, as
    `explain(error)` says it (the error itself is raised); or a result that is not JSON data or is
    larger than `limit_bytes`, refused (ResultRefused) after its effect, never lost to a traceback;
    or, when the run is interrupted during it, that its outcome is unknown.
    """
    if recorder is not None:
        recorder.started(call)
    try:
        result = usable(await make(), what, limit_bytes)
    except asyncio.CancelledError:  # the run was interrupted during the call: it may have had its effect
        if recorder is not None:
            recorder.abandoned(call)
        raise
    except Exception as error:
        if recorder is not None:
            recorder.finished(call, None, explain(error))
        raise
    if learn is not None:
        learn(result)
    if recorder is not None:
        recorder.finished(call, result, None)
    return result


def recorded_error(call: Call, error: Exception) -> Exception:
    """What the run store records of a tool call that raised `error`: the run's own message for it (a
    timeout or a lost worker keeps its kind, as its outcome is unknown rather than failed)."""
    if isinstance(error, RunError):
        return error
    return (type(error) if isinstance(error, UnknownOutcome) else ToolFailed)(failed(call, error))


def result_bytes(registry: Registry | None) -> int:
    """`[limits] result_bytes`: the largest result, as JSON, a call may return."""
    return limits_of(registry).result_bytes


def failed(call: Call, error: Exception) -> str:
    """What the run says of a call that raised `error`: what the tool said, as its mark when the
    call's result would be `secret` (the tool's labels, its arguments' or its control's say so)."""
    said = str(error)
    return (
        f"step {call.step}: `{call.tool.name}` failed: {type(error).__name__}: "
        f"{mark(said) if SECRET in call.result_labels() else said}"
    )
