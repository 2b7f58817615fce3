"""`planc run`, `planc compile` and `planc migrate`: running a plan, recorded in the run store, and storing one."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planc.cli.files import read_file
from planc.cli.options import (
    ANSWERS_OPTION,
    CONFIG_OPTION,
    EVENTS_OPTION,
    OTEL_OPTION,
    POLICY_OPTION,
    PRINCIPAL_JSON_OPTION,
    PRINCIPAL_OPTION,
    STORE_OPTION,
    budget_options,
    executor_options,
)
from planc.cli.plans import checked_to_run, optimized_plan
from planc.cli.printing import print_checked
from planc.cli.project import find_policy, find_registry, plan_arguments, plan_returns, principal_for, principal_given
from planc.cli.runs import executor_declared, refused_arguments, run_on_terminal, solver_client
from planc.cli.usage import UsageError


@click.command("run")
@click.argument("plan")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@PRINCIPAL_JSON_OPTION
@click.option(
    "--arg",
    "args",
    multiple=True,
    metavar="NAME=VALUE",
    help="A run argument, read by `$args.NAME`, as its declared type (a string keeps the text).",
)
@click.option("--arg-json", "json_args", multiple=True, metavar="NAME=JSON", help="A run argument given as JSON.")
@EVENTS_OPTION
@OTEL_OPTION
@click.option(
    "--finish",
    type=click.Choice(["output", "none", "solver"]),
    default="output",
    show_default=True,
    help="Print the plan's result as JSON, nothing, or the `solver` model's report on it (--query).",
)
@click.option("--query", help="With --finish solver: what the report answers.")
@click.option(
    "--approve",
    is_flag=True,
    help="A person approves every effectful tool call: asked on the terminal; "
    "with no terminal, the call waits for `planc approve` (exit 3).",
)
@ANSWERS_OPTION
@click.option(
    "--optimize",
    is_flag=True,
    help="Run the plan as `planc optimize` rewrites it, independent steps at the same time; notes on stderr.",
)
@click.option("--extract", is_flag=True, help="Take the plan out of a model reply (markdown fence or prose).")
@budget_options
@STORE_OPTION
@executor_options
def run_command(
    plan: str,
    config: str | None,
    policy_file: str | None,
    principal: str | None,
    principal_json: str | None,
    args: tuple[str, ...],
    json_args: tuple[str, ...],
    events: str | None,
    otel: bool,
    finish: str,
    query: str | None,
    approve: bool,
    answers_file: str | None,
    optimize: bool,
    extract: bool,
    max_usd: float | None,
    max_calls: int | None,
    max_inferences: int | None,
    store: str | None,
    executor: str | None,
    ray_address: str | None,
) -> None:
    """Check PLAN, then run it. Exit 0 ok, 1 refused or failed, 3 a call waits for `planc approve`, 4 an exit step
    with status error, 130 interrupted.

    Progress goes to stderr; stdout holds the result only. With --executor ray, the Python tool calls of
    map/filter/reduce items (and of the steps --optimize runs side by side) are Ray tasks.
    """
    from planc.backend.run.arguments import parse_arguments
    from planc.backend.run.launch import ArgumentsRefused, Launch
    from planc.backend.run.spec import RunSpec, RunWiring, file_path
    from planc.passes.cost.budget import Budget

    if finish == "solver" and not query:
        raise UsageError("--finish solver needs --query TEXT, the question the report answers")
    if query is not None and finish != "solver":
        raise UsageError("--query is only read with --finish solver")
    principal, principals = principal_given(principal, principal_json)
    registry = find_registry(config, plan=plan)
    principal = principal_for(registry, principal)
    policy = find_policy(policy_file, registry, principal, principals)
    solver = solver_client(registry) if finish == "solver" else None  # before any tool runs
    budget = Budget(max_usd, max_calls, max_inferences)
    checked = checked_to_run(
        read_file(plan), plan, registry, policy, principal, extract=extract, budget=budget, approvals=approve
    )
    try:
        arguments = parse_arguments(args, json_args, checked.typing.arguments if checked.typing else None)
    except ValueError as error:
        raise UsageError(str(error)) from None
    spec = RunSpec(
        principal=principal,
        approve=approve,
        budget=budget,
        optimize=optimize,
        arguments=arguments,
        returns=plan_returns(registry, plan),
        config=file_path(registry.source if registry else None),
        policy=file_path(policy_file),
        executor=executor_declared(executor, ray_address, registry),
        finish=finish,
        query=query,
    )
    schedule = None
    if optimize:
        optimized = optimized_plan(checked, plan)
        checked, schedule = optimized.checked, optimized.schedule
    try:  # refused before anything is recorded
        launch = Launch.new(checked, spec, RunWiring(schedule=schedule), registry=registry, policy=policy)
    except ArgumentsRefused as error:
        refused_arguments(error, plan)
    # --approve asks on a terminal; with none, a call that needs a person waits for `planc approve`.
    run_on_terminal(
        launch,
        registry=registry,
        store=store,
        events=events,
        otel=otel,
        answers_file=answers_file,
        name=Path(plan).name,
        plan=plan,
        policy_file=policy_file,
        asks=approve and sys.stdin.isatty(),
        solver=solver,
    )


@click.command("compile")
@click.argument("plan")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The stored plan to write.")
@CONFIG_OPTION
@POLICY_OPTION
def compile_command(plan: str, output: str, config: str | None, policy_file: str | None) -> None:
    """Check PLAN and write it as a stored plan that `planc run` runs. Exit 0 ok, 1 with errors."""
    from planc.passes.check import check
    from planc.store.stored import dump, save_plan

    registry = find_registry(config, plan=plan)
    policy = find_policy(policy_file, registry, principal_for(registry, None))
    checked = check(read_file(plan), registry=registry, arguments=plan_arguments(registry, plan), policy=policy)
    if not checked.ok:
        print_checked([(plan, checked)], stderr=True)
        sys.exit(1)
    try:
        Path(output).write_text(dump(save_plan(checked, registry=registry, policy=policy)), encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{output}: {error.strerror}") from None
    click.echo(f"wrote {output}", err=True)


@click.command("migrate")
@click.argument("files", nargs=-1, required=True)
@CONFIG_OPTION
def migrate_command(files: tuple[str, ...], config: str | None) -> None:
    """Bring the stored plans FILES up to this planc's version, in place, one migration at a time, each
    stamping the version it reaches. A plan no migration can convert unambiguously is left as it is, and
    the message says what to change. Exit 0 when every file is up to date, 1 when any was refused."""
    from planc.cli.files import is_stored_plan
    from planc.store.stored import StoredPlanError, migrate_plan

    refused = False
    for name in files:
        text = read_file(name)
        if not is_stored_plan(text):
            raise UsageError(f"{name}: not a stored plan (`planc compile` writes them): plan text is read as it is")
        try:
            migrated, said = migrate_plan(text, find_registry(config, plan=name))
        except StoredPlanError as error:
            click.echo(f"error: {name}: {error}; it is left as it was", err=True)
            refused = True
            continue
        if not said:
            click.echo(f"{name}: up to date", err=True)
            continue
        try:
            _replace(Path(name), migrated)
        except OSError as error:
            raise UsageError(f"{name}: {error.strerror}") from None
        for step in said:
            click.echo(f"{name}: {step}", err=True)
    if refused:
        sys.exit(1)


def _replace(path: Path, text: str) -> None:
    """Write `text` over `path` at once: a file beside it, renamed over it, so it is never half written."""
    partial = path.with_name(f".{path.name}.migrating")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
