"""`planc runs`, `show-run`, `replay`, `resume` and `approve`: what the run store holds, and running from it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from planc.cli.files import read_file
from planc.cli.options import (
    ANSWERS_OPTION,
    CONFIG_OPTION,
    EVENTS_OPTION,
    OTEL_OPTION,
    POLICY_OPTION,
    PRINCIPAL_OPTION,
    STORE_OPTION,
    executor_options,
)
from planc.cli.plans import checked_to_run
from planc.cli.project import find_policy, find_registry
from planc.cli.runs import executor_declared, open_store, run_on_terminal
from planc.cli.usage import UsageError
from planc.passes.cost.cost_words import dollars

if TYPE_CHECKING:
    from planc.backend.run.spec import RunSpec
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry
    from planc.store.run_store import RunStore


def _as_run(run: dict, store: str | None, principal: str) -> tuple[Registry | None, Policy | None] | None:
    """The registry and policy `run` ran with, from the files it kept; None when it kept none."""
    from planc.backend.run.recorded_run import as_it_ran
    from planc.passes.policy.load import PolicyError
    from planc.registry.loading.config import ConfigError
    from planc.store.run_store import RunStoreError

    runs = open_store(store, read_only=True)
    try:
        return as_it_ran(runs, run, principal)
    except (ConfigError, PolicyError, RunStoreError) as error:
        raise UsageError(f"run {run['id']}: {error}") from None
    finally:
        runs.close()


def _stored_run(store: str | None, run_id: str) -> dict:
    """The record of the run `run_id` names (its id, a unique prefix of it, or `last`), read without
    writing to the store."""
    from planc.store.run_store import RunStoreError

    runs = open_store(store, read_only=True)
    try:
        return runs.run(runs.find(run_id))
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    finally:
        runs.close()


def _when(timestamp: float | None) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "-"


@click.command("runs")
@STORE_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def runs_command(store: str | None, output_format: str) -> None:
    """List the recorded runs."""
    import json

    from planc.cli.project import store_path
    from planc.store.postgres_backend import is_postgresql
    from planc.store.run_store import RunStoreError

    listed = []
    where = store_path(store)
    if is_postgresql(where) or where.exists():  # no store file: no runs, and nothing is written to say so
        runs = open_store(store, read_only=True)
        try:
            listed = runs.runs()
        except RunStoreError as error:
            raise UsageError(str(error)) from None
        finally:
            runs.close()
    elif store is None:
        _say_where_runs_are(where)
    if output_format == "json":
        click.echo(json.dumps(listed, indent=2, ensure_ascii=False))
        return
    for run in listed:
        spent = f"  {dollars(run['spent_usd'])}" if run["spent_usd"] else ""
        click.echo(
            f"{run['id']}  {_when(run['started_at'])}  {run['status']:<11} {run['calls']} call"
            f"{'s' if run['calls'] != 1 else ''}{spent}"
        )
        for call in run.get("awaiting", ()):  # what a waiting run asks, and what answers it
            click.echo(
                f"  waits: call {call['sequence']} (step {call['step']}) {call['tool']} {_short(call['input'])}: "
                f"{call['asks']}  (planc approve {run['id']} --call {call['sequence']} [--deny])"
            )


def _say_where_runs_are(where: Path) -> None:
    """On standard error: there is no run store at `where`, and the stores below the working folder that
    have runs (a run is recorded beside the planc.toml it ran with, as the demo's are under examples/)."""
    from planc.project import stores_below

    found = stores_below(Path.cwd())
    if not found:
        return
    shown = [os.path.relpath(path) for path in found[:3]]
    click.echo(
        f"no run store here ({os.path.relpath(where)}); a run is recorded beside the planc.toml it ran "
        f"with, and {' and '.join(shown)} {'has' if len(shown) == 1 else 'have'} runs: "
        f"`planc runs --store {shown[0]}`",
        err=True,
    )


@click.command("show-run")
@click.argument("run_id", metavar="RUN")  # its id, a unique start of it, or `last`
@STORE_OPTION
@click.option("--format", "output_format", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
def show_run_command(run_id: str, store: str | None, output_format: str) -> None:
    """Show one recorded run step by step: each step's result, and the calls it made (html: one page)."""
    import json

    run = _stored_run(store, run_id)
    if output_format == "json":
        click.echo(json.dumps(run, indent=2, ensure_ascii=False))
        return
    if output_format == "html":
        from planc.pictures.run_page import render_run_page

        click.echo(render_run_page(run), nl=False)
        return
    click.echo(f"run {run['id']}: {run['status']}, started {_when(run['started_at'])}, finished {_when(run['finished_at'])}")
    if run["arguments"]:
        click.echo(f"arguments: {json.dumps(run['arguments'], ensure_ascii=False)}")
    if run["spent_usd"]:
        click.echo(f"spent: {dollars(run['spent_usd'])}")
    for line in _step_lines(run):
        click.echo(line)
    if run["message"]:
        click.echo(f"message: {run['message']}")
    if run["status"] in ("ok", "error"):
        click.echo(f"output: {json.dumps(run['output'], ensure_ascii=False)}")


def _step_lines(run: dict) -> Iterator[str]:
    """`run`'s timeline (`planc.pictures.timeline.rows`) as lines, indented by nesting: a tool step with its
    input, time and result; any other call a step made (a model's, an `agent`'s tools') beneath it; calls
    outside any step (the planning rounds, the finish) among the steps, in the order they started."""
    from planc.pictures.timeline import rows

    for row in rows(run):
        indent = "  " * row.depth
        if row.call is not None:
            prefix = f"step {row.path} " if row.is_step else "" if row.depth else f"{row.path}: "
            yield indent + _call_line(row.call, prefix)
        elif row.error is not None:
            yield f"{indent}step {row.path} {row.tool} failed: {row.error}"
        else:
            yield f"{indent}step {row.path} {row.tool}" + (
                f" -> {_short(row.result)}" if row.finished is not None else " (did not finish)"
            )


def _call_line(call: dict, prefix: str = "") -> str:
    took = f" ({call['finished_at'] - call['started_at']:.3f}s)" if call["finished_at"] else ""
    outcome = call["outcome"]
    if outcome == "ok":
        ended = f" -> {_short(call['output'])}"
    elif outcome != "unknown":  # failed, refused, not approved, awaiting approval (what it asks), approved
        ended = f" {outcome.replace('_', ' ')}" + (f": {call['error']}" if call["error"] is not None else "")
    elif call["error"] is not None:
        ended = f": outcome unknown: {call['error']}"
    elif call["finished_at"] is not None:
        ended = ": outcome unknown: the run was interrupted during the call"
    else:
        ended = ": outcome unknown: no result recorded (the run stopped during the call)"
    return f"{prefix}{call['tool']} {_short(call['input'])}{took}{ended}{_labels_words(call.get('labels'))}"


def _labels_words(labels: dict | None) -> str:
    """Where a call's values came from, as the record keeps it: ` [to: untrusted; approved by a person]`."""
    if not labels:
        return ""
    said = [f"{name}: {', '.join(found)}" for name, found in labels.get("sources", {}).items() if found]
    said += [f"whether it ran: {', '.join(labels['control'])}"] if labels.get("control") else []
    if "flagged" in labels:
        said.append("let through by a person" if labels.get("approved") else "flagged, not let through")
    return f" [{'; '.join(said)}]" if said else ""


def _short(value: object) -> str:
    import json

    from planc.backend.models.client import excerpt

    return excerpt(json.dumps(value, ensure_ascii=False), 100)


@click.command("replay")
@click.argument("run_id", metavar="RUN")  # its id, a unique start of it, or `last`
@STORE_OPTION
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    help="Replay this plan (text or stored) against the record instead of the run's own.",
)
def replay_command(
    run_id: str, store: str | None, config: str | None, policy_file: str | None, principal: str | None, plan_file: str | None
) -> None:
    """Run RUN's plan again as it ran, every tool and model result from the record: nothing is called.

    It reads the planc.toml, lock and policy the run read, as the store kept them; --config or
    --policy replays against today's files instead.

    Exit 0 ok, 1 refused, failed or diverged from the record, 4 an exit step with status error, 130 a run
    that was interrupted (as it was).
    """
    from planc.backend.run.launch import Launch
    from planc.backend.run.recorded_run import RecordedRun
    from planc.backend.run.spec import RunWiring
    from planc.registry.settings.declarations import Executor
    from planc.store.stored import dump

    run = _stored_run(store, run_id)
    run_id = run["id"]
    spec = _spec_of(run)
    given = config is not None or policy_file is not None
    config, policy_file, principal = _as_recorded(spec, config, policy_file, principal)
    kept = None if given else _as_run(run, store, principal)
    if kept is not None:
        registry, policy = kept
    else:
        registry = find_registry(config, plan=plan_file)
        policy = find_policy(policy_file, registry, principal, spec.principals)
    if spec.planned is not None and plan_file is None:
        _replay_planning(run, spec, registry, policy, principal)
        return
    text = read_file(plan_file) if plan_file else dump(run["plan"])
    checked = checked_to_run(
        text,
        plan_file or run_id,
        registry,
        policy,
        principal,
        budget=spec.budget,
        approvals=spec.approvals,
        written_by=spec.written_by,
        recorded=not plan_file,
        connects=False,
    )

    def replayed(_: object) -> RecordedRun:
        return RecordedRun.replay(run, checked, registry=registry, policy=policy, principal=principal)

    spec = attrs.evolve(spec, executor=Executor())  # a replay calls nothing: no executor to connect to
    launch = Launch.continued(checked, spec, RunWiring(), replayed, registry=registry, policy=policy)
    run_on_terminal(
        launch, registry=registry, store=None, events=None, otel=False, answers_file=None, name=run_id, said=None, writes=False
    )


def _leased_run(runs: RunStore, run_id: str) -> dict:
    """`run_id`'s record once this process holds its lease: exit 1 while another live process records into
    it (or when it has finished), exit 2 when the store cannot be written."""
    from planc.store.run_store import RunLeased, RunStoreError

    try:
        runs.take_lease(run_id)
    except RunLeased as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    try:
        return runs.run(run_id)
    except RunStoreError as error:
        runs.give_back(run_id)
        raise UsageError(str(error)) from None


def _replay_planning(run: dict, spec: RunSpec, registry: Registry | None, policy: Policy | None, principal: str) -> None:
    """A `planc plan` run again from its record: the model's answers, then the plan's calls if it ran."""
    from planc.backend.models.client import ModelError
    from planc.backend.run.recorders import Replay
    from planc.backend.state.values import RunError
    from planc.cli.planning_commands import finish_planning
    from planc.planning.planner import plan

    planned = spec.planned
    assert planned is not None  # a planned run's
    replay = Replay(run)
    try:
        outcome = plan(
            planned["task"],
            registry=registry,
            policy=policy,
            principal=principal,
            budget=spec.budget,
            role=planned["role"],
            rounds=planned["rounds"],
            grammar=planned["grammar"],
            recorder=replay,
            shapes=dict,
        )  # shapes: the record's
    except (ModelError, RunError) as error:  # a model that failed as it did; a record that does not hold a round
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    finish_planning(outcome, None, replay, registry, policy, attrs.evolve(spec, planned={**planned, "output": None}))


def _spec_of(run: dict) -> RunSpec:
    """The choices `run` was started with, as its record keeps them; one line and exit 1 when this planc
    cannot read them."""
    from planc.backend.run.spec import RunSpec

    try:
        return RunSpec.from_record(run)
    except ValueError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)


