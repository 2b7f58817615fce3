"""The `planc` command: parse arguments, call the library, render. Nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import click

FORMATS = ["text", "json", "repair", "sarif", "line"]


class UsageError(click.ClickException):
    """A problem with the command line or its files: one clean message, exit 2."""

    exit_code = 2


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", newline="") as file:  # keep \r\n: spans are offsets into the file
            return file.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a plan file") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror}") from None


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="planc")
def main() -> None:
    """planc: a compiler toolchain for agent plans."""


def _registry(config: str | None, locked: bool = True, plan: str | None = None):
    """The registry of `--config`; else of the nearest planc.toml above `plan`'s folder, then
    above the working directory (so `planc run examples/incidents/triage.plan` finds the
    example's); else None."""
    from planc.registry.config import ConfigError, find_config, load_registry

    near_plan = find_config(Path(plan).resolve().parent) if plan and plan != "-" else None
    path = Path(config) if config else near_plan or find_config(Path.cwd())
    if path is None:
        return None
    try:
        return load_registry(path, locked=locked)
    except ConfigError as error:
        raise UsageError(str(error)) from None


CONFIG_OPTION = click.option("--config", type=click.Path(dir_okay=False),
                             help="The planc.toml to use (default: the nearest one above the plan, else above the working directory).")
POLICY_OPTION = click.option("--policy", "policy_file", type=click.Path(dir_okay=False),
                             help="A Cedar policy file that judges every step (default: `policy` in planc.toml).")
PRINCIPAL_OPTION = click.option("--principal", default='User::"anonymous"', show_default=True,
                                help="Who the plan runs for, as a Cedar entity.")


STORE_OPTION = click.option("--store", type=click.Path(dir_okay=False), envvar="PLANC_STORE",
                            help="The run store (default: $PLANC_STORE, else .planc/runs.sqlite).")


def budget_options(command):
    """`--max-usd`, `--max-calls`, `--max-inferences`: a plan that may cost more is E401."""
    for name, kind, what in (("--max-inferences", click.IntRange(min=0), "make more model inferences"),
                             ("--max-calls", click.IntRange(min=0), "make more tool calls"),
                             ("--max-usd", click.FloatRange(min=0), "cost more dollars")):
        command = click.option(name, type=kind, help=f"E401 when the plan may {what} than this.")(command)
    return command


def _policy(policy_file: str | None, registry, principal: str):
    """The policy of `--policy`, or of planc.toml's `policy`, or None; and `principal` checked."""
    from planc.policy import PolicyError, check_principal, configured_policy_path, load_policy

    try:
        check_principal(principal)
        path = Path(policy_file) if policy_file else configured_policy_path(registry)
        return load_policy(path) if path else None
    except PolicyError as error:
        raise UsageError(str(error)) from None


@main.command("check")
@click.argument("plans", nargs=-1, required=True)
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@budget_options
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="How to print diagnostics.")
@click.option("--extract", is_flag=True, help="Take the plan out of a model reply (markdown fence or prose).")
def check_command(plans: tuple[str, ...], config: str | None, policy_file: str | None, principal: str,
                  max_usd: float | None, max_calls: int | None, max_inferences: int | None,
                  output_format: str, extract: bool) -> None:
    """Parse PLANS and run every pass; nothing runs. Exit 0 without errors, 1 with errors."""
    from planc.check import check

    registry = _registry(config, plan=plans[0])
    policy = _policy(policy_file, registry, principal)

    def checked(path: str):
        return check(_read(path), extract_plan=extract, registry=registry, arguments=_plan_arguments(registry, path),
                     policy=policy, principal=principal, max_usd=max_usd, max_calls=max_calls,
                     max_inferences=max_inferences)

    results = [(path, checked(path)) for path in plans]
    if output_format == "json":
        from planc.diagnostics.render_json import render_json

        for path, result in results:
            click.echo(render_json(path, result))
    elif output_format == "sarif":
        from planc.diagnostics.render_sarif import render_sarif

        click.echo(render_sarif(results))
    elif output_format == "repair":
        from planc.diagnostics.render_repair import render_repair

        for path, result in results:
            click.echo(render_repair(result.source, result.diagnostics), nl=False)
    elif output_format == "line":
        from planc.diagnostics.render_line import render_line

        for path, result in results:
            for diagnostic in result.diagnostics:
                click.echo(render_line(diagnostic, path))
    else:
        _print_text(results)
    sys.exit(0 if all(result.ok for _, result in results) else 1)


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
@STORE_OPTION
def run_command(plan: str, config: str | None, policy_file: str | None, principal: str, args: tuple[str, ...],
                events: str | None, finish: str, query: str | None, approve: bool, store: str | None) -> None:
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
    from planc.backend.approve import approval_gate
    from planc.backend.progress import Progress, fan_out

    console = _console(stderr=True)
    most = checked.cost.total.calls if checked.cost is not None else None
    progress = Progress(console, int(most.high) if most is not None and most.bounded else None)
    sink = open(events, "w", encoding="utf-8") if events else None  # closed below
    writer = (lambda event: sink.write(json.dumps(event, default=str) + "\n")) if sink else None
    runs, recorder = _start_recording(store, checked, registry, policy, arguments)
    hooks = Hooks(gate=approval_gate(console, pause=progress.paused) if approve else None,
                  events=fan_out(writer, progress.sink, recorder.event))
    try:
        with progress:
            result = asyncio.run(run_plan(checked, registry=registry, arguments=arguments, hooks=hooks,
                                          policy=policy, principal=principal, recorder=recorder))
    except RunError as error:
        runs.finish_run(recorder.run_id, "failed", message=str(error))
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    finally:
        if sink:
            sink.close()
    runs.finish_run(recorder.run_id, result.status, result.value, result.message)
    runs.close()
    if finish == "output":
        _print_result(result)
        return
    if finish == "solver":
        from planc.backend.finish import solver_report
        from planc.backend.models import ModelError

        try:
            click.echo(asyncio.run(solver_report(solver, query, result.value, result.status, result.message)))
        except ModelError as error:
            click.echo(f"error: the solver's report failed: {error}", err=True)
            sys.exit(1)
    _exit_status(result)


