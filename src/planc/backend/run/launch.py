"""The one launcher every door runs a plan through (`planc run`, `resume`, `replay`, `batch`, `plan
--run`, `approve`, MCP's `run_plan`, `planc.run_async` and what is built on it), in one order: the
arguments checked against the plan, the store opened, the run recorded (or its record taken up
again), run, its end recorded, the store closed. A door only renders what it emits and returns.

The arguments are checked before anything is recorded: a declared plan's `params` (`run_arguments`),
every `$args.NAME` given, and the plan checked again with each argument typed by its value, so an
argument of the wrong type is refused here (`ArgumentsRefused`, with the diagnostics) and never
found at the first call that reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from planc.backend.calls.hooks import Hooks
from planc.backend.run.interpreter import RunResult, run_arguments, run_plan
from planc.backend.run.recorded_run import RecordedRun, choose_executor, connect_executor
from planc.backend.run.spec import RunSpec, RunWiring, file_path
from planc.backend.state.interrupts import Interrupted, Interrupts
from planc.backend.state.values import RunError
from planc.optimize.schedule import Schedule
from planc.passes.check import CheckResult, recheck_arguments
from planc.passes.cost.budget import Budget
from planc.passes.policy.load import DEFAULT_PRINCIPAL, Policy
from planc.registry.loading.registry import Registry
from planc.registry.tools.schemas import type_of
from planc.store.run_store import RunStore


class ArgumentsRefused(RunError):
    """The run's arguments do not fit its plan: nothing ran and nothing was recorded. `checked` is
    the plan checked with the arguments' types when that is what refused them (its diagnostics say
    where)."""

    def __init__(self, message: str, checked: CheckResult | None = None) -> None:
        super().__init__(message)
        self.checked = checked


def checked_arguments(checked: CheckResult, arguments: Mapping) -> dict:
    """The arguments a run of `checked` gets (a declared plan's defaults filled in), or
    ArgumentsRefused."""
    try:
        arguments = run_arguments(checked, arguments)
    except RunError as error:
        raise ArgumentsRefused(str(error)) from None
    context = checked.context
    # `$args` the check did not type: checked again with each one's type, as a batch checks each
    # line
    if arguments and context is not None and context.arguments is None:
        typed = recheck_arguments(checked, {name: type_of(value) for name, value in arguments.items()})
        errors = [each for each in typed.diagnostics if each.is_error]
        if errors:
            listed = "; ".join(f"{each.code} {each.span.start.line}:{each.span.start.column} {each.message}" for each in errors)
            raise ArgumentsRefused(f"the arguments do not fit the plan: {listed}", typed)
    return arguments


# The run recorded in the store, or its record taken up again (a replay's, given no store).
Start = Callable[[RunStore | None], RecordedRun]


@attrs.define
class Launch:
    """One run from its checked arguments to the last row of its record: `run` (in the caller's
    event loop) or `run_to_end` (in one of its own, SIGINT and SIGTERM ending it as interrupted)."""

    checked: CheckResult
    spec: RunSpec
    wiring: RunWiring
    registry: Registry | None
    policy: Policy | None
    start: Start  # the run recorded, or its record taken up again (a replay's is given no store)
    fresh: bool = False  # a new run: not recorded when the wiring has no store
    recorded: RecordedRun | None = None  # once it is recorded

    @classmethod
    def new(
        cls,
        checked: CheckResult,
        spec: RunSpec,
        wiring: RunWiring,
        *,
        registry: Registry | None,
        policy: Policy | None,
    ) -> Launch:
        """A new run of `checked`; ArgumentsRefused (nothing recorded) when `spec`'s arguments do
        not fit it."""
        spec = attrs.evolve(spec, arguments=checked_arguments(checked, spec.arguments))

        def record(store: RunStore | None) -> RecordedRun:
            assert store is not None  # a new run without a store is run unrecorded
            batch = launch.wiring.batch
            return RecordedRun.record(store, checked, spec, registry=registry, policy=policy, batch=batch)

        launch = cls(checked, spec, wiring, registry, policy, record, fresh=True)
        return launch

    @classmethod
    def continued(
        cls,
        checked: CheckResult,
        spec: RunSpec,
        wiring: RunWiring,
        start: Start,
        *,
        registry: Registry | None,
        policy: Policy | None,
    ) -> Launch:
        """A recorded run taken up again by `start` (a resume, an approval's answer, a replay):
        `spec` is what its record says it was started with."""
        return cls(checked, spec, wiring, registry, policy, start)

    async def run(self) -> RunResult:
        """Open the store, record the run (or take it up), run it, record how it ended, close the
        store."""
        connected = self.wiring.executor
        owned = connected is None and self.spec.executor.kind != "local"
        if owned:
            connected = connect_executor(self.spec.executor, self.registry, self._store_path())
        try:
            if self.fresh and self.wiring.store is None:
                return await run_plan(
                    self.checked,
                    registry=self.registry,
                    arguments=self.spec.arguments,
                    hooks=self.wiring.hooks,
                    policy=self.policy,
                    principal=self.spec.principal,
                    schedule=self.wiring.schedule,
                    returns=self.spec.returns,
                    executor=connected,
                )
            store, opened = self._open_store()  # a replay's is None: it writes nothing
            try:
                self.recorded = self.start(store)
                self.recorded.store_named = self.wiring.store_named
                if self.wiring.recorded is not None:
                    self.wiring.recorded(self.recorded.run_id)
                return await self.recorded.running(
                    self.wiring.hooks,
                    self.wiring.schedule,
                    connected,
                    cancelled=self.wiring.cancelled,
                )
            finally:
                if opened and store is not None:
                    store.close()
        finally:
            if owned and connected is not None:
                connected.close()

    def run_to_end(self, interrupts: Interrupts | None = None) -> RunResult:
        """`run` in an event loop of its own: Interrupted when SIGINT or SIGTERM stopped it, once
        recorded (`interrupts`: in force since before the run was recorded; one of its own
        otherwise)."""
        with interrupts or Interrupts() as signals:
            try:
                return signals.run(self.run())
            except Interrupted as error:
                if self.recorded is None:
                    raise
                raise self.recorded.interrupted(error, self.wiring.hooks) from None

    def _open_store(self) -> tuple[RunStore | None, bool]:
        """The run store, and whether it was opened here (and is closed here)."""
        if self.wiring.store is None or isinstance(self.wiring.store, RunStore):
            return self.wiring.store, False
        return RunStore(self.wiring.store), True

    def _store_path(self) -> Path | None:
        store = self.wiring.store
        if store is None:
            return None
        return store.path if isinstance(store, RunStore) else Path(store)


async def run_async(
    checked: CheckResult,
    *,
    arguments: Mapping | None = None,
    hooks: Hooks = Hooks(),
    registry: Registry | None = None,
    policy: Policy | None = None,
    principal: str | None = None,
    store: str | Path | None = None,
    schedule: Schedule | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    approve: bool = False,
) -> RunResult:
    """Run `checked` (what `planc.check` returned, without errors) in the running event loop; its
    result.

    It runs against what it was checked with: the registry, policy and principal of its check,
    unless given here. `arguments` are its `$args` (checked against a declared plan's `params`).
    With `store` (a path), the run is recorded there as `planc run` records it, so `planc replay`
    and `planc resume` can take it up; cancelling the task that awaits it ends it as interrupted,
    recorded, and resumable. `executor` ("local" or "ray"; default: planc.toml's `[executor]`) and
    `ray_address` say where the Python tool calls of loop items and scheduled steps are made, as
    `planc run --executor` does. A RunError says what failed and where; RayUnavailable, that the Ray
    cluster cannot be reached (nothing ran).

    With `store` and no gate in `hooks`, a call a person must approve waits in the store: every
    effectful call with `approve` (as `planc run --approve` with no terminal), and a call the policy
    flags for where its values came from when `checked` was checked with `approvals=True`. The run
    then raises AwaitingApproval (its `run_id`, and its `calls` that wait), and `planc.approve`
    continues it, from any process.
    """
    context = checked.context
    registry = registry if registry is not None else (context.registry if context is not None else None)
    policy = policy if policy is not None else (context.policy if context is not None else None)
    principal = principal or (context.principal if context is not None else DEFAULT_PRINCIPAL)
    if approve and store is None and hooks.gate is None:
        raise ValueError("approve=True needs a store, where a call waits for its approval, or a gate in hooks")
    spec = RunSpec(
        principal=principal,
        approve=approve,
        arguments=arguments or {},
        budget=context.budget if context is not None else Budget(),
        optimize=schedule is not None,
        executor=choose_executor(registry, executor, ray_address),
        config=file_path(registry.source) if registry is not None else None,
    )
    wiring = RunWiring(store=store, hooks=hooks, schedule=schedule)
    return await Launch.new(checked, spec, wiring, registry=registry, policy=policy).run()


def run(checked: CheckResult, **options: Any) -> RunResult:
    """`run_async` in an event loop of its own, SIGINT and SIGTERM ending the run as interrupted
    (Interrupted); the options are the same. Inside a running event loop, await `run_async` instead
    (a RuntimeError says so, and nothing runs)."""
    with Interrupts() as signals:
        return signals.run(run_async(checked, **options))
