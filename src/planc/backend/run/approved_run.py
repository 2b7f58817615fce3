"""`planc approve` and `planc.approve`: a person's answer to a call that waits (`approvals.py`), and the run
continued from its record, in the process that answers.

The answer and the run's lease are taken in one transaction of the store (`RunStore.answer`), so of two
processes that answer the same call at once one continues the run and the other is told it was
answered (NotWaiting): the approved call is made once. The run continues as `planc resume` continues
it (`Resume`): every call it made comes from its record, the approved one is made now, and the next
call that needs a person waits in turn. A denied call is never made: the run stops before it, as a no
at the terminal stops it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from planc.backend.calls.hooks import Hooks
from planc.backend.run.interpreter import RunResult
from planc.backend.run.launch import Launch
from planc.backend.run.recorded_run import RecordedRun
from planc.backend.run.spec import RunSpec, RunWiring
from planc.backend.state.interrupts import Interrupts
from planc.clock import FixedClock, fixed
from planc.passes.check import CheckResult
from planc.passes.policy.load import Policy, load_policy
from planc.registry.loading.config import load_registry
from planc.registry.loading.registry import Registry
from planc.store.run_store import RunStore

DENIED = "step {step}: stopped before calling `{tool}`: a person denied it (`planc approve --deny`)"


async def approve_async(
    run: str,
    *,
    store: str | Path,
    deny: bool = False,
    call: int | None = None,
    hooks: Hooks = Hooks(),
    registry: Registry | None = None,
    policy: Policy | None = None,
) -> RunResult:
    """Approve (or, with `deny`, refuse) the call of run `run` (its id, a unique start of it, or
    `last`) that waits in `store`, the call numbered `call` when several wait, and continue the run
    from its record in the running event loop: its result, as `run_async` gives it (AwaitingApproval
    when another call waits in turn; a RunError when the run fails, as it does at a denied call).

    The run is checked again against the planc.toml and policy it was recorded with (or `registry`
    and `policy`, as given), as its record says it was checked: its principal, its author's labels,
    its approvals and budgets. NotWaiting (a RunStoreError) when there is nothing to answer: the run
    does not wait, or the call was answered already, by this process or another.
    """
    runs = RunStore(store)
    try:
        record = runs.run(runs.find(run))
        return await approved(
            record,
            runs,
            RunWiring(store=runs, hooks=hooks),
            deny=deny,
            call=call,
            registry=registry,
            policy=policy,
        ).run()
    finally:
        runs.close()


def approved(
    record: dict,
    store: RunStore | None,
    wiring: RunWiring,
    *,
    deny: bool = False,
    call: int | None = None,
    registry: Registry | None = None,
    policy: Policy | None = None,
) -> Launch:
    """The run of `record` continued once the answer (`deny`, to `call`) is given, as `Launch` runs
    it: checked again as it was recorded before the answer is given (a ConfigError, PolicyError or
    StoredPlanError when that fails, and nothing is answered)."""
    spec = RunSpec.from_record(record)
    registry, policy, checked = as_recorded(record, registry, policy)

    def answered(runs: RunStore | None) -> RecordedRun:
        assert runs is not None  # an answer is given in the store
        with fixed(FixedClock.from_data(record["options"].get("clock"))):  # stamped as the run is
            answer = runs.answer(record["id"], call, approved=not deny, denied=DENIED)
        return RecordedRun.resume(runs, answer, checked, registry=registry, policy=policy)

    wiring = attrs.evolve(wiring, store=store)  # None: the door wires its store later
    return Launch.continued(checked, spec, wiring, answered, registry=registry, policy=policy)


def approve(run: str, **options: Any) -> RunResult:
    """`approve_async` in an event loop of its own, SIGINT and SIGTERM ending the run as
    interrupted; the options are the same."""
    with Interrupts() as signals:
        return signals.run(approve_async(run, **options))


def as_recorded(
    record: dict, registry: Registry | None, policy: Policy | None
) -> tuple[Registry | None, Policy | None, CheckResult]:
    """The registry and policy a recorded run is continued with (the planc.toml and policy it was
    recorded with, unless given), and its plan checked again against them as its record says it was
    checked (`RunSpec.from_record`: its principal, its author's labels, its approvals, its budget).
    A ConfigError, PolicyError or StoredPlanError when they no longer serve."""
    from planc.store.stored import dump, load_plan

    spec = RunSpec.from_record(record)
    if registry is None and spec.config:
        registry = load_registry(Path(spec.config))
    if policy is None:
        path = spec.policy or (registry.policy if registry is not None else None)
        policy = load_policy(Path(path), spec.principals) if path else None  # and its attributes
    checked = load_plan(
        dump(record["plan"]),
        registry=registry,
        policy=policy,
        recorded=True,
        **spec.check_keywords(),
    )
    return registry, policy, checked