def _checked_to_run(text: str, name: str, registry, policy, principal: str):
    """`text` (plan text, or a stored plan from `planc compile`) checked for running; refused: exit 1."""
    if _is_stored(text):
        from planc.backend.stored import StoredPlanError, load_plan

        try:
            return load_plan(text, registry=registry, policy=policy, principal=principal)
        except StoredPlanError as error:
            click.echo(f"error: {name}: {error}", err=True)
            sys.exit(1)
    from planc.check import check

    checked = check(text, registry=registry, arguments=_plan_arguments(registry, name),
                    policy=policy, principal=principal)
    if not checked.ok:
        _print_text([(name, checked)], stderr=True)
        sys.exit(1)
    return checked


def _print_result(result) -> None:
    """The plan's result as JSON on stdout; exit 4 when an exit step stopped it with status error."""
    import json

    click.echo(json.dumps(result.value, indent=2, ensure_ascii=False, default=str))
    _exit_status(result)


def _exit_status(result) -> None:
    if result.status == "error":
        click.echo(f"exit: {result.message or 'the plan stopped with status error'}", err=True)
        sys.exit(4)


def _open_store(store: str | None):
    from planc.backend.run_store import DEFAULT_PATH, RunStore, RunStoreError

    try:
        return RunStore(store or DEFAULT_PATH)
    except RunStoreError as error:
        raise UsageError(str(error)) from None


def _start_recording(store: str | None, checked, registry, policy, arguments):
    """The run store and the recorder of a new run; its id goes to stderr."""
    from planc.backend.stored import save_plan

    runs = _open_store(store)
    recorder = runs.start_run(save_plan(checked, registry=registry, policy=policy), arguments)
    click.echo(f"run: {recorder.run_id}", err=True)
    return runs, recorder


def _stored_run(store: str | None, run_id: str):
    from planc.backend.run_store import RunStoreError

    runs = _open_store(store)
    try:
        return runs.run(run_id)
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    finally:
        runs.close()


def _when(timestamp) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "-"


@main.command("runs")
@STORE_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def runs_command(store: str | None, output_format: str) -> None:
    """List the recorded runs."""
    import json

    runs = _open_store(store)
    try:
        listed = runs.runs()
    finally:
        runs.close()
    if output_format == "json":
        click.echo(json.dumps(listed, indent=2, ensure_ascii=False))
        return
    for run in listed:
        click.echo(f"{run['id']}  {_when(run['started_at'])}  {run['status']:<8} {run['calls']} call"
                   f"{'s' if run['calls'] != 1 else ''}")


