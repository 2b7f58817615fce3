"""`planc run` and `planc compile`: running a plan, recorded in the run store, and storing one."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planc.cli import (CONFIG_OPTION, POLICY_OPTION, PRINCIPAL_OPTION, STORE_OPTION, UsageError, _console,
                       _plan_arguments, _policy, _print_text, _read, _registry, main)


@main.command("run")
@click.argument("plan")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE", help="A run argument, read by `$args.NAME`.")
@click.option("--events", type=click.Path(dir_okay=False), help="Write the run's events to FILE as JSON lines.")
@click.option("--finish", type=click.Choice(["output", "none", "solver"]), default="output", show_default=True,
              help="Print the plan's result as JSON, nothing, or the `solver` model's report on it (--query).")
@click.option("--query", help="With --finish solver: what the report answers.")
@click.option("--approve", is_flag=True, help="Ask on the terminal before every effectful tool call.")
@click.option("--optimize", is_flag=True,
              help="Run the plan as `planc optimize` rewrites it, independent steps at the same time; notes on stderr.")
@STORE_OPTION
def run_command(plan: str, config: str | None, policy_file: str | None, principal: str, args: tuple[str, ...],
                events: str | None, finish: str, query: str | None, approve: bool, optimize: bool,
                store: str | None) -> None:
    """Check PLAN, then run it. Exit 0 ok, 1 refused or failed, 4 an exit step with status error.

    Progress goes to stderr; stdout holds the result only.
    """
    import asyncio
    import json

    from planc.backend.arguments import parse_arguments
    from planc.backend.hooks import Hooks
    from planc.backend.interpreter import run_plan
    from planc.backend.values import RunError

    if approve and not sys.stdin.isatty():
        raise UsageError("--approve asks on the terminal before every effectful call, and standard input is "
                         "not a terminal: run planc in one, or leave out --approve")
    if finish == "solver" and not query:
        raise UsageError("--finish solver needs --query TEXT, the question the report answers")
    if query is not None and finish != "solver":
        raise UsageError("--query is only read with --finish solver")
    registry = _registry(config, plan=plan)
    policy = _policy(policy_file, registry, principal)
    solver = _solver(registry) if finish == "solver" else None  # before any tool runs
    try:
        arguments = parse_arguments(args)
    except ValueError as error:
        raise UsageError(str(error)) from None
    checked = _checked_to_run(_read(plan), plan, registry, policy, principal)
    schedule = None
    if optimize:
        from planc.cli.optimize_commands import optimized_plan

        optimized = optimized_plan(checked, plan)
        checked, schedule = optimized.checked, optimized.schedule
    from planc.backend.approve import approval_gate
    from planc.backend.progress import Progress, fan_out

    console = _console(stderr=True)
    most = checked.cost.total.calls if checked.cost is not None else None
    progress = Progress(console, int(most.high) if most is not None and most.bounded else None)
    sink = open(events, "w", encoding="utf-8") if events else None  # closed below
    writer = (lambda event: sink.write(json.dumps(event, default=str) + "\n")) if sink else None
    options = {"config": str(registry.source.resolve()) if registry is not None and registry.source else None,
               "policy": str(Path(policy_file).resolve()) if policy_file else None,
               "principal": principal, "finish": finish, "query": query}
    runs, recorder = _start_recording(store, checked, registry, policy, arguments, options)
    hooks = Hooks(gate=approval_gate(console, pause=progress.paused) if approve else None,
                  events=fan_out(writer, progress.sink, recorder.event))
    try:
        with progress:
            result = asyncio.run(run_plan(checked, registry=registry, arguments=arguments, hooks=hooks,
                                          policy=policy, principal=principal, recorder=recorder, schedule=schedule))
    except RunError as error:
        runs.finish_run(recorder.run_id, "failed", message=str(error))
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    finally:
        if sink:
            sink.close()
    runs.finish_run(recorder.run_id, result.status, result.value, result.message)
    try:
        _finish(result, finish, query, lambda: solver, recorder)
    finally:
        runs.close()


def _finish(result, finish: str, query: str | None, solver, recorder) -> None:
    """Print what `--finish` asks for and exit with the result's status.

    `solver()` gives the `solver` model's client, asked through `recorder` as step `finish`, so a
    replay prints the recorded report without asking the model.
    """
    if finish == "solver":
        import asyncio

        from planc.backend.finish import solver_report
        from planc.backend.model_calls import StepModel
        from planc.backend.models import ModelError

        model = StepModel(solver, "solver", "finish", recorder)  # the client made once an inference needs it

        async def report() -> str:
            try:
                return await solver_report(model, query, result.value, result.status, result.message)
            finally:
                await model.aclose()

        try:
            click.echo(asyncio.run(report()))
        except ModelError as error:
            click.echo(f"error: the solver's report failed: {error}", err=True)
            sys.exit(1)
    elif finish == "output":
        _print_json(result.value)
    _exit_status(result)


def _checked_to_run(text: str, name: str, registry, policy, principal: str):
    """`text` (plan text, or a stored plan from `planc compile`) checked for running; refused: exit 1."""
    if _is_stored(text):
        from planc.store.stored import StoredPlanError, load_plan

        try:
            return load_plan(text, registry=registry, policy=policy, principal=principal)
        except StoredPlanError as error:
            click.echo(f"error: {name}: {error}", err=True)
            sys.exit(1)
    from planc.passes.check import check

    checked = check(text, registry=registry, arguments=_plan_arguments(registry, name),
                    policy=policy, principal=principal)
    if not checked.ok:
        _print_text([(name, checked)], stderr=True)
        sys.exit(1)
    return checked


def _print_json(value) -> None:
    """The plan's result as JSON on stdout."""
    import json

    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _exit_status(result) -> None:
    if result.status == "error":
        click.echo(f"exit: {result.message or 'the plan stopped with status error'}", err=True)
        sys.exit(4)


