"""The `planc` command: parse arguments, call the library, render. Nothing else.

This module holds the group and what its commands share; each command group lives in its
own module below, imported at the end so that its commands register on `main`.
"""

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
    from planc.passes.policy.load import PolicyError, check_principal, configured_policy_path, load_policy

    try:
        check_principal(principal)
        path = Path(policy_file) if policy_file else configured_policy_path(registry)
        return load_policy(path) if path else None
    except PolicyError as error:
        raise UsageError(str(error)) from None



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
            from planc.passes.cost.cost_words import cost_line

            console.print(f"  cost: {cost_line(result.cost.total)}", style="dim")


def _parse_or_exit(path: str, exit_code: int, text: str | None = None):
    """The ParseResult of `path` (or of `text`, when it was already read from it), or print its
    syntax errors and exit."""
    return _parse_all_or_exit([(path, text)], exit_code)[0]


def _parse_all_or_exit(files: list[tuple[str, str | None]], exit_code: int) -> list:
    """The ParseResult of every (path, text or None to read it) in `files`; when any has syntax
    errors, print those of every file and exit."""
    from planc.syntax.parser import parse

    results = [parse(_read(path) if text is None else text) for path, text in files]
    if any(result.plan is None for result in results):
        from planc.diagnostics.render_text import render_text

        console = _console(stderr=True)
        for (path, _), result in zip(files, results):
            for diagnostic in result.diagnostics if result.plan is None else ():
                console.print(render_text(diagnostic, result.source, path))
        sys.exit(exit_code)
    return results


# Each command group registers its commands on `main` when imported.
from planc.cli import (diff_commands, optimize_commands, plan_commands, registry_commands,  # noqa: E402,F401
                       run_commands, store_commands)
