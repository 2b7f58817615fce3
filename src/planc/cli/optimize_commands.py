"""`planc optimize`: the plan as the optimizer rewrites it, and a note (N6xx) for each rewrite."""

from __future__ import annotations

import sys

import click

from planc.cli.files import read_plan
from planc.cli.options import CONFIG_OPTION
from planc.cli.plans import optimized_plan
from planc.cli.printing import print_checked
from planc.cli.project import find_registry, plan_arguments


@click.command("optimize")
@click.argument("plan")
@CONFIG_OPTION
def optimize_command(plan: str, config: str | None) -> None:
    """Print PLAN as the optimizer rewrites it; on stderr, a note for each rewrite saying why it is legal,
    and where missing effects metadata stops one. Nothing runs. Exit 0, 1 when the plan has errors."""
    from planc.passes.check import check

    registry = find_registry(config, plan=plan)
    checked = check(read_plan(plan), registry=registry, arguments=plan_arguments(registry, plan))
    if not checked.ok:
        print_checked([(plan, checked)], stderr=True)
        sys.exit(1)
    optimized = optimized_plan(checked, plan)
    click.echo(optimized.checked.source, nl=False)