def _as_recorded(
    spec: RunSpec, config: str | None, policy_file: str | None, principal: str | None
) -> tuple[str | None, str | None, str]:
    """The planc.toml, policy file and principal to replay or resume a run with: what it ran with (`spec`),
    unless the command line says otherwise."""
    return config or spec.config, policy_file or spec.policy, principal or spec.principal


@click.command("resume")
@click.argument("run_id", metavar="RUN")  # its id, a unique start of it, or `last`
@STORE_OPTION
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option(
    "--approve",
    is_flag=True,
    help="A person approves every effectful call it makes: asked on the "
    "terminal; with no terminal, the call waits for `planc approve` (exit 3).",
)
@EVENTS_OPTION
@OTEL_OPTION
@ANSWERS_OPTION
@executor_options
def resume_command(
    run_id: str,
    store: str | None,
    config: str | None,
    policy_file: str | None,
    principal: str | None,
    approve: bool,
    answers_file: str | None,
    events: str | None,
    otel: bool,
    executor: str | None,
    ray_address: str | None,
) -> None:
    """Continue RUN, which did not finish, in the same run record.

    Calls with a recorded outcome end as they did; a call whose outcome is unknown is called again
    only if its tool is idempotent or takes the call's idempotency key (it is given the same key),
    else the run stops with "outcome unknown". A question `ask` left open is asked again (--answers).
    A run made with --approve asks again before every effectful call resume makes, and without a
    terminal the call waits for `planc approve` (exit 3). Its calls are made as the run's were (--executor), unless --executor says
    otherwise. Its events are numbered on from the last the run recorded.
    Exit 0 ok, 1 refused, failed or outcome unknown, 3 a call waits for `planc approve`, 4 an exit step with
    status error, 130 interrupted.
    """
    from planc.backend.run.launch import Launch
    from planc.backend.run.recorded_run import RecordedRun
    from planc.backend.run.spec import RunWiring
    from planc.store.stored import dump

    run = _stored_run(store, run_id)
    run_id = run["id"]
    if run["status"] in ("ok", "error"):
        click.echo(f"error: run {run_id} already finished ({run['status']}): nothing to resume", err=True)
        sys.exit(1)
    if run["plan"] is None:
        click.echo(
            f"error: run {run_id} stopped while a model was writing its plan: there is no plan to resume; plan the task again",
            err=True,
        )
        sys.exit(1)
    spec = _spec_of(run)
    config, policy_file, principal = _as_recorded(spec, config, policy_file, principal)
    registry = find_registry(config, plan=None)
    policy = find_policy(policy_file, registry, principal, spec.principals)
    checked = checked_to_run(
        dump(run["plan"]),
        run_id,
        registry,
        policy,
        principal,
        budget=spec.budget,
        approvals=approve or spec.approvals,
        written_by=spec.written_by,
        recorded=True,
    )
    spec = attrs.evolve(
        spec,
        principal=principal,
        approve=approve or spec.approve,
        executor=executor_declared(executor, ray_address, registry, attrs.asdict(spec.executor)),
    )

    def resumed(runs: RunStore | None) -> RecordedRun:
        assert runs is not None  # a resume writes its record
        taken = _leased_run(runs, run_id)  # as it is now that this process alone records into it
        return RecordedRun.resume(runs, taken, checked, registry=registry, policy=policy, principal=principal, approve=approve)

    # The approval the run was made under holds for its resume: it asks on a terminal, and where it cannot
    # ask, the call waits in the store for `planc approve`.
    launch = Launch.continued(checked, spec, RunWiring(), resumed, registry=registry, policy=policy)
    run_on_terminal(
        launch,
        registry=registry,
        store=store,
        events=events,
        otel=otel,
        answers_file=answers_file,
        name=run_id,
        policy_file=policy_file,
        asks=spec.approve and sys.stdin.isatty(),
        said="resumed",
    )


