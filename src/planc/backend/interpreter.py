"""Run a checked plan (DESIGN section 7): validate, run the steps, finish.

Steps run in text order, or as the optimizer's schedule allows (`planc run
--optimize`); `map` runs up to `concurrency` items at once. Every
real tool dispatch goes through one path (`_dispatch`): the policy decides with
the real arguments, the arguments are validated against the tool's schema, the
gate is asked, the tool is called, its result is validated against `returns`,
and events are sent. Control steps are intercepted here and never dispatched.
"""

from __future__ import annotations

import asyncio
from collections import ChainMap
from collections.abc import Mapping

import attrs

from planc.backend.hooks import Abort, Call, Hooks, Proceed, Replace, Skip
from planc.backend.mcp_runtime import McpRuntime
from planc.backend.providers import call_provider
from planc.backend.values import RunError, Scope, ToolFailed, evaluate, render, truth
from planc.passes.check import CheckResult
from planc.optimize.schedule import Schedule
from planc.registry.builtins import CONTROL_STEPS
from planc.registry.registry import Registry
from planc.syntax import ast
from planc.syntax.steps import step_blocks


@attrs.frozen
class RunResult:
    value: object  # the plan's result: its last top-level step's, or an exit's output
    status: str = "ok"  # "ok" or "error" (an exit step with status error)
    message: str | None = None


class Exited(Exception):
    def __init__(self, status: str, message: str | None, output) -> None:
        super().__init__(message)
        self.status, self.message, self.output = status, message, output


async def run_plan(checked: CheckResult, *, registry: Registry | None = None, arguments: Mapping | None = None,
                   hooks: Hooks = Hooks(), policy=None, principal: str = 'User::"anonymous"',
                   recorder=None, schedule: Schedule | None = None) -> RunResult:
    """Run `checked` (a plan `planc.check` accepted); RunError says what failed and where.

    With a `schedule` of its steps (`planc.passes.optimize`), each top-level step starts as soon
    as the steps it waits for have finished, rather than after the step before it.

    `recorder` (the run store's, DESIGN section 7), if given, is told of every real tool call:
    `recorder.replayed(call)` before it (a Skip: use its result instead of calling; None: call),
    `recorder.started(call)` just before calling, `recorder.finished(call, result, error)` after;
    model inferences are told the same way (`planc.backend.model_calls`). A recorder whose
    `calls_tools` is false (a replay) answers every call, so no MCP server is started.
    """
    if not checked.ok:
        raise RunError("the plan has errors: `planc check` it first")
    run = _Run(checked, registry, dict(arguments or {}), hooks, policy, principal)
    run.recorder = recorder
    run.missing_arguments()
    run.emit("run_started")
    try:
        if recorder is None or recorder.calls_tools:  # a replay calls none: no server is started
            await run.mcp.open()  # the MCP servers the run may call, checked against the lock before any step
        if schedule is None:
            value = await run.pipelines(checked.plan.pipelines, run.scope, prefix="", suffix="", in_loop=False)
        else:
            value = await run.scheduled(checked.plan.pipelines, schedule, run.scope)
        result = RunResult(value)
    except Exited as exit_:
        result = RunResult(exit_.output, exit_.status, exit_.message)
    finally:
        await run.mcp.aclose()  # never raises: the servers stop whatever happened
        await run.close_models()
    run.emit("run_finished", status=result.status)
    return result


