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

from planc.backend.calls.hooks import Hooks
from planc.backend.run.interpreter import RunResult
from planc.backend.state.interrupts import Interrupts
from planc.backend.run.recorded_run import RecordedRun, choose_executor, connect_executor
from planc.clock import FixedClock, fixed
from planc.passes.check import CheckResult
from planc.passes.cost.budget import Budget
from planc.passes.policy.load import DEFAULT_PRINCIPAL, Policy, load_policy
from planc.registry.config import load_registry
from planc.registry.registry import Registry
from planc.store.run_store import RunStore

DENIED = "step {step}: stopped before calling `{tool}`: a person denied it (`planc approve --deny`)"


async def approve_async(run: str, *, store: str | Path, deny: bool = False, call: int | None = None,
                        hooks: Hooks = Hooks(), registry: Registry | None = None,
                        policy: Policy | None = None) -> RunResult:
    """Approve (or, with `deny`, refuse) the call of run `run` (its id, a unique start of it, or `last`) that
    waits in `store`, the call numbered `call` when several wait, and continue the run from its record in
    the running event loop: its result, as `run_async` gives it (AwaitingApproval when another call waits
    in turn; a RunError when the run fails, as it does at a denied call).

    The run is checked again against the planc.toml and policy it was recorded with (or `registry` and
    `policy`, as given). NotWaiting (a RunStoreError) when there is nothing to answer: the run does not
    wait, or the call was answered already, by this process or another.
    """
    runs = RunStore(store)
    try:
        run_id = runs.find(run)
        record = runs.run(run_id)
        registry, policy, principal, checked = as_recorded(record, registry, policy)  # before the answer is given
        # The answer is stamped with the run's clock, as the rest of its record is.
        with fixed(FixedClock.from_data(record["options"].get("clock"))):
            record = runs.answer(run_id, call, approved=not deny, denied=DENIED)
        resumed = RecordedRun.resume(runs, record, checked, registry=registry, policy=policy, principal=principal)
        connected = connect_executor(choose_executor(registry, None, None, record["options"].get("executor")),
                                     registry, Path(store))
        try:
            return await resumed.running(hooks, executor=connected)
        finally:
            if connected is not None:
                connected.close()
    finally:
        runs.close()


def approve(run: str, **options) -> RunResult:
    """`approve_async` in an event loop of its own, SIGINT and SIGTERM ending the run as interrupted; the
    options are the same."""
    with Interrupts() as signals:
        return signals.run(approve_async(run, **options))


def as_recorded(record: dict, registry: Registry | None, policy: Policy | None
                ) -> tuple[Registry | None, Policy | None, str, CheckResult]:
    """The registry, policy and principal a recorded run is continued with (the planc.toml and policy it was
    recorded with, unless given), and its plan checked again against them as it was checked (its
    budget, its approvals). A ConfigError, PolicyError or StoredPlanError when they no longer serve."""
    from planc.store.stored import dump, load_plan

    options = record["options"]
    if registry is None and options.get("config"):
        registry = load_registry(Path(options["config"]))
    principal = options.get("principal") or DEFAULT_PRINCIPAL
    if policy is None:
        path = options.get("policy") or (registry.policy if registry is not None else None)
        policy = load_policy(Path(path)) if path else None
    budget = Budget(*options.get("budget") or (None, None, None))
    # `written_by`: the labels its author gave its literals (an MCP client's plan) hold when it is continued too.
    checked = load_plan(dump(record["plan"]), registry=registry, policy=policy, principal=principal,
                        approvals=options.get("approvals", False), written_by=frozenset(options.get("written_by", ())),
                        recorded=True, **budget.keywords())
    return registry, policy, principal, checked