@click.command("approve")
@click.argument("run_id", metavar="RUN")  # its id, a unique start of it, or `last`
@click.option("--deny", is_flag=True, help="Refuse the call: it is never made, and the run stops before it.")
@click.option("--call", "call", type=int, metavar="N", help="Which call to answer, when several wait (`planc runs`).")
@STORE_OPTION
@EVENTS_OPTION
def approve_command(run_id: str, deny: bool, call: int | None, store: str | None, events: str | None) -> None:
    """Approve the call RUN waits on (`planc runs` lists what waits), and continue RUN from its record.

    The approved call is made once, here, even when another process answers at the same time (one of
    them continues the run; the other is told it was answered). With --deny the call is never made and
    the run stops before it. Any later call that needs a person waits in turn.
    Exit 0 ok, 1 nothing to answer, refused or failed, 3 the run waits again, 4 an exit step with status
    error, 130 interrupted.
    """
    from planc.backend.run.approved_run import approved
    from planc.backend.run.spec import RunWiring
    from planc.cli.project import store_path
    from planc.passes.policy.load import PolicyError
    from planc.registry.loading.config import ConfigError
    from planc.store.run_store import RunStoreError
    from planc.store.stored import StoredPlanError

    path = store_path(store)
    runs = open_store(store, read_only=True)  # no store here: exit 2
    try:
        record = runs.run(runs.find(run_id))
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    finally:
        runs.close()
    run_id = record["id"]
    try:  # checked again as it was recorded, before the answer is given
        launch = approved(record, None, RunWiring(), deny=deny, call=call)
    except (ConfigError, PolicyError, StoredPlanError, ValueError) as error:
        click.echo(f"error: run {run_id}: {error}", err=True)
        sys.exit(1)
    run_on_terminal(
        launch,
        registry=launch.registry,
        store=str(path),
        events=events,
        otel=False,
        answers_file=None,
        name=run_id,
        said="denied, continued" if deny else "approved, continued",
    )