def _open_store(store: str | None):
    from planc.store.run_store import DEFAULT_PATH, RunStore, RunStoreError

    try:
        return RunStore(store or DEFAULT_PATH)
    except RunStoreError as error:
        raise UsageError(str(error)) from None


def _start_recording(store: str | None, checked, registry, policy, arguments, options: dict):
    """The run store and the recorder of a new run; its id goes to stderr."""
    from planc.store.stored import save_plan

    runs = _open_store(store)
    options = {**options, "read": _keep_read_files(runs, registry, policy)}
    recorder = runs.start_run(save_plan(checked, registry=registry, policy=policy), arguments, options)
    click.echo(f"run: {recorder.run_id}", err=True)
    return runs, recorder


def _keep_read_files(runs, registry, policy) -> dict:
    """The planc.toml, lock and policy a run reads, kept in the store by hash: replay reads them back,
    so a run replays as it ran whatever has changed in the project since."""
    from planc.registry.lock import lock_path

    read = {"config": None, "lock": None, "policy": runs.keep_file(policy.text) if policy is not None else None}
    if registry is not None and registry.source is not None:
        try:
            read["config"] = runs.keep_file(registry.source.read_text(encoding="utf-8"))
            lock = lock_path(registry.source)
            read["lock"] = runs.keep_file(lock.read_text(encoding="utf-8")) if lock.is_file() else None
        except (OSError, UnicodeDecodeError):
            read["config"] = None  # it changed under us: replay reads the project's files instead
    return read


def _is_stored(text: str) -> bool:
    """Whether `text` is a stored plan (`planc compile`'s JSON) rather than plan text."""
    if not text.lstrip().startswith("{"):
        return False
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("format") == "planc.plan"


@main.command("compile")
@click.argument("plan")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The stored plan to write.")
@CONFIG_OPTION
@POLICY_OPTION
def compile_command(plan: str, output: str, config: str | None, policy_file: str | None) -> None:
    """Check PLAN and write it as a stored plan that `planc run` runs. Exit 0 ok, 1 with errors."""
    from planc.store.stored import dump, save_plan
    from planc.passes.check import check

    registry = _registry(config, plan=plan)
    policy = _policy(policy_file, registry, 'User::"anonymous"')
    checked = check(_read(plan), registry=registry, arguments=_plan_arguments(registry, plan), policy=policy)
    if not checked.ok:
        _print_text([(plan, checked)], stderr=True)
        sys.exit(1)
    try:
        Path(output).write_text(dump(save_plan(checked, registry=registry, policy=policy)), encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{output}: {error.strerror}") from None
    click.echo(f"wrote {output}", err=True)


def _solver(registry):
    """The `solver` role's model client for `--finish solver`, or a usage error saying what is missing."""
    from planc.backend.models import ModelClient, ModelError

    if registry is None:
        raise UsageError("--finish solver needs a model: no planc.toml here or above declares [models.solver] "
                         "or [models.default]")
    try:
        return ModelClient.for_role(registry, "solver")
    except ModelError as error:
        raise UsageError(f"--finish solver: {error}") from None
