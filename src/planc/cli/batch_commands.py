"""`planc batch`: one plan run once per line of a JSON-lines file of arguments, and `--resume` to finish one."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from planc.cli.files import read_file
from planc.cli.options import (
    CONFIG_OPTION,
    POLICY_OPTION,
    PRINCIPAL_OPTION,
    STORE_OPTION,
    budget_options,
    executor_options,
)
from planc.cli.plans import checked_to_run
from planc.cli.printing import console, print_wide
from planc.cli.project import find_policy, find_registry, plan_arguments, principal_for
from planc.cli.runs import executor_for, open_store
from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.backend.run.batch import Line
    from planc.backend.run.launch import Launch
    from planc.backend.run.recorded_run import RecordedRun
    from planc.backend.run.spec import RunSpec, RunWiring
    from planc.passes.cost.cost_range import CostRange
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry
    from planc.store.run_store import RunStore

PARALLEL = 4  # runs in flight, unless --parallel says


@click.command("batch")
@click.argument("plan", required=False)
@click.option(
    "--args",
    "args_file",
    type=click.Path(dir_okay=False),
    help="A JSON-lines file: each line an object of run arguments, run once each.",
)
@click.option(
    "--resume",
    "resume",
    metavar="BATCH",
    help="Finish the batch BATCH (its id, a unique start of it, or `last`): what did not finish.",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    help=f"How many runs are in flight at once (default: {PARALLEL}, or as the resumed batch ran).",
)
@executor_options
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@budget_options
@STORE_OPTION
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="The summary at the end: a table, or one JSON object.",
)
def batch_command(
    plan: str | None,
    args_file: str | None,
    resume: str | None,
    parallel: int | None,
    executor: str | None,
    ray_address: str | None,
    config: str | None,
    policy_file: str | None,
    principal: str | None,
    max_usd: float | None,
    max_calls: int | None,
    max_inferences: int | None,
    store: str | None,
    output_format: str,
) -> None:
    """Run PLAN once per line of --args FILE, each run recorded in the run store with the batch's id.

    Every line is checked before any runs: a line that is not a JSON object of arguments, or with which
    the plan does not check, is reported as refused and never runs; the --max-* budgets hold as for
    `planc run`. The summary at the end counts the
    lines ok, failed, exited (an exit step with status error), refused and interrupted, and what they
    cost. `planc batch --resume BATCH` finishes a batch that was stopped: only what did not finish.

    Exit 0 when every line ran ok, 1 when any did not, 2 usage, 130 interrupted.
    """
    budget = [max_usd, max_calls, max_inferences]
    if resume is not None:
        if plan or args_file or config or policy_file or budget != [None, None, None]:
            raise UsageError(
                "--resume BATCH takes the plan, its arguments, planc.toml, the policy and the budgets "
                "from the batch's record: leave out PLAN, --args, --config, --policy and --max-*"
            )
        _resume_batch(resume, parallel, executor, ray_address, principal, store, output_format)
        return
    if plan is None or args_file is None:
        raise UsageError("give the plan and its arguments: `planc batch PLAN --args FILE.jsonl`, or `planc batch --resume BATCH`")
    from planc.passes.cost.budget import Budget
    from planc.store.stored import save_plan

    registry = find_registry(config, plan=plan)
    principal = principal_for(registry, principal)
    policy = find_policy(policy_file, registry, principal)
    checked = checked_to_run(
        read_file(plan), plan, registry, policy, principal, budget=Budget(max_usd, max_calls, max_inferences)
    )
    stored = save_plan(checked, registry=registry, policy=policy)
    from planc.backend.run.batch import check_line, read_lines
    from planc.backend.run.spec import RunWiring

    found = read_lines(read_file(args_file))
    lines = [
        check_line(checked, stored, number, arguments, registry=registry, policy=policy, principal=principal, budget=budget)
        for number, arguments, _ in found
    ]
    wrong = {number: why for number, _, why in found if why is not None}  # why a line holds no arguments
    refused = {line.number: wrong.get(line.number, line.refused) for line in lines if line.refused is not None}
    _report_refused(refused)
    runs = open_store(store, registry)
    toml = str(registry.source.resolve()) if registry is not None and registry.source else None
    options: dict[str, object] = {
        "config": toml,
        "policy": str(Path(policy_file).resolve()) if policy_file else None,
        "principal": principal,
        "params": plan_arguments(registry, plan),
        "parallel": parallel or PARALLEL,
        "budget": budget,
    }
    with executor_for(executor, ray_address, registry, runs.path) as (how, connected):
        options["executor"] = {"kind": how.kind, "address": how.address}
        batch_id = runs.start_batch(stored, [(number, arguments) for number, arguments, _ in found], refused, options)
        click.echo(f"batch: {batch_id}", err=True)
        spec = _spec(options, principal)
        wiring = RunWiring(store=runs, executor=connected)
        starts = [
            (line.number, _launch(line, spec, wiring, registry, policy, batch_id)) for line in lines if line.refused is None
        ]
        _run_lines(runs, batch_id, starts, parallel or PARALLEL)
    _summary(runs, batch_id, lines, output_format)


def _resume_batch(
    name: str,
    parallel: int | None,
    executor: str | None,
    ray_address: str | None,
    principal: str | None,
    store: str | None,
    output_format: str,
) -> None:
    """Finish the batch `name` names: resume each run that was cut short, start each line that never did."""
    from planc.backend.run.batch import check_line
    from planc.backend.run.launch import Launch
    from planc.backend.run.recorded_run import RecordedRun
    from planc.backend.run.spec import RunWiring
    from planc.passes.cost.budget import Budget
    from planc.store.run_store import RunStoreError
    from planc.store.stored import StoredPlanError, dump, load_plan

    runs = open_store(store)
    try:
        batch = runs.batch(runs.find(name, "batches"))
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    batch_id, options = batch["id"], batch["options"]
    principal = principal or options["principal"]
    registry = find_registry(options["config"], plan=None)
    policy = find_policy(options["policy"], registry, principal)
    budget = options["budget"]
    try:
        checked = load_plan(
            dump(batch["plan"]),
            registry=registry,
            policy=policy,
            principal=principal,
            arguments=options["params"],
            recorded=True,
            **Budget(*budget).keywords(),
        )
    except StoredPlanError as error:
        click.echo(f"error: batch {batch_id}: {error}", err=True)
        sys.exit(1)
    running = [line for line, run in batch["runs"].items() if run["status"] == "running"]
    if running:
        click.echo(
            f"error: batch {batch_id} is still being run by another process (line {running[0]}'s run "
            f"{batch['runs'][running[0]]['id']} is being recorded): resume it once that process has ended",
            err=True,
        )
        sys.exit(1)
    lines = [
        check_line(
            checked, batch["plan"], number, arguments, registry=registry, policy=policy, principal=principal, budget=budget
        )
        for number, arguments in batch["lines"]
        if number not in batch["refused"]
    ]
    refused = {line.number: line.refused for line in lines if line.refused is not None and line.number not in batch["runs"]}
    _report_refused(refused)
    if refused:
        runs.refuse_lines(batch_id, refused)
    spec = _spec(options, principal)

    def resumed(run_id: str, wiring: RunWiring) -> Launch:
        def start(store: RunStore | None) -> RecordedRun:
            assert store is not None  # the batch's
            store.take_lease(run_id)
            return RecordedRun.resume(store, store.run(run_id), checked, registry=registry, policy=policy, principal=principal)

        return Launch.continued(checked, spec, wiring, start, registry=registry, policy=policy)

    with executor_for(executor, ray_address, registry, runs.path, options["executor"]) as (_, connected):
        wiring = RunWiring(store=runs, executor=connected)
        starts = []
        for line in lines:
            run = batch["runs"].get(line.number)
            if run is None and line.refused is None:
                starts.append((line.number, _launch(line, spec, wiring, registry, policy, batch_id)))
            elif run is not None and run["status"] == "interrupted":  # cut short: taken up in its own record
                starts.append((line.number, resumed(run["id"], wiring)))
        click.echo(f"batch: {batch_id} (resumed: {len(starts)} of {len(batch['lines'])} lines to finish)", err=True)
        _run_lines(runs, batch_id, starts, parallel or options["parallel"])
    _summary(runs, batch_id, lines, output_format)


def _spec(options: dict, principal: str) -> RunSpec:
    """The choices each run of a batch is made with, from the batch's options (its arguments are its line's)."""
    from planc.backend.run.spec import RunSpec
    from planc.passes.cost.budget import Budget
    from planc.registry.settings.declarations import Executor

    return RunSpec(
        principal=principal,
        budget=Budget(*options["budget"]),
        config=options["config"],
        policy=options["policy"],
        executor=Executor(**options["executor"]),
    )


def _launch(
    line: Line, spec: RunSpec, wiring: RunWiring, registry: Registry | None, policy: Policy | None, batch_id: str
) -> Launch:
    """`line`'s run: a new run of the line's checked plan, with its arguments, recorded with the batch's id."""
    from planc.backend.run.launch import Launch

    assert line.checked is not None and line.arguments is not None  # a line the check did not refuse
    return Launch.new(
        line.checked,
        attrs.evolve(spec, arguments=line.arguments),
        attrs.evolve(wiring, batch=(batch_id, line.number)),
        registry=registry,
        policy=policy,
    )