class _Run:
    def __init__(self, checked: CheckResult, registry, arguments, hooks, policy, principal) -> None:
        self.checked, self.registry, self.hooks = checked, registry, hooks
        self.policy, self.principal = policy, principal
        self.tools = checked.resolution.tools
        self.scope = Scope(ChainMap(), checked.resolution.targets, arguments)
        self.models: dict = {}  # role -> ModelClient, opened on first use
        self.validators: dict[int, tuple] = {}  # id(schema) -> (schema, its jsonschema validator)
        self.mcp = McpRuntime(checked, registry)  # its servers start in run_plan
        self.recorder = None  # see run_plan

    def model(self, role: str, step: ast.Step, path: str):
        """The model of `role` as the step at `path` asks it, every inference through the recorder."""
        from planc.backend.model_calls import StepModel

        if self.recorder is None or self.recorder.calls_tools:
            self.client(role, step, path)  # a model that is not configured fails here, before the step asks it
        return StepModel(lambda: self.client(role, step, path), role, path, self.recorder, step)

    def client(self, role: str, step: ast.Step, path: str):
        """The model client of `role` (`[models.<role>]`, else `[models.default]`), made once per run."""
        from planc.backend.models import ModelClient, ModelError

        if role not in self.models:
            if self.registry is None:
                raise RunError(f"step {path}: a model is needed, and no planc.toml declares `[models.*]`", step.tool)
            try:
                self.models[role] = ModelClient.for_role(self.registry, role)
            except ModelError as error:
                raise RunError(f"step {path}: {error}", step.tool) from None
        return self.models[role]

    async def close_models(self) -> None:
        for client in self.models.values():
            await client.aclose()

    async def judge(self, question: str, step: ast.Step, path: str) -> bool:
        """An `infer` question put to the `judge` role: yes or no."""
        from planc.backend.agent_loop import ask_yes_no
        from planc.backend.models import ModelError

        self.emit("inference_started", step=path, question=question)
        try:
            answer = await ask_yes_no(self.model("judge", step, path), question)
        except ModelError as error:
            raise RunError(f"step {path}: {error}", step.tool) from None
        self.emit("inference_finished", step=path, answer=answer)
        return answer

    def missing_arguments(self) -> None:
        """A `$args.NAME` the run does not give is refused before any step runs."""
        for ref, target in self.checked.resolution.targets.items():
            if target == "args" and ref.accessors and isinstance(ref.accessors[0], ast.Field):
                name = ref.accessors[0].name
                if name not in self.scope.arguments:
                    raise RunError(f"the plan reads `$args.{name}`, but the run has no argument `{name}` "
                                   f"(give it with `--arg {name}=VALUE`)", ref)

    def emit(self, event: str, **fields) -> None:
        if self.hooks.events is not None:
            self.hooks.events({"event": event, **fields})

    async def pipelines(self, pipelines, scope: Scope, prefix: str, suffix: str, in_loop: bool):
        """Run `pipelines` (a plan's or a block's); the result is the last step's.

        Step paths are `prefix` + number + `suffix`: `3/do.2` + `[17]` in a map's 18th item.
        """
        number, result = 0, None
        for pipeline in pipelines:
            piped = _NOTHING
            for step in pipeline.steps:
                number += 1
                result = await self.step(step, f"{prefix}{number}{suffix}", scope, piped, in_loop)
                scope.results[step] = result
                piped = result
        return result

    async def scheduled(self, pipelines, schedule: Schedule, scope: Scope):
        """Run the top-level `pipelines`, each step once the steps `schedule` says it waits for have finished.

        The run fails with the first failing step in text order, as it would one step after the other:
        a failure cancels the steps after it, and only steps that change nothing run beside it, since
        a step that changes something waits for every step before it. The result is the last step's.
        """
        tasks: list[asyncio.Task] = []
        index: dict[ast.Step, int] = {}

        async def one(step: ast.Step, path: str, piped_from: ast.Step | None):
            waits = [tasks[index[earlier]] for earlier in schedule.waits[step]]
            pending = [task for task in waits if not task.done()]
            if pending:
                await asyncio.wait(pending)  # never cancels them, unlike awaiting a task
            if any(task.cancelled() or task.exception() is not None for task in waits):
                raise asyncio.CancelledError  # an earlier step failed: its error is the run's
            piped = _NOTHING if piped_from is None else scope.results[piped_from]
            try:
                result = await self.step(step, path, scope, piped, False)
            except Exception:
                for later in tasks[index[step] + 1:]:
                    later.cancel()
                raise
            scope.results[step] = result
            return result

        for pipeline in pipelines:
            piped_from = None
            for step in pipeline.steps:
                index[step] = len(tasks)
                tasks.append(asyncio.ensure_future(one(step, str(len(tasks) + 1), piped_from)))
                piped_from = step
        result = None
        try:
            for task in tasks:  # in text order: the first failure is the run's
                result = await task
            return result
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def step(self, step: ast.Step, path: str, scope: Scope, piped, in_loop: bool):
        self.emit("step_started", step=path, tool=step.tool.text)
        name = step.tool.text
        if name in CONTROL_STEPS:
            result = await getattr(self, f"control_{name}")(step, path, scope, piped, in_loop)
        else:
            tool = self.tools.get(step)
            if tool is None:
                raise RunError(f"step {path}: no registry declares the tool `{name}`", step.tool)
            args = {arg.name.text: evaluate(arg.value, scope) for arg in step.args}
            if piped is not _NOTHING and tool.pipe:
                args[tool.pipe] = piped
            result = await self.dispatch(Call(path, tool, args), step, in_loop)
        self.emit("step_finished", step=path, result=result)
        return result

    async def dispatch(self, call: Call, step: ast.Step, in_loop: bool):
        """The one path every real tool call takes."""
        tool = call.tool
        if self.policy is not None:
            from planc.passes.policy.decide import decide

            decision = decide(self.policy, self.principal, tool, call.args, step=call.step, in_loop=in_loop)
            if not decision.allowed:
                who = ", ".join(rule.name for rule in decision.policies) or "no policy permits it"
                raise RunError(f"step {call.step}: the policy denies calling `{tool.name}` ({who})", step.tool)
        self.validate(call.args, tool, call.step, step)
        gate = await self.hooks.gate(call) if self.hooks.gate else Proceed()
        if isinstance(gate, Abort):
            raise RunError(f"step {call.step}: stopped before calling `{tool.name}`: {gate.reason}", step.tool)
        self.emit("tool_started", step=call.step, tool=tool.name, input=dict(call.args))
        replayed = self.recorder.replayed(call, step) if self.recorder is not None else None
        if isinstance(gate, Skip):
            result = gate.result
        elif replayed is not None:
            result = replayed.result
        else:
            result = await self.call_recorded(call, step)
        self.check_result(result, tool, call.step, step)
        self.emit("tool_finished", step=call.step, tool=tool.name, result=result)
        return result

    async def call_recorded(self, call: Call, step: ast.Step):
        """Call the tool, the recorder (if any) told before and after."""
        if self.recorder is not None:
            self.recorder.started(call)
        try:
            if call.tool.provider.startswith("plan:"):
                result = await self.call_plan(call, step)
            else:
                try:
                    result = await call_provider(call.tool, call.args, self.registry, self.mcp)
                except RunError:
                    raise
                except Exception as error:  # whatever the tool raised is the tool's error
                    result = await self.tool_failed(call, step, error)
        except RunError as error:
            if self.recorder is not None:
                self.recorder.finished(call, None, error)
            raise
        if self.recorder is not None:
            self.recorder.finished(call, result, None)
        return result

    def validator(self, schema: Mapping):
        """The jsonschema validator of `schema`, made once per run (the schema kept, so its id stays its own)."""
        made = self.validators.get(id(schema))
        if made is None:
            from jsonschema.validators import validator_for

            made = self.validators[id(schema)] = (schema, validator_for(schema)(schema))
        return made[1]

    def validate(self, args: Mapping, tool, path: str, step) -> None:
        """The real arguments against the tool's parameter schemas, before the call."""
        for name, value in args.items():
            schema = tool.params.get(name)
            error = next(iter(self.validator(schema).iter_errors(value)), None) if schema else None
            if error is not None:
                raise ToolFailed(f"step {path}: argument `{name}` of `{tool.name}` is invalid at run time: "
                                 f"{error.message}", step.tool)

    def check_result(self, result, tool, path: str, step) -> None:
        """A result that breaks the tool's declared `returns` fails the step: later steps rely on it."""
        if tool.returns is None:
            return
        error = next(iter(self.validator(tool.returns).iter_errors(result)), None)
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "the result"
            raise ToolFailed(f"step {path}: `{tool.name}` returned a result its declaration does not allow "
                             f"(at {where}: {error.message})", step.tool)

    async def call_plan(self, call: Call, step: ast.Step):
        """A declared plan called as a tool: checked with its `params`, then run with the call's arguments.

        Its events carry step paths under the calling step's: `2/1`, `2/3/do.1[0]`.
        """
        from planc.passes.check import check

        name = call.tool.provider[len("plan:"):]
        file = self.registry.plans.file(name)
        params = file.declaration.params
        if file.text is None:
            raise RunError(f"step {call.step}: the plan `{name}`: {file.problem}", step.tool)
        checked = check(file.text, registry=self.registry, arguments=params, policy=self.policy,
                        principal=self.principal)
        if not checked.ok:
            first = next(d for d in checked.diagnostics if d.is_error)
            raise RunError(f"step {call.step}: the plan `{name}` ({file.declaration.written}) has errors: "
                           f"{first.code} {first.message}", step.tool)
        defaults = {param: schema["default"] for param, schema in params.items() if "default" in schema}
        events = self.hooks.events
        nested = attrs.evolve(self.hooks, events=(lambda event: events(
            {**event, "step": f"{call.step}/{event['step']}"} if "step" in event else event)) if events else None)
        result = await run_plan(checked, registry=self.registry, arguments={**defaults, **call.args}, hooks=nested,
                                policy=self.policy, principal=self.principal)
        if result.status == "error":
            raise ToolFailed(f"step {call.step}: the plan `{name}` exited with status error: {result.message}",
                             step.tool)
        return result.value

    async def tool_failed(self, call: Call, step: ast.Step, error: Exception):
        action = await self.hooks.on_tool_error(call, error) if self.hooks.on_tool_error else None
        if isinstance(action, Replace):
            return action.result
        if isinstance(action, Abort):
            raise RunError(f"step {call.step}: `{call.tool.name}` failed, and the run stops: {action.reason}", step.tool)
        raise ToolFailed(f"step {call.step}: `{call.tool.name}` failed: {type(error).__name__}: {error}", step.tool)

    # --- control steps ----------------------------------------------------------------------

    def blocks(self, step: ast.Step) -> dict[str, tuple[ast.Block, str]]:
        return {name: (block, name) for block, name in step_blocks(step)}

    async def block(self, step, name: str, path: str, scope: Scope, in_loop: bool, item: int | None = None):
        """Run the block of `step`'s argument `name`, its results visible only inside it."""
        block, label = self.blocks(step)[name]
        inner = attrs.evolve(scope, results=scope.results.new_child())
        suffix = "" if item is None else f"[{item}]"
        return await self.pipelines(block.pipelines, inner, f"{path}/{label}.", suffix, in_loop)

    def value(self, step, name, scope, piped=None, default=None):
        arg = step.arg(name)
        if arg is not None:
            return evaluate(arg.value, scope)
        return piped if piped is not None and piped is not _NOTHING else default

    def items(self, step, path, scope, piped) -> list:
        over = self.value(step, "over", scope, piped)
        if not isinstance(over, list):
            raise RunError(f"step {path}: `{step.tool.text}` needs a list to go over", step.tool)
        return over

    async def each_item(self, step, path, scope, items: list, concurrency: int = 1) -> list:
        """The `do` block's result for every item, at most `concurrency` items at once, in order."""
        limit = asyncio.Semaphore(concurrency)

        async def one(index, item):
            async with limit:
                return await self.block(step, "do", path, scope.bind(item=item, index=index), True, item=index)

        return list(await asyncio.gather(*(one(index, item) for index, item in enumerate(items))))

    async def control_map(self, step, path, scope, piped, in_loop):
        items = self.items(step, path, scope, piped)
        return await self.each_item(step, path, scope, items, self.value(step, "concurrency", scope, default=1))

    async def control_filter(self, step, path, scope, piped, in_loop):
        items = self.items(step, path, scope, piped)
        if step.arg("where") is not None:
            where = step.arg("where").value
            return [item for item in items
                    if truth(evaluate(where, attrs.evolve(scope.bind(item=item), fields=item)), where)]
        if step.arg("do") is not None:
            kept = await self.each_item(step, path, scope, items)
            return [item for item, keep in zip(items, kept) if truth(keep, step.arg("do").value)]
        question = step.arg("infer").value
        kept = [await self.judge(render(question, scope.bind(item=item, index=index)), step, f"{path}[{index}]")
                for index, item in enumerate(items)]
        return [item for item, keep in zip(items, kept) if keep]

    async def control_reduce(self, step, path, scope, piped, in_loop):
        accumulator = self.value(step, "initial", scope)
        for index, item in enumerate(self.items(step, path, scope, piped)):
            bound = scope.bind(item=item, index=index, accumulator=accumulator)
            accumulator = await self.block(step, "do", path, bound, True, item=index)
        return accumulator

    async def control_decide(self, step, path, scope, piped, in_loop):
        branch = "then" if await self.condition(step, path, scope) else "else"
        if step.arg(branch) is None:
            return None
        return await self.block(step, branch, path, scope, in_loop)

    async def control_exit(self, step, path, scope, piped, in_loop):
        value = self.value(step, "value", scope, piped)
        if (step.arg("when") or step.arg("infer")) is not None and not await self.condition(step, path, scope):
            return value
        output = self.value(step, "output", scope) if step.arg("output") is not None else value
        raise Exited(self.value(step, "status", scope, default="ok"), self.value(step, "message", scope), output)

    async def control_reshape(self, step, path, scope, piped, in_loop):
        return self.value(step, "value", scope)

    async def control_ask(self, step, path, scope, piped, in_loop):
        question = self.value(step, "question", scope)
        answer = await self.hooks.interlocutor(question) if self.hooks.interlocutor else None
        if answer is not None:
            return answer
        unanswered = self.value(step, "when_unanswered", scope, default="fail")
        if unanswered == "default":
            return self.value(step, "default", scope)
        if unanswered == "skip":
            return None
        raise RunError(f"step {path}: nobody answered `{question}`", step.tool)

    async def condition(self, step, path, scope) -> bool:
        """A `decide`'s or `exit`'s `when` condition, or its `infer` question put to the judge."""
        if step.arg("when") is not None:
            when = step.arg("when").value
            return truth(evaluate(when, scope), when)
        return await self.judge(evaluate(step.arg("infer").value, scope), step, path)

    async def control_agent(self, step, path, scope, piped, in_loop):
        from planc.backend.agent_loop import ToolFailure, run_agent
        from planc.backend.models import ModelError
        from planc.analysis.agent_tools import matching_tools

        client = self.model(self.value(step, "model", scope, default="chat"), step, path)
        tools = matching_tools(self.registry, self.value(step, "tools", scope, default=["*"]))
        calls = 0

        async def call_tool(name: str, arguments: dict):
            nonlocal calls
            calls += 1
            call = Call(f"{path}/agent.{calls}/{name}", self.registry.tools[name], arguments)
            try:
                return await self.dispatch(call, step, in_loop)
            except ToolFailed as error:  # goes back to the model, which may try again
                raise ToolFailure(str(error)) from None

        try:
            return await run_agent(client, self.value(step, "prompt", scope), self.value(step, "output_schema", scope),
                                   tools, call_tool, context=self.value(step, "context", scope, piped),
                                   max_iterations=self.value(step, "max_iterations", scope, default=8),
                                   system_prompt=self.value(step, "system_prompt", scope))
        except ModelError as error:
            raise RunError(f"step {path}: {error}", step.tool) from None


_NOTHING = object()  # no piped input
