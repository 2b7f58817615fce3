"""`planc prompt` and `planc plan`: the model's half of the loop."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from planc.cli.options import (
    ANSWERS_OPTION,
    CONFIG_OPTION,
    POLICY_OPTION,
    PRINCIPAL_OPTION,
    STORE_OPTION,
    budget_options,
)
from planc.cli.printing import console, print_checked
from planc.cli.project import find_policy, find_registry, principal_for, with_learned_shapes
from planc.cli.runs import ask_hook, open_store, refused_arguments, run_on_terminal
from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.backend.run.recorders import Recorder as StoreRecorder
    from planc.backend.run.recorders import Replay
    from planc.backend.run.spec import RunSpec
    from planc.passes.check import CheckResult
    from planc.passes.policy.load import Policy
    from planc.planning.planner import Planned
    from planc.registry.loading.registry import Registry
    from planc.store.run_store import RunStore


@click.command("prompt")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option(
    "--bare", is_flag=True, help="Ask for the bare plan, as a grammar-constrained decoder writes it, rather than a fenced block."
)
@STORE_OPTION
def prompt_command(config: str | None, policy_file: str | None, principal: str | None, bare: bool, store: str | None) -> None:
    """Print the system prompt that teaches a model to write plans for this registry.

    A tool that declares no `returns` is shown with the shape the run store learned of its results, if any.
    The tools the policy forbids the principal whatever their arguments are left out (stderr names
    them, with the policy's reason). Its size goes to stderr, in characters and (about) tokens.
    """
    from planc.planning.prompt import estimated_tokens, forbidden, system_prompt

    registry = with_learned_shapes(find_registry(config), store)
    principal = principal_for(registry, principal)
    policy = find_policy(policy_file, registry, principal)
    text = system_prompt(registry, fenced=not bare, policy=policy, principal=principal)
    click.echo(text, nl=False)
    tools = [registry.tools[name] for name in sorted(registry.tools)] if registry is not None else []
    for name, reason in forbidden(tools, policy, principal).items():
        click.echo(f"left out: {name}, which the policy forbids ({reason})", err=True)
    where = f"for {registry.source}" if registry is not None else "with no planc.toml: the control steps only"
    click.echo(f"prompt {where}: {len(text):,} characters, about {estimated_tokens(text):,} tokens", err=True)


@click.command("plan")
@click.argument("task")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@budget_options
@click.option(
    "--model",
    "role",
    default="planner",
    show_default=True,
    help="The model role to ask ([models.ROLE] in planc.toml, else [models.default]).",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="How many answers the model may give: the first, and a repair of each failing one.",
)
@click.option(
    "--grammar",
    type=click.Choice(["lark", "gbnf"]),
    help="Send the grammar of the language, specialised to the registry, with each request.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the checked plan to FILE.")
@click.option("--run", "then_run", is_flag=True, help="Run the checked plan, as `planc run` would.")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE", help="With --run: a run argument.")
@click.option("--arg-json", "json_args", multiple=True, metavar="NAME=JSON", help="With --run: a run argument as JSON.")
@ANSWERS_OPTION
@STORE_OPTION
def plan_command(
    task: str,
    config: str | None,
    policy_file: str | None,
    principal: str | None,
    max_usd: float | None,
    max_calls: int | None,
    max_inferences: int | None,
    role: str,
    rounds: int,
    grammar: str | None,
    output: str | None,
    then_run: bool,
    args: tuple[str, ...],
    json_args: tuple[str, ...],
    answers_file: str | None,
    store: str | None,
) -> None:
    """Ask a model for a plan that does TASK, and repair it with planc's diagnostics until it checks.

    Each round shows the model, for each tool that declares no `returns`, the shape the run store has
    learned of its results by then.

    Prints the checked plan (or writes it with -o); exit 1 with the last diagnostics when the rounds
    run out. The exchange is recorded in the run store: `planc show-run` shows it, `planc replay`
    reproduces it with no model. With --run the plan then runs, exit codes as `planc run`.
    """
    from planc.backend.models.client import ModelClient, ModelError
    from planc.backend.run.arguments import parse_arguments
    from planc.backend.run.recorded_run import code_tools, keep_read_files
    from planc.backend.run.recorders import Recorder
    from planc.backend.run.spec import ReadFiles, RunSpec, file_path
    from planc.passes.cost.budget import Budget
    from planc.planning.planner import plan
    from planc.store.run_store import RunStoreError

    if (args or json_args or answers_file) and not then_run:
        raise UsageError("--arg, --arg-json and --answers are only read with --run")
    registry = find_registry(config)
    if registry is None:
        raise UsageError(
            "planc plan needs a planc.toml (here or above, or --config): the tools to plan with and [models.*] to ask"
        )
    try:  # a model that is not configured is a configuration mistake: exit 2, nothing recorded
        ModelClient.for_role(registry, role)
    except ModelError as error:
        raise UsageError(str(error)) from None
    principal = principal_for(registry, principal)
    if then_run:
        ask_hook(answers_file, console(stderr=True))  # a file that cannot be used: exit 2, nothing asked
    policy = find_policy(policy_file, registry, principal)
    try:
        arguments = parse_arguments(args, json_args)
    except ValueError as error:
        raise UsageError(str(error)) from None
    runs = open_store(store, registry)
    planned_options = {
        "task": task,
        "role": role,
        "rounds": rounds,
        "grammar": grammar,
        "run": then_run,
        "budget": [max_usd, max_calls, max_inferences],
        "output": output,
    }
    spec = RunSpec(
        principal=principal,
        budget=Budget(max_usd, max_calls, max_inferences),
        arguments=arguments,
        config=file_path(registry.source),
        policy=file_path(policy_file),
        planned=planned_options,
        read=ReadFiles(**keep_read_files(runs, registry, policy)),
        code_tools=code_tools(registry),
    )
    try:
        recorder = Recorder(runs, runs.start_run(None, arguments, spec.to_record()))
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    click.echo(f"run: {recorder.run_id}", err=True)
    try:
        planned = plan(
            task,
            registry=registry,
            policy=policy,
            principal=principal,
            budget=Budget(max_usd, max_calls, max_inferences),
            role=role,
            rounds=rounds,
            grammar=grammar,
            recorder=recorder,
            shapes=runs.learned_shapes,
        )
    except ModelError as error:
        runs.finish_run(recorder.run_id, "failed", message=str(error))
        runs.close()
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    finish_planning(planned, runs, recorder, registry, policy, spec, answers_file)


def finish_planning(
    planned: Planned,
    runs: RunStore | None,
    recorder: StoreRecorder | Replay,
    registry: Registry | None,
    policy: Policy | None,
    spec: RunSpec,
    answers_file: str | None = None,
) -> None:
    """Say how the planning went, record it, and print, write or run the plan: what `planc plan` does after
    the model's last answer, and what its replay does after the recorded one."""
    from planc.backend.run.launch import ArgumentsRefused, Launch, checked_arguments
    from planc.backend.run.recorded_run import RecordedRun
    from planc.backend.run.spec import RunWiring
    from planc.store.stored import save_plan

    err = console(stderr=True)
    if runs is not None:
        runs.keep_rounds(
            recorder.run_id,
            [(round_.checked.ok, [d.code for d in round_.checked.diagnostics if d.is_error]) for round_ in planned.rounds],
        )
    for number, round_ in enumerate(planned.rounds, start=1):
        errors = sum(d.is_error for d in round_.checked.diagnostics)
        said = "checks" if round_.checked.ok else f"{errors} error{'s' if errors != 1 else ''}"
        err.print(
            f"round {number}: {said}" + ("; the diagnostics went back to the model" if round_.repair else ""), highlight=False
        )
    if not planned.ok:
        print_checked([("reply", planned.checked)], stderr=True)
        message = f"no plan checked after {len(planned.rounds)} round{'s' if len(planned.rounds) > 1 else ''}"
        _finish(runs, recorder, "failed", message=message)
        click.echo(f"error: {message}", err=True)
        sys.exit(1)
    text = planned.text
    assert text is not None  # the plan checked
    _set_plan(runs, recorder, save_plan(planned.checked, registry=registry, policy=policy), planned.checked)
    assert spec.planned is not None  # a planned run's
    then_run, output = spec.planned["run"], spec.planned["output"]
    if not then_run:
        _finish(runs, recorder, "ok", output=text)
    if output:  # written before it runs too (-o with --run), so the plan is kept whatever the run does
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as error:
            raise UsageError(f"{output}: {error.strerror}") from None
        click.echo(f"wrote {output}", err=True)
    elif not then_run:
        click.echo(text, nl=False)
    if not then_run:
        return
    try:  # the plan's run, in the record its planning began, once its arguments fit it
        spec = attrs.evolve(spec, arguments=checked_arguments(planned.checked, spec.arguments))
    except ArgumentsRefused as error:
        # Refused as every door refuses a run: before anything runs, with no run recorded. The planning
        # went well, and its record keeps the plan, as `planc plan` without --run records it.
        _finish(runs, recorder, "ok", output=text, message=f"the plan's run was refused, and nothing ran: {error}")
        kept = recorder.run_id
        refused_arguments(
            error, "plan", f"the plan's run is refused, and nothing ran; run {kept} keeps the plan: `planc show-run {kept}`"
        )
    launch = Launch.continued(
        planned.checked,
        spec,
        RunWiring(),
        lambda store: RecordedRun(planned.checked, registry, policy, spec, recorder, store),
        registry=registry,
        policy=policy,
    )
    run_on_terminal(
        launch,
        registry=registry,
        store=None,
        events=None,
        otel=False,
        answers_file=answers_file,
        name="plan",
        said=None,
        writes=runs is not None,
        opened=runs,
    )


def _set_plan(runs: RunStore | None, recorder: StoreRecorder | Replay, stored: dict, checked: CheckResult) -> None:
    from planc.store.plan_steps import checked_step_rows

    if runs is not None:
        runs.set_plan(recorder.run_id, stored, checked_step_rows(checked))


def _finish(
    runs: RunStore | None, recorder: StoreRecorder | Replay, status: str, output: object = None, message: str | None = None
) -> None:
    if runs is not None:
        runs.finish_run(recorder.run_id, status, output, message)