def _run_lines(runs: RunStore, batch_id: str, starts: list[tuple[int, Launch]], parallel: int) -> None:
    """Run `starts`, a bar (or a line per run) on stderr; the batch is recorded finished once all have run."""
    from planc.backend.report.progress import BatchProgress
    from planc.backend.run.batch import Batch
    from planc.backend.state.interrupts import Interrupted
    from planc.store.run_store import RunStoreError

    progress = BatchProgress(console(stderr=True), len(starts))
    try:
        with progress:
            Batch(runs, batch_id, parallel, progress.finished).execute(starts)
        runs.finish_batch(batch_id)
    except Interrupted as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(130)
    except RunStoreError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)


def _report_refused(refused: dict[int, str]) -> None:
    for number, why in sorted(refused.items()):
        click.echo(f"line {number}: refused: {why}", err=True)


def _summary(runs: RunStore, batch_id: str, lines: list[Line], output_format: str) -> None:
    """What became of every line of the batch, and what its runs cost (spent, and as the checks estimated);
    exit 1 unless every line ran ok."""
    import json

    from planc.backend.run.batch import OUTCOMES, RUN_OUTCOMES
    from planc.passes.cost.cost_range import CostRange

    batch = runs.batch(batch_id)
    counts = dict.fromkeys(OUTCOMES, 0)
    counts["refused"] = len(batch["refused"])
    for run in batch["runs"].values():
        counts[RUN_OUTCOMES.get(run["status"], "interrupted")] += 1
    calls = runs.batch_calls(batch_id)
    inferences = sum(tool.startswith("model:") for tool in calls)
    usd = runs.batch_spent(batch_id)
    estimate = CostRange.total(
        [line.checked.cost.total for line in lines if line.checked is not None and line.checked.cost is not None]
    )
    spent = {"calls": len(calls) - inferences, "inferences": inferences, "usd": round(usd, 6)}
    if output_format == "json":
        click.echo(
            json.dumps(
                {
                    "batch": batch_id,
                    "lines": len(batch["lines"]),
                    **counts,
                    "runs": {str(line): run for line, run in sorted(batch["runs"].items())},
                    "refused_lines": {str(line): why for line, why in sorted(batch["refused"].items())},
                    "cost": {"spent": spent, "estimated": estimate.to_json()},
                },
                ensure_ascii=False,
            )
        )
    else:
        _print_table(batch_id, len(batch["lines"]), counts, spent, estimate)
    if counts["ok"] != len(batch["lines"]):
        sys.exit(1)


def _print_table(batch_id: str, lines: int, counts: dict, spent: dict, estimate: CostRange) -> None:
    from rich.table import Table

    from planc.passes.cost.cost_words import cost_line, dollars

    table = Table(title=f"batch {batch_id}: {lines} line{'s' if lines != 1 else ''}", title_justify="left")
    shown = [name for name, count in counts.items() if count or name != "interrupted"]
    for name in shown:
        table.add_column(name, justify="right")
    table.add_row(*(str(counts[name]) for name in shown))
    out = console()
    print_wide(out, table)
    out.print(
        f"spent: {spent['calls']} tool call{'s' if spent['calls'] != 1 else ''}, {spent['inferences']} "
        f"inference{'s' if spent['inferences'] != 1 else ''}, {dollars(spent['usd'])}"
    )
    out.print(f"estimated: {cost_line(estimate)}", style="dim")
