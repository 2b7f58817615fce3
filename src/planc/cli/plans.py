"""A plan made ready for a command: parsed, checked to run, or optimized; where it cannot be, its
problems are printed and the command exits."""

from __future__ import annotations

import sys

import click

from planc.cli.files import is_stored_plan, read_file
from planc.cli.printing import console, print_checked
from planc.cli.project import plan_arguments


def parse_or_exit(path: str, exit_code: int, text: str | None = None):
    """The ParseResult of `path` (or of `text`, when it was already read from it), or print its
    syntax errors and exit."""
    return parse_all_or_exit([(path, text)], exit_code)[0]


def parse_all_or_exit(files: list[tuple[str, str | None]], exit_code: int) -> list:
    """The ParseResult of every (path, text or None to read it) in `files`; when any has syntax
    errors, print those of every file and exit."""
    from planc.syntax.parser import parse

    results = [parse(read_file(path) if text is None else text) for path, text in files]
    if any(result.plan is None for result in results):
        from planc.diagnostics.render_text import render_text

        err = console(stderr=True)
        for (path, _), result in zip(files, results):
            for diagnostic in result.diagnostics if result.plan is None else ():
                err.print(render_text(diagnostic, result.source, path))
        sys.exit(exit_code)
    return results


def checked_to_run(text: str, name: str, registry, policy, principal: str):
    """`text` (plan text, or a stored plan from `planc compile`) checked for running; refused: exit 1."""
    if is_stored_plan(text):
        from planc.store.stored import StoredPlanError, load_plan

        try:
            return load_plan(text, registry=registry, policy=policy, principal=principal)
        except StoredPlanError as error:
            click.echo(f"error: {name}: {error}", err=True)
            sys.exit(1)
    from planc.passes.check import check

    checked = check(text, registry=registry, arguments=plan_arguments(registry, name),
                    policy=policy, principal=principal)
    if not checked.ok:
        print_checked([(name, checked)], stderr=True)
        sys.exit(1)
    return checked


def optimized_plan(checked, path: str):
    """`checked` (a plan without errors, read from `path`) optimized; its notes go to stderr."""
    from planc.diagnostics.render_text import render_text
    from planc.optimize.optimize import optimize

    optimized = optimize(checked)
    err = console(stderr=True)
    for note in optimized.notes:
        err.print(render_text(note, checked.source, path))
    return optimized