@main.command("show-run")
@click.argument("run_id", metavar="RUN")
@STORE_OPTION
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def show_run_command(run_id: str, store: str | None, output_format: str) -> None:
    """Show one recorded run, call by call."""
    import json

    run = _stored_run(store, run_id)
    if output_format == "json":
        click.echo(json.dumps(run, indent=2, ensure_ascii=False))
        return
    click.echo(f"run {run['id']}: {run['status']}, started {_when(run['started_at'])}, "
               f"finished {_when(run['finished_at'])}")
    if run["arguments"]:
        click.echo(f"arguments: {json.dumps(run['arguments'], ensure_ascii=False)}")
    for call in run["calls"]:
        took = f" ({call['finished_at'] - call['started_at']:.3f}s)" if call["finished_at"] else ""
        click.echo(f"step {call['step']}: {call['tool']}({json.dumps(call['input'], ensure_ascii=False)}){took}")
        if call["error"] is not None:
            click.echo(f"  error: {call['error']}")
        elif call["finished_at"] is None:
            click.echo("  no result recorded (the run stopped during the call)")
        else:
            click.echo(f"  -> {json.dumps(call['output'], ensure_ascii=False)}")
    if run["message"]:
        click.echo(f"message: {run['message']}")
    if run["status"] in ("ok", "error"):
        click.echo(f"output: {json.dumps(run['output'], ensure_ascii=False)}")


@main.command("replay")
@click.argument("run_id", metavar="RUN")
@STORE_OPTION
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False),
              help="Replay this plan (text or stored) against the record instead of the run's own.")
def replay_command(run_id: str, store: str | None, config: str | None, policy_file: str | None, principal: str,
                   plan_file: str | None) -> None:
    """Run RUN's plan again, every tool result from the record: no tool is called.

    Exit 0 ok, 1 refused, failed or diverged from the record, 4 an exit step with status error.
    """
    import asyncio

    from planc.backend.interpreter import run_plan
    from planc.backend.run_store import Replay
    from planc.backend.stored import dump
    from planc.backend.values import RunError

    run = _stored_run(store, run_id)
    registry = _registry(config, plan=plan_file)
    policy = _policy(policy_file, registry, principal)
    text = _read(plan_file) if plan_file else dump(run["plan"])
    checked = _checked_to_run(text, plan_file or run_id, registry, policy, principal)
    try:
        result = asyncio.run(run_plan(checked, registry=registry, arguments=run["arguments"], policy=policy,
                                      principal=principal, recorder=Replay(run)))
    except RunError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    _print_result(result)


@main.command("resume")
@click.argument("run_id", metavar="RUN")
@STORE_OPTION
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
def resume_command(run_id: str, store: str | None, config: str | None, policy_file: str | None,
                   principal: str) -> None:
    """Continue RUN, whose process died, in the same run record.

    Calls with a recorded result come from the record; a call started and never finished is called
    again only if its tool is idempotent, else the run stops with "outcome unknown".
    Exit 0 ok, 1 refused, failed or outcome unknown, 4 an exit step with status error.
    """
    import asyncio

    from planc.backend.interpreter import run_plan
    from planc.backend.run_store import Resume
    from planc.backend.stored import StoredPlanError, dump, load_plan
    from planc.backend.values import RunError

    run = _stored_run(store, run_id)
    if run["status"] in ("ok", "error"):
        click.echo(f"error: run {run_id} already finished ({run['status']}): nothing to resume", err=True)
        sys.exit(1)
    registry = _registry(config, plan=None)
    policy = _policy(policy_file, registry, principal)
    try:
        checked = load_plan(dump(run["plan"]), registry=registry, policy=policy, principal=principal)
    except StoredPlanError as error:
        click.echo(f"error: {run_id}: {error}", err=True)
        sys.exit(1)
    runs = _open_store(store)
    recorder = Resume(runs, run)
    click.echo(f"run: {run_id} (resumed)", err=True)
    try:
        result = asyncio.run(run_plan(checked, registry=registry, arguments=run["arguments"], policy=policy,
                                      principal=principal, recorder=recorder))
    except RunError as error:
        runs.finish_run(run_id, "failed", message=str(error))
        runs.close()
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    runs.finish_run(run_id, result.status, result.value, result.message)
    runs.close()
    _print_result(result)


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
    from planc.backend.stored import dump, save_plan
    from planc.check import check

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


