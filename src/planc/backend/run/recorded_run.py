"""A run recorded in the run store, from its first row to its last: what `planc run`, `replay` and `resume` do.

`RecordedRun.record` starts a new run: it keeps the files the run reads (planc.toml, its lock,
the policy) by hash, stores the plan as compiled and commits the run's row. `resume` continues
a run whose process died, in the same record; `replay` runs a recorded run again from its
record, writing nothing. `running` runs the plan in the caller's event loop, every event stamped with
the run's id, its number in the run and its time (`events.py`) and recorded, and commits how the run
ended: ok, error (an exit with status error), failed, interrupted (SIGINT or SIGTERM, or the task
awaiting it cancelled), or awaiting_approval (a call waits for a person: `approvals.py`); `execute`
is `running` in an event loop of its own, with the signals caught. `run_async` and `run` are the API's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from pathlib import Path

import attrs

from planc.backend.calls.approvals import EFFECTFUL, FLAGGED, AwaitingApproval, waiting_gate
from planc.backend.models.client import excerpt
from planc.backend.calls.hooks import Hooks
from planc.backend.report.events import Stamp, fan_out
from planc.backend.run.interpreter import RunResult, run_arguments, run_plan
from planc.backend.state.interrupts import Interrupted, Interrupts, cancelled_by
from planc.backend.state.values import RunError
from planc.clock import FixedClock, fixed
from planc.clock import current as current_clock
from planc.optimize.schedule import Schedule
from planc.passes.check import CheckResult
from planc.passes.policy.load import DEFAULT_PRINCIPAL, Policy
from planc.registry.declarations import Executor
from planc.registry.lock import lock_path
from planc.registry.registry import Registry
from planc.registry.tool import Tool
from planc.store.recorders import Recorder, Replay, Resume
from planc.store.run_store import RunStore, RunStoreError


@attrs.define
class RecordedRun:
    """One run of a checked plan and its record; `store` is None for a replay, which writes nothing."""

    checked: CheckResult
    registry: Registry | None
    policy: Policy | None
    principal: str
    arguments: Mapping
    recorder: Recorder | Replay | Resume
    store: RunStore | None = None
    returns: Mapping | None = None  # what the result must conform to: the `returns` of a declared plan run itself
    # Whose approval a call waits for in the store when no gate is given: approvals.EFFECTFUL (`--approve`),
    # approvals.FLAGGED (checked for a person to let flagged calls through), or None (no call waits).
    waits_for: str | None = None
    ended: Interrupted | None = None  # what the run said when its interruption was recorded
    # The clock its record is stamped with when it was made under a fixed one (planc.clock): kept
    # in its options, so that every door that continues it stamps with the same.
    clock: FixedClock | None = None

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    @classmethod
    def record(cls, store: RunStore, checked: CheckResult, *, registry: Registry | None, policy: Policy | None,
               principal: str, arguments: Mapping, options: Mapping,
               batch: tuple[str, int] | None = None) -> RecordedRun:
        """A new run of `checked` in `store`; `options` (how it runs: config, policy, finish, ...) are kept
        with it, so that a replay or a resume runs it the same way; `batch`: the batch and line it runs."""
        from planc.store.plan_steps import checked_step_rows
        from planc.store.stored import save_plan

        # `approvals`: it was checked for a person to let flagged calls through, so its replay and resume are too.
        options = {**options, "principal": principal, "read": keep_read_files(store, registry, policy),
                   "principals": list(policy.principals) if policy is not None else [],
                   "code_tools": code_tools(registry),
                   "approvals": checked.context.approvals if checked.context is not None else False,
                   # `written_by`: whoever wrote it gave its literals their labels, in its replay and resume too.
                   "written_by": sorted(checked.context.written_by) if checked.context is not None else []}
        fixed_clock = current_clock()
        if fixed_clock is not None:
            options["clock"] = fixed_clock.to_data()
        recorder = Recorder(store, store.start_run(save_plan(checked, registry=registry, policy=policy), arguments,
                                                   options, batch, checked_step_rows(checked)))
        return cls(checked, registry, policy, principal, arguments, recorder, store, options.get("returns"),
                   waits_for(options), clock=fixed_clock)

    @classmethod
    def resume(cls, store: RunStore, run: dict, checked: CheckResult, *, registry: Registry | None,
               policy: Policy | None, principal: str, approve: bool = False) -> RecordedRun:
        """`run` (a run that did not finish) continued in its own record, its calls approved as the run's were
        (`approve`: every effectful call, as `--approve` asks, whatever the run was made with)."""
        options = {**run["options"], "approve": approve or run["options"].get("approve", False)}
        return cls(checked, registry, policy, principal, run["arguments"], Resume(store, run), store,
                   options.get("returns"), waits_for(options),
                   clock=FixedClock.from_data(options.get("clock")))

    @classmethod
    def replay(cls, run: dict, checked: CheckResult, *, registry: Registry | None, policy: Policy | None,
               principal: str) -> RecordedRun:
        """`run` again, every tool and model result from its record: nothing is called, nothing written."""
        return cls(checked, registry, policy, principal, run["arguments"], Replay(run),
                   returns=run["options"].get("returns"),
                   clock=FixedClock.from_data(run["options"].get("clock")))

    def execute(self, hooks: Hooks = Hooks(), schedule: Schedule | None = None,
                interrupts: Interrupts | None = None, executor=None) -> RunResult:
        """`running` in an event loop of its own: a RunError (the run failed, or waits: AwaitingApproval) once
        that is recorded, and Interrupted when SIGINT or SIGTERM stopped it (`interrupts`, in force since
        before the run was recorded; one of its own otherwise)."""
        with interrupts or Interrupts() as signals:
            try:
                return signals.run(self.running(hooks, schedule, executor))
            except Interrupted as error:
                raise self.interrupted(error, hooks) from None

    async def running(self, hooks: Hooks = Hooks(), schedule: Schedule | None = None, executor=None, *,
                      cancelled: str | None = None) -> RunResult:
        """Run the plan, with every event stamped and recorded, and record how it ended: ok, error, failed (a
        RunError, raised once recorded) or awaiting_approval (AwaitingApproval, with the calls that wait).
        Cancelled (a signal, or the program cancelled the task awaiting it), the run is recorded as
        interrupted, by `cancelled` when the caller knows why better than the task does, and the cancellation
        goes on. `executor`: as `run_plan` takes it."""
        with fixed(self.clock):
            return await self._running(hooks, schedule, executor, cancelled)

    async def _running(self, hooks: Hooks, schedule: Schedule | None, executor: object | None,
                       cancelled: str | None) -> RunResult:
        hooks = self.recorded_hooks(hooks)
        if hooks.gate is None and self.waits_for is not None and self.store is not None:
            hooks = attrs.evolve(hooks, gate=waiting_gate(self.recorder, self.waits_for))
        try:
            result = await run_plan(self.checked, registry=self.registry, arguments=self.arguments,
                                    hooks=hooks, policy=self.policy, principal=self.principal,
                                    recorder=self.recorder, schedule=schedule, returns=self.returns,
                                    executor=executor)
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
        said = AwaitingApproval(waiting_words(self.run_id, calls), run_id=self.run_id, calls=calls)
        self._finish("awaiting_approval", message=str(said))
        return said

    def interrupted(self, error: Interrupted, hooks: Hooks = Hooks()) -> Interrupted:
        """Record that the run was interrupted (`error` says by what), once; what the run then says of itself."""
        if self.ended is not None:
            return self.ended
        if self.store is not None:
            error = Interrupted(f"{error}: run {self.run_id} is recorded as interrupted, and "
                                f"`planc resume {self.run_id}` continues it")
        events = hooks.events if isinstance(hooks.events, Stamp) else self.recorded_hooks(hooks).events
        with contextlib.suppress(RunError):  # an events file or a store that fails: the status says it
            events({"event": "run_finished", "status": "interrupted", "error": str(error),
                    "error_type": type(error).__name__})
        self._finish("interrupted", message=str(error))
        self.ended = error
        return error

    def recorded_hooks(self, hooks: Hooks) -> Hooks:
        """`hooks` with every event stamped (`events.Stamp`, numbered after those already recorded) and also
        told to the recorder."""
        return attrs.evolve(hooks, events=Stamp(self.run_id, self.recorder.events,
                                                fan_out(hooks.events, self.recorder.event)))

    def _finish(self, status: str, output=None, message: str | None = None) -> None:
        """Record how the run ended; when the store cannot, a RunStoreError saying both how it ended and
        that the record still says `running` (which a resume ends, from what was recorded)."""
        if self.store is None:
            return
        try:
            self.store.finish_run(self.run_id, status, output, message)
        except RunStoreError as error:
            ended = message if status in ("failed", "interrupted") and message else f"the run ended {status}"
            why = "either" if str(error) == message else f"({error})"
            raise RunStoreError(f"{ended}; and how it ended could not be recorded {why}: the store says the run is "
                                f"still running, and `planc resume {self.run_id}` ends it from its record") from None


async def run_async(checked: CheckResult, *, arguments: Mapping | None = None, hooks: Hooks = Hooks(),
                    registry: Registry | None = None, policy: Policy | None = None, principal: str | None = None,
                    store: str | Path | None = None, schedule: Schedule | None = None, executor: str | None = None,
                    ray_address: str | None = None, approve: bool = False) -> RunResult:
    """Run `checked` (what `planc.check` returned, without errors) in the running event loop; its result.

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
    arguments = run_arguments(checked, arguments or {})
    if approve and store is None and hooks.gate is None:
        raise ValueError("approve=True needs a store, where a call waits for its approval, or a gate in hooks")
    how = choose_executor(registry, executor, ray_address)
    connected = connect_executor(how, registry, Path(store) if store is not None else None)
    try:
        if store is None:
            return await run_plan(checked, registry=registry, arguments=arguments, hooks=hooks, policy=policy,
                                  principal=principal, schedule=schedule, executor=connected)
        runs = RunStore(store)
        try:
            recorded = RecordedRun.record(runs, checked, registry=registry, policy=policy, principal=principal,
                                          arguments=arguments, options={"config": str(registry.source.resolve())
                                                                        if registry is not None and registry.source
                                                                        else None, "policy": None, "finish": "output",
                                                                        "query": None, "approve": approve,
                                                                        "executor": attrs.asdict(how)})
            return await recorded.running(hooks, schedule, executor=connected)
        finally:
            runs.close()
    finally:
        if connected is not None:
            connected.close()


