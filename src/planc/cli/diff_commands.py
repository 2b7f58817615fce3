"""`planc diff`: two plans compared step by step."""

from __future__ import annotations

import sys

import click

from planc.cli.files import is_stored_plan, read_file
from planc.cli.plans import parse_all_or_exit
from planc.cli.printing import console
from planc.cli.usage import UsageError


@click.command("diff")
@click.argument("plan_a", metavar="A")
@click.argument("plan_b", metavar="B")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A review of the changes, or JSON.",
)
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    help="Mark the changes whose steps may change the world (effectful, destructive or open-world), "
    "by the effects this planc.toml declares; the text review lists them first. No planc.toml "
    "is read without it.",
)
def diff_command(plan_a: str, plan_b: str, output_format: str, config: str | None) -> None:
    """Compare plan A with plan B (plan text or stored plans) step by step.

    Steps are matched by what they do and read, not by number: formatting, comments and
    labels change nothing. With --config, the changes to steps that may change the world are
    marked (and come first in the text review). Exit 0 same, 1 different (or a plan with syntax
    errors), 2 a file or a planc.toml that cannot be read.
    """
    from planc.diff import diff_trees

    if plan_a == "-" and plan_b == "-":
        raise UsageError("only one of A and B can be standard input (`-`)")
    registry = None
    if config is not None:  # a planc.toml with a mistake is exit 2 before anything is compared
        from planc.cli.project import find_registry

        registry = find_registry(config)
    parsed_a, parsed_b = parse_all_or_exit([(plan_a, _plan_text(plan_a)), (plan_b, _plan_text(plan_b))])
    plan_a_tree, plan_b_tree = parsed_a.plan, parsed_b.plan
    assert plan_a_tree is not None and plan_b_tree is not None  # parse_all_or_exit exits on a syntax error
    diff = diff_trees(plan_a_tree, plan_b_tree)
    if registry is not None:
        from planc.diff.risk import with_risk

        diff = with_risk(diff, plan_a_tree, plan_b_tree, registry)
    if output_format == "json":
        from planc.diff.render_json import render_json

        click.echo(render_json(diff))
    else:
        from planc.diff.render_text import render_text

        console().print(render_text(diff, plan_a, plan_b), end="")
    sys.exit(0 if diff.same else 1)


def _plan_text(path: str) -> str:
    """The text of the plan in `path`: the file, or the source a stored plan was compiled from."""
    text = read_file(path)
    if not is_stored_plan(text):
        return text
    from planc.syntax.json_input import read_json

    source = read_json(text).get("source")
    if not isinstance(source, str):
        raise UsageError(f"{path}: a stored plan without its source text (no string `source`)")
    return source