def _plan_arguments(registry, path: str):
    """The `params` of the plan file `path` when planc.toml declares it, which type its `$args`."""
    return registry.plan_arguments(Path(path)) if registry and path != "-" else None


def _print_text(results, stderr: bool = False) -> None:
    from planc.diagnostics.render_text import render_text

    console = _console(stderr=stderr)
    for path, result in results:
        for diagnostic in result.diagnostics:
            console.print(render_text(diagnostic, result.source, path))
        errors = sum(d.is_error for d in result.diagnostics)
        warnings = len(result.diagnostics) - errors
        if result.ok:
            summary = f"{path}: ok, {result.steps} step{'s' if result.steps != 1 else ''}"
            console.print(summary + (f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""),
                          style="green")
        else:
            console.print(f"{path}: {errors} error{'s' if errors != 1 else ''}", style="bold red")
        if result.cost is not None:
            from planc.passes.cost_words import cost_line

            console.print(f"  cost: {cost_line(result.cost.total)}", style="dim")


def _parse_or_exit(path: str, exit_code: int):
    """The ParseResult of `path`, or print its syntax errors and exit."""
    from planc.syntax.parser import parse

    result = parse(_read(path))
    if result.plan is None:
        from planc.diagnostics.render_text import render_text

        console = _console(stderr=True)
        for diagnostic in result.diagnostics:
            console.print(render_text(diagnostic, result.source, path))
        sys.exit(exit_code)
    return result


@main.command("fmt")
@click.argument("plan")
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the file is not in canonical form.")
@click.option("--write", is_flag=True, help="Rewrite the file in canonical form.")
def fmt_command(plan: str, check_only: bool, write: bool) -> None:
    """Print PLAN in the canonical form."""
    from planc.syntax.format import format_source

    result = _parse_or_exit(plan, 2)
    formatted = format_source(result)
    if check_only:
        if formatted != result.source:
            click.echo(f"{plan}: would be reformatted", err=True)
            sys.exit(1)
        return
    if write:
        if plan == "-":
            raise UsageError("--write needs a file, not standard input")
        if formatted != result.source:
            Path(plan).write_text(formatted, encoding="utf-8")
        return
    click.echo(formatted, nl=False)


@main.command("show")
@click.argument("plan")
@CONFIG_OPTION
@click.option("--format", "output_format", type=click.Choice(["tree", "json"]), default="tree", show_default=True)
def show_command(plan: str, config: str | None, output_format: str) -> None:
    """Show the tree of PLAN, what each step may cost, and which steps can change anything."""
    from planc.check import check
    from planc.passes.blast_radius import blast_radius
    from planc.syntax.steps import step_paths

    source = _parse_or_exit(plan, 1).source
    registry = _registry(config, plan=plan)
    result = check(source, registry=registry, arguments=_plan_arguments(registry, plan))
    paths = step_paths(result.plan)
    costs, radius = result.cost, blast_radius(result.resolution, registry)
    if output_format == "json":
        import json

        from planc.syntax.data import to_data

        per_step = {step: {"cost": cost.to_json()} for step, cost in costs.steps.items()}
        data = to_data(result.plan, paths=paths, extra=per_step)
        data.update(cost=costs.total.to_json(), blast_radius=radius.to_json())
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    from planc.passes.blast_radius import blast_radius_lines
    from planc.passes.cost_words import cost_line, step_note
    from planc.syntax.tree_view import tree_view

    console = _console()
    console.print(tree_view(result.plan, paths, plan, {step: step_note(cost) for step, cost in costs.steps.items()}))
    console.print(f"cost: {cost_line(costs.total)}")
    console.print("blast radius:" + ("" if registry else " (no planc.toml: every tool counts as effectful, "
                                                        "destructive and open-world)"))
    for line in blast_radius_lines(radius):
        console.print(f"  {line}", highlight=False, markup=False)


@main.group("policy")
def policy_group() -> None:
    """The Cedar policy that judges a plan's calls (docs/policy.md)."""