def run(checked: CheckResult, **options) -> RunResult:
    """`run_async` in an event loop of its own, SIGINT and SIGTERM ending the run as interrupted (Interrupted);
    the options are the same. Inside a running event loop, await `run_async` instead (a RuntimeError says so,
    and nothing runs)."""
    with Interrupts() as signals:
        return signals.run(run_async(checked, **options))


def waits_for(options: Mapping) -> str | None:
    """Whose approval a run's calls wait for in the store, from the options it is recorded with: every
    effectful call's under `--approve` (`approve`), flagged calls' when it was checked for a person to
    let them through (`approvals`), else none."""
    return EFFECTFUL if options.get("approve") else FLAGGED if options.get("approvals") else None


def choose_executor(registry: Registry | None, kind: str | None, address: str | None, recorded: Mapping | None = None):
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


def connect_executor(how: Executor, registry: Registry | None, store: Path | None):
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
    return {name: tool.to_data() for name, tool in registry.tools.items()
            if tool.provider.startswith(("python:", "sql:", "postgresql:"))}


def as_it_ran(store: RunStore, run: dict, principal: str) -> tuple[Registry | None, Policy | None] | None:
    """The registry and policy `run` ran with, from the files it kept; None when it kept none.

    A ConfigError or PolicyError when a kept file no longer loads (planc changed since).
    """
    from planc.passes.policy.load import check_principal, policy_from_text
    from planc.registry.config import registry_from_text

    options = run["options"]
    read = options.get("read")
    if read is None or (read["config"] is None and options.get("config") is not None):
        return None  # recorded before runs kept their files, or its planc.toml could not be read
    registry = None
    if read.get("config") is not None:
        lock = store.file(read["lock"]) if read.get("lock") else None
        kept = options.get("code_tools")
        registry = registry_from_text(store.file(read["config"]), Path(options["config"]), locked=lock is not None,
                                      lock_text=lock, code_tools={name: Tool.from_data(data) for name, data in kept.items()}
                                      if kept is not None else None)
    policy = None
    if read.get("policy") is not None:
        check_principal(principal)
        path = Path(options["policy"]) if options.get("policy") else registry.policy
        policy = policy_from_text(store.file(read["policy"]), path, options.get("principals", ()))
    return registry, policy


def waiting_words(run_id: str, calls: list[dict]) -> str:
    """What a run that waits says of itself: which calls wait, and the command that answers them."""
    lines = [f"run {run_id} waits for a person to approve {len(calls)} call"
             f"{'s' if len(calls) != 1 else ''}:"]
    lines += [f"  call {call['sequence']} (step {call['step']}): {call['tool']} "
              f"{excerpt(json.dumps(call['input'], ensure_ascii=False), 100)}: {call['asks']}" for call in calls]
    lines.append(f"`planc approve {run_id}` approves it and continues the run; "
                 f"`planc approve {run_id} --deny` refuses it"
                 + (" (give --call N: which call)" if len(calls) > 1 else ""))
    return "\n".join(lines)
