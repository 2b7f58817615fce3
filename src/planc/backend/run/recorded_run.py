"""A run recorded in the run store, from its first row to its last: what `planc run`, `replay` and `resume` do.

`RecordedRun.record` starts a new run: it keeps the files the run reads (planc.toml, its lock,
the policy) by hash, stores the plan as compiled and commits the run's row. `resume` continues
a run whose process died, in the same record; `replay` runs a recorded run again from its
record, writing nothing. `running` runs the plan in the caller's event loop, every event stamped with
the run's id, its number in the run and its time (`events.py`) and recorded, and commits how the run
ended: ok, error (an exit with status error), failed, interrupted (SIGINT or SIGTERM, or the task
awaiting it cancelled), or awaiting_approval (a call waits for a person: `approvals.py`); `execute`
is `running` in an event loop of its own, with the signals caught. Each run carries its `RunSpec`
(spec.py): a new run records it, a resume or a replay reads it back from the record. Every door
reaches these through the launcher (launch.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from planc.backend.calls.approvals import AwaitingApproval, waiting_gate
from planc.backend.calls.hooks import Hooks
from planc.backend.models.client import excerpt
from planc.backend.report.events import Stamp, fan_out
from planc.backend.run.interpreter import RunResult, run_plan
from planc.backend.run.recorders import Recorder, Replay, Resume
from planc.backend.run.spec import ReadFiles, RunSpec
from planc.backend.state.interrupts import Interrupted, Interrupts, cancelled_by
from planc.backend.state.values import RunError
from planc.clock import FixedClock, fixed
from planc.clock import current as current_clock
from planc.optimize.schedule import Schedule
from planc.passes.check import CheckResult
from planc.passes.policy.load import Policy
from planc.registry.loading.registry import Registry
from planc.registry.mcp.lock import lock_path
from planc.registry.settings.declarations import Executor
from planc.registry.tools.tool import Tool
from planc.store.run_store import RunStore, RunStoreError

if TYPE_CHECKING:
    from planc.backend.calls.ray_executor import RayExecutor


@attrs.define
class RecordedRun:
    """One run of a checked plan and its record; `store` is None for a replay, which writes nothing. `spec` is
    every choice that decides what it does, as it is recorded (a continued run's, read from its record)."""

    checked: CheckResult
    registry: Registry | None
    policy: Policy | None
    spec: RunSpec
    recorder: Recorder | Replay | Resume
    store: RunStore | None = None
    ended: Interrupted | None = None  # what the run said when its interruption was recorded
    store_named: str | None = None  # how `planc approve` must name the store, said when a call waits
    # The clock its record is stamped with when it was made under a fixed one (planc.clock): kept
    # in its options, so that every door that continues it stamps with the same.
    clock: FixedClock | None = None

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    @property
    def principal(self) -> str:
        return self.spec.principal

    @property
    def arguments(self) -> Mapping:
        return self.spec.arguments

    @classmethod
    def record(
        cls,
        store: RunStore,
        checked: CheckResult,
        spec: RunSpec,
        *,
        registry: Registry | None,
        policy: Policy | None,
        batch: tuple[str, int] | None = None,
    ) -> RecordedRun:
        """A new run of `checked` in `store`, `spec` kept with it (with the files it reads, its code tools, and
        what it was checked with: its approvals and its author's labels), so that a replay, a resume or an
        approval continues it with the same choices; `batch`: the batch and line it runs."""
        from planc.store.plan_steps import checked_step_rows
        from planc.store.stored import save_plan

        context = checked.context
        spec = attrs.evolve(
            spec,
            read=ReadFiles(**keep_read_files(store, registry, policy)),
            code_tools=code_tools(registry),
            principals=tuple(policy.principals) if policy is not None else (),
            approvals=context.approvals if context is not None else False,
            written_by=context.written_by if context is not None else frozenset(),
        )
        options = spec.to_record()
        fixed_clock = current_clock()
        if fixed_clock is not None:
            options["clock"] = fixed_clock.to_data()
        recorder = Recorder(
            store,
            store.start_run(
                save_plan(checked, registry=registry, policy=policy), spec.arguments, options, batch, checked_step_rows(checked)
            ),
        )
        return cls(checked, registry, policy, spec, recorder, store, clock=fixed_clock)

    @classmethod
    def resume(
        cls,
        store: RunStore,
        run: dict,
        checked: CheckResult,
        *,
        registry: Registry | None,
        policy: Policy | None,
        principal: str | None = None,
        approve: bool = False,
    ) -> RecordedRun:
        """`run` (a run that did not finish) continued in its own record with the choices it was recorded with,
        its calls approved as the run's were (`approve`: every effectful call, as `--approve` asks, whatever
        the run was made with); `principal`, when given, in place of the recorded one."""
        spec = RunSpec.from_record(run)
        spec = attrs.evolve(spec, approve=approve or spec.approve, principal=principal or spec.principal)
        return cls(
            checked, registry, policy, spec, Resume(store, run), store, clock=FixedClock.from_data(run["options"].get("clock"))
        )

    @classmethod
    def replay(
        cls, run: dict, checked: CheckResult, *, registry: Registry | None, policy: Policy | None, principal: str | None = None
    ) -> RecordedRun:
        """`run` again, every tool and model result from its record: nothing is called, nothing written."""
        spec = RunSpec.from_record(run)
        return cls(
            checked,
            registry,
            policy,
            attrs.evolve(spec, principal=principal or spec.principal),
            Replay(run),
            clock=FixedClock.from_data(run["options"].get("clock")),
        )

    def execute(
        self,
        hooks: Hooks = Hooks(),
        schedule: Schedule | None = None,
        interrupts: Interrupts | None = None,
        executor: RayExecutor | None = None,
    ) -> RunResult:
        """`running` in an event loop of its own: a RunError (the run failed, or waits: AwaitingApproval) once
        that is recorded, and Interrupted when SIGINT or SIGTERM stopped it (`interrupts`, in force since
        before the run was recorded; one of its own otherwise)."""
        with interrupts or Interrupts() as signals:
            try:
                return signals.run(self.running(hooks, schedule, executor))
            except Interrupted as error:
                raise self.interrupted(error, hooks) from None

    async def running(
        self,
        hooks: Hooks = Hooks(),
        schedule: Schedule | None = None,
        executor: RayExecutor | None = None,
        *,
        cancelled: str | None = None,
    ) -> RunResult:
        """Run the plan, with every event stamped and recorded, and record how it ended: ok, error, failed (a
        RunError, raised once recorded) or awaiting_approval (AwaitingApproval, with the calls that wait).
        Cancelled (a signal, or the program cancelled the task awaiting it), the run is recorded as
        interrupted, by `cancelled` when the caller knows why better than the task does, and the cancellation
        goes on. `executor`: as `run_plan` takes it."""
        with fixed(self.clock):
            return await self._running(hooks, schedule, executor, cancelled)

    async def _running(
        self, hooks: Hooks, schedule: Schedule | None, executor: RayExecutor | None, cancelled: str | None
    ) -> RunResult:
        hooks = self.recorded_hooks(hooks)
        if hooks.gate is None and self.spec.waits_for is not None and self.store is not None:
            assert not isinstance(self.recorder, Replay)  # a replay has no store
            hooks = attrs.evolve(hooks, gate=waiting_gate(self.recorder, self.spec.waits_for))
        try:
            result = await run_plan(
                self.checked,
                registry=self.registry,
                arguments=self.arguments,
                hooks=hooks,
                policy=self.policy,
                principal=self.principal,
                recorder=self.recorder,
                schedule=schedule,
                returns=self.spec.returns,
                executor=executor,
            )
        except Interrupted:
            raise
        except asyncio.CancelledError:
            self.interrupted(Interrupted(cancelled or cancelled_by()), hooks)
            raise
        except AwaitingApproval as waiting:
            raise self.waiting(waiting) from None
        except RunError as error:
            self._finish("failed", message=str(error))
            raise
        self._finish(result.status, result.kept(), result.message)
        return result

    def waiting(self, waiting: AwaitingApproval) -> AwaitingApproval:
        """Record that the run waits for a person's approval; what it then says of itself, with the calls that
        wait (as the store holds them)."""
        if self.store is None:  # a replay: the run waited here
            return waiting
        calls = self.store.awaiting(self.run_id)
        said = AwaitingApproval(waiting_words(self.run_id, calls, self.store_named), run_id=self.run_id, calls=calls)
        self._finish("awaiting_approval", message=str(said))
        return said

    def interrupted(self, error: Interrupted, hooks: Hooks = Hooks()) -> Interrupted:
        """Record that the run was interrupted (`error` says by what), once; what the run then says of itself."""
        if self.ended is not None:
            return self.ended
        if self.store is not None:
            error = Interrupted(
                f"{error}: run {self.run_id} is recorded as interrupted, and `planc resume {self.run_id}` continues it"
            )
        events = hooks.events if isinstance(hooks.events, Stamp) else self.recorded_hooks(hooks).events
        assert events is not None  # recorded hooks stamp every event
        with contextlib.suppress(RunError):  # an events file or a store that fails: the status says it
            events({"event": "run_finished", "status": "interrupted", "error": str(error), "error_type": type(error).__name__})
        self._finish("interrupted", message=str(error))
        self.ended = error
        return error

    def recorded_hooks(self, hooks: Hooks) -> Hooks:
        """`hooks` with every event stamped (`events.Stamp`, numbered after those already recorded) and also
        told to the recorder."""
        sink = fan_out(hooks.events, self.recorder.event)
        assert sink is not None  # the recorder's is one
        return attrs.evolve(hooks, events=Stamp(self.run_id, self.recorder.events, sink))

    def _finish(self, status: str, output: object = None, message: str | None = None) -> None:
        """Record how the run ended; when the store cannot, a RunStoreError saying both how it ended and
        that the record still says `running` (which a resume ends, from what was recorded)."""
        if self.store is None:
            return
        try:
            self.store.finish_run(self.run_id, status, output, message)
        except RunStoreError as error:
            ended = message if status in ("failed", "interrupted") and message else f"the run ended {status}"
            why = "either" if str(error) == message else f"({error})"
            raise RunStoreError(
                f"{ended}; and how it ended could not be recorded {why}: the store says the run is "
                f"still running, and `planc resume {self.run_id}` ends it from its record"
            ) from None


def choose_executor(
    registry: Registry | None, kind: str | None, address: str | None, recorded: Mapping | None = None
) -> Executor:
    """The executor a run uses (an `Executor` declaration): `kind` and `address` where given (a command's
    options), else as the run was recorded (a resume's `recorded` options), else planc.toml's `[executor]`.
    A ValueError for an address given to the local executor."""
    declared = registry.executor if registry is not None else Executor()
    if recorded is not None:
        declared = Executor(**recorded)
    if kind is not None and kind != declared.kind:
        declared = Executor(kind)
    if address is not None:
        if declared.kind != "ray":
            raise ValueError("a Ray address is only read with the Ray executor (--executor ray)")
        declared = attrs.evolve(declared, address=address)
    return declared


def connect_executor(how: Executor, registry: Registry | None, store: Path | None) -> RayExecutor | None:
    """The connected executor `how` declares, None for this process; RayUnavailable when it cannot connect."""
    if how.kind != "ray":
        return None
    from planc.backend.calls.ray_executor import RayExecutor

    folder = registry.folder if registry is not None else Path.cwd()
    return RayExecutor.connect(how.address, folder, store)


def keep_read_files(store: RunStore, registry: Registry | None, policy: Policy | None) -> dict:
    """The planc.toml, lock and policy a run reads, kept in the store by hash: replay reads them back,
    so a run replays as it ran whatever has changed in the project since."""
    read = {"config": None, "lock": None, "policy": store.keep_file(policy.text) if policy is not None else None}
    if registry is not None and registry.source is not None:
        try:
            read["config"] = store.keep_file(registry.source.read_text(encoding="utf-8"))
            lock = lock_path(registry.source)
            read["lock"] = store.keep_file(lock.read_text(encoding="utf-8")) if lock.is_file() else None
        except (OSError, UnicodeDecodeError):
            read["config"] = None  # it changed under us: replay reads the project's files instead
    return read


def code_tools(registry: Registry | None) -> dict:
    """The Python and SQL tools of `registry`, as data: a replay builds the registry from them rather than
    importing the modules of those declared in code or reading the databases of the SQL ones."""
    if registry is None:
        return {}
    return {name: tool.to_data() for name, tool in registry.tools.items() if tool.kind in ("python", "sql", "postgresql")}


def as_it_ran(store: RunStore, run: dict, principal: str) -> tuple[Registry | None, Policy | None] | None:
    """The registry and policy `run` ran with, from the files it kept; None when it kept none.

    A ConfigError or PolicyError when a kept file no longer loads (planc changed since).
    """
    from planc.passes.policy.load import check_principal, policy_from_text
    from planc.registry.loading.config import registry_from_text

    spec = RunSpec.from_record(run)
    read = spec.read
    if read is None or (read.config is None and spec.config is not None):
        return None  # recorded before runs kept their files, or its planc.toml could not be read
    registry = None
    if read.config is not None and spec.config is not None:
        lock = store.file(read.lock) if read.lock else None
        kept = spec.code_tools
        registry = registry_from_text(
            store.file(read.config),
            Path(spec.config),
            locked=lock is not None,
            lock_text=lock,
            code_tools={name: Tool.from_data(data) for name, data in kept.items()} if kept is not None else None,
        )
    policy = None
    if read.policy is not None:
        check_principal(principal)
        path = Path(spec.policy) if spec.policy else registry.policy if registry is not None else None
        assert path is not None  # a kept policy was read from --policy, or from planc.toml's `policy`
        policy = policy_from_text(store.file(read.policy), path, spec.principals)
    return registry, policy


def waiting_words(run_id: str, calls: list[dict], store: str | None = None) -> str:
    """What a run that waits says of itself: which calls wait, and the command that answers them (naming
    the run store with `--store` when `store` says a command would not find it by itself)."""
    lines = [f"run {run_id} waits for a person to approve {len(calls)} call{'s' if len(calls) != 1 else ''}:"]
    lines += [
        f"  call {call['sequence']} (step {call['step']}): {call['tool']} "
        f"{excerpt(json.dumps(call['input'], ensure_ascii=False), 100)}: {call['asks']}"
        for call in calls
    ]
    command = f"planc approve {run_id}" + (f" --store {shlex.quote(store)}" if store else "")
    lines.append(
        f"`{command}` approves it and continues the run; "
        f"`{command} --deny` refuses it" + (" (give --call N: which call)" if len(calls) > 1 else "")
    )
    return "\n".join(lines)