@policy_group.command("explain")
@click.argument("plan")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def policy_explain_command(plan: str, config: str | None, policy_file: str | None, principal: str,
                           output_format: str) -> None:
    """Show, per step of PLAN, the policy's decision and the policies that made it.

    Exit 0 when every step is allowed, 1 when one is denied or PLAN has syntax errors.
    """
    from planc.check import check

    registry = _registry(config, plan=plan)
    policy = _policy(policy_file, registry, principal)
    if policy is None:
        raise UsageError("no policy: name one with --policy, or with `policy = \"...\"` in planc.toml")
    result = check(_read(plan), registry=registry, policy=policy, principal=principal)
    if result.plan is None:  # syntax errors: there are no steps to explain
        _print_text([(plan, result)])
        sys.exit(1)
    from planc.policy.explain import explain_json, explain_table

    if output_format == "json":
        import json

        click.echo(json.dumps(explain_json(result, policy, principal), ensure_ascii=False))
    else:
        _console().print(explain_table(result, policy, principal))
    sys.exit(0 if all(d.allowed for d in result.policy.decisions.values()) else 1)


@main.group("registry")
def registry_group() -> None:
    """The tools a plan may call."""


@registry_group.command("list")
@CONFIG_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def registry_list_command(config: str | None, output_format: str) -> None:
    """List the tools: their parameters and effects."""
    from planc.registry.listing import registry_json, registry_table

    registry = _registry(config)
    if registry is None:
        raise UsageError("no planc.toml here or above; name one with --config")
    if output_format == "json":
        import json

        click.echo(json.dumps(registry_json(registry), indent=2, ensure_ascii=False))
    else:
        _console().print(registry_table(registry))


@registry_group.command("sync")
@CONFIG_OPTION
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Seconds each MCP server has to start and list its tools.")
def registry_sync_command(config: str | None, timeout: float) -> None:
    """Ask each MCP server for its tools and write planc.lock.json. Exit 1 if a server failed."""
    from planc.registry.mcp_sync import SyncError, sync

    registry = _registry(config, locked=False)  # the lock is what is being rewritten: it may be stale or broken
    if registry is None:
        raise UsageError("no planc.toml here or above; name one with --config")
    try:
        result = sync(registry, timeout=timeout)
    except SyncError as error:
        raise UsageError(str(error)) from None
    for server, count in result.counts.items():
        click.echo(f"{server}: {count} tool{'s' if count != 1 else ''} locked")
    for failure in result.failures:
        kept = " (its earlier lock entry is kept)" if failure.server in result.kept else ""
        click.echo(f"error: {failure}{kept}", err=True)
    click.echo(f"wrote {result.path}")
    sys.exit(1 if result.failures else 0)


@main.command("corpus")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="Fail if a pass rate drops below this baseline.")
@click.option("--update", is_flag=True, help="Write the current pass rates to --baseline.")
def corpus_command(directory: Path, baseline: Path | None, update: bool) -> None:
    """Check every case of the corpus in DIRECTORY against its expectation."""
    import json

    from planc import corpus

    try:
        outcomes = [corpus.run_case(case) for case in corpus.load_cases(directory)]
    except corpus.CorpusError as error:
        raise UsageError(str(error)) from None
    counts = corpus.tally(outcomes)
    for outcome in outcomes:
        if not outcome.passed:
            case = outcome.case
            click.echo(f"FAIL {case.location} {case.category}: {case.name}\n"
                       f"     expected {_codes(case.expected)}, found {_codes(outcome.found)}")
    for name, numbers in counts["categories"].items():
        click.echo(f"{name:<24} {numbers['passed']:>4}/{numbers['cases']:<4} {corpus.rate(numbers):7.1%}")
    total = counts["total"]
    click.echo(f"{'total':<24} {total['passed']:>4}/{total['cases']:<4} {corpus.rate(total):7.1%}")
    if baseline is None:
        return
    if update:
        baseline.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {baseline}")
        return
    if not baseline.exists():
        raise UsageError(f"{baseline}: no such baseline (create it with --update)")
    try:
        dropped = corpus.regressions(counts, corpus.load_baseline(baseline))
    except corpus.CorpusError as error:
        raise UsageError(str(error)) from None
    for line in dropped:
        click.echo(f"below baseline: {line}", err=True)
    sys.exit(1 if dropped else 0)


def _codes(found) -> str:
    return ", ".join(f"{code} {line}:{column}" for code, line, column in found) or "ok"
