"""The one path every real tool call takes, at any depth: a plan's steps, blocks, declared plans, agents.

In order: the policy decides with the real arguments; the arguments are validated against the
tool's schemas; the gate is asked; the recorder commits the intent (or answers from its record);
the tool is called; its result is recorded and validated against the tool's `returns`; events are
sent before and after. A failure of the tool goes to `on_tool_error`, which may replace it.
"""

from __future__ import annotations

from collections.abc import Mapping

from planc.backend.hooks import Abort, Call, Proceed, Replace, Skip
from planc.backend.providers import CallTimedOut, call_provider
from planc.backend.stop import current as current_stop
from planc.backend.values import RunError, ToolFailed
from planc.syntax import ast


class Dispatch:
    """The dispatch of one run: `await dispatch(call, step, in_loop)` is the call's result."""

    def __init__(self, run, policy, principal: str) -> None:
        self.run, self.policy, self.principal = run, policy, principal
        self.hooks, self.session = run.hooks, run.session
        self.validators: dict[int, tuple] = {}  # id(schema) -> (schema, its jsonschema validator)

    async def __call__(self, call: Call, step: ast.Step, in_loop: bool):
        tool = call.tool
        current_stop().check(call.step, step.tool)  # nothing starts after a failure, at any depth
        self.authorize(call, step, in_loop)
        self.validate(call, step)
        gate = await self.hooks.gate(call) if self.hooks.gate else Proceed()
        if isinstance(gate, Abort):
            raise RunError(f"step {call.step}: stopped before calling `{tool.name}`: {gate.reason}", step.tool)
        self.run.emit("tool_started", step=call.step, tool=tool.name, input=dict(call.args))
        if isinstance(gate, Skip):
            result = gate.result
        elif tool.provider.startswith("plan:"):  # its own calls come this way, each recorded
            result = await self.run.declared_plan(call, step, in_loop)
        else:
            result = await self.recorded(call, step)
        self.check_result(result, call, step)
        self.run.emit("tool_finished", step=call.step, tool=tool.name, result=result)
        return result

    def authorize(self, call: Call, step: ast.Step, in_loop: bool) -> None:
        """The policy, asked again with the real arguments: a denial stops the run before the call, with
        the message `planc check` gives it (E400)."""
        if self.policy is None:
            return
        from planc.passes.policy.decide import decide
        from planc.passes.policy.denial import denial

        decision = decide(self.policy, self.principal, call.tool, call.args, step=call.step, in_loop=in_loop)
        if not decision.allowed:
            denied = denial(step, call.step, decision, self.principal, self.policy)
            raise RunError(f"step {call.step}: {denied.message}", step.tool)

    async def recorded(self, call: Call, step: ast.Step):
        """The tool's result: from the record when the recorder holds it, else called, the recorder told
        before and after."""
        recorder = self.session.recorder
        replayed = recorder.replayed(call, step) if recorder is not None else None
        if replayed is not None:
            return replayed.result
        if recorder is not None:
            recorder.started(call)
        try:
            try:
                result = await call_provider(call.tool, call.args, self.session.registry, self.session.mcp)
            except RunError:
                raise
            except Exception as error:  # whatever the tool raised is the tool's error, and so is a timeout
                if recorder is not None:  # recorded as it ended: `on_tool_error` may yet replace it for the run
                    recorder.finished(call, None, error.__class__(failed(call, error)) if isinstance(
                        error, CallTimedOut) else ToolFailed(failed(call, error)))
                    recorder = None
                result = await self.tool_failed(call, step, error)
        except RunError as error:
            if recorder is not None:
                recorder.finished(call, None, error)
            raise
        if recorder is not None:
            recorder.finished(call, result, None)
        return result

    async def tool_failed(self, call: Call, step: ast.Step, error: Exception):
        action = await self.hooks.on_tool_error(call, error) if self.hooks.on_tool_error else None
        if isinstance(action, Replace):
            return action.result
        if isinstance(action, Abort):
            raise RunError(f"step {call.step}: `{call.tool.name}` failed, and the run stops: {action.reason}", step.tool)
        raise ToolFailed(failed(call, error), step.tool)

    def validator(self, schema: Mapping):
        """The jsonschema validator of `schema`, made once per run (the schema kept, so its id stays its own)."""
        made = self.validators.get(id(schema))
        if made is None:
            from jsonschema.validators import validator_for

            made = self.validators[id(schema)] = (schema, validator_for(schema)(schema))
        return made[1]

    def validate(self, call: Call, step: ast.Step) -> None:
        """The real arguments against the tool's parameter schemas, before the call."""
        tool = call.tool
        for name, value in call.args.items():
            schema = tool.params.get(name)
            error = next(iter(self.validator(schema).iter_errors(value)), None) if schema else None
            if error is not None:
                raise ToolFailed(f"step {call.step}: argument `{name}` of `{tool.name}` is invalid at run time: "
                                 f"{error.message}", step.tool)

    def check_result(self, result, call: Call, step: ast.Step) -> None:
        """A result that breaks the tool's declared `returns` fails the step: later steps rely on it."""
        tool = call.tool
        if tool.returns is None:
            return
        error = next(iter(self.validator(tool.returns).iter_errors(result)), None)
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "the result"
            raise ToolFailed(f"step {call.step}: `{tool.name}` returned a result its declaration does not allow "
                             f"(at {where}: {error.message})", step.tool)


def failed(call: Call, error: Exception) -> str:
    """What the run says of a call that raised `error`."""
    return f"step {call.step}: `{call.tool.name}` failed: {type(error).__name__}: {error}"
