"""`planc optimize`: the plan as the optimizer rewrites it, and a note (N6xx) for each rewrite."""

from __future__ import annotations

import sys

import click

from planc.cli import CONFIG_OPTION, _console, _plan_arguments, _print_text, _read, _registry, main


@main.command("optimize")
@click.argument("plan")
@CONFIG_OPTION
def optimize_command(plan: str, config: str | None) -> None:
    """Print PLAN as the optimizer rewrites it; on stderr, a note for each rewrite saying why it is legal,
    and where missing effects metadata stops one. Nothing runs. Exit 0, 1 when the plan has errors."""
    from planc.passes.check import check

    registry = _registry(config, plan=plan)
    checked = check(_read(plan), registry=registry, arguments=_plan_arguments(registry, plan))
    if not checked.ok:
        _print_text([(plan, checked)], stderr=True)
        sys.exit(1)
    optimized = optimized_plan(checked, plan)
    click.echo(optimized.checked.source, nl=False)


def optimized_plan(checked, path: str):
    """`checked` (a plan without errors, read from `path`) optimized; its notes go to stderr."""
    from planc.diagnostics.render_text import render_text
    from planc.optimize.optimize import optimize

    optimized = optimize(checked)
    console = _console(stderr=True)
    for note in optimized.notes:
        console.print(render_text(note, checked.source, path))
    return optimized
