"""A plan made ready for a command: parsed, checked to run, or optimized; where it cannot be, its
problems are printed and the command exits."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING

import click

from planc.cli.files import is_stored_plan, read_file
from planc.cli.printing import MAX_DIAGNOSTICS, console, print_checked, print_some
from planc.cli.project import plan_arguments
from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.optimize.optimize import Optimized
    from planc.passes.check import CheckResult
    from planc.passes.cost.budget import Budget
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry
    from planc.syntax.parser import ParseResult

SYNTAX_ERROR = 1  # the exit code of every command given a plan with syntax errors: the input must be fixed


def parse_or_exit(path: str, text: str | None = None) -> ParseResult:
    """The ParseResult of `path` (or of `text`, when it was already read from it), or print its
    syntax errors and exit 1."""
    return parse_all_or_exit([(path, text)])[0]


def parse_all_or_exit(files: list[tuple[str, str | None]]) -> list[ParseResult]:
    """The ParseResult of every (path, text or None to read it) in `files`; when any has syntax
    errors, print those of every file and exit 1."""
    from planc.syntax.parser import parse

    results = [parse(read_file(path) if text is None else text) for path, text in files]
    if any(result.plan is None for result in results):
        left: int | None = MAX_DIAGNOSTICS
        for (path, _), result in zip(files, results):
            if result.plan is None:
                left = print_syntax_errors(path, result, left)
        sys.exit(SYNTAX_ERROR)
    return results


def print_syntax_errors(path: str, result: ParseResult, left: int | None = MAX_DIAGNOSTICS) -> int | None:
    """The syntax errors of `result` (a ParseResult of `path` with no plan), on standard error: the first
    `left` of them, the rest counted; how many more may be printed after them."""
    return print_some(console(stderr=True), result.diagnostics, result.source, path, left)


def checked_to_run(
    text: str,
    name: str,
    registry: Registry | None,
    policy: Policy | None,
    principal: str,
    *,
    extract: bool = False,
    budget: Budget | None = None,
    approvals: bool = False,
    written_by: frozenset[str] = frozenset(),
    recorded: bool = False,
    connects: bool = True,
) -> CheckResult:
    """`text` (plan text, or a stored plan from `planc compile`) checked for running; refused: exit 1.

    With `extract` the plan is taken out of a model reply first; `budget` (a Budget) adds the
    `--max-*` limits; `approvals` (`--approve`) lets through to the run, where a person decides, the calls
    the policy refuses only for where their values came from; `written_by`: the labels of whoever wrote the
    plan (a run `planc mcp` made, resumed). With no planc.toml, a plan that calls any tool but the control steps is
    refused: nothing declares what those tools are. A stored plan of an older version is refused, naming the
    `planc migrate` that brings it up to date, unless it is `recorded` (a run's record of its plan). When it
    `connects` to the MCP servers it calls (not a replay), a header of theirs whose environment variable is not
    set is exit 2, before anything is recorded or started."""
    limits = budget.keywords() if budget else {}
    if is_stored_plan(text):
        from planc.store.stored import OlderPlan, StoredPlanError, load_plan

        try:
            checked = load_plan(
                text,
                registry=registry,
                policy=policy,
                principal=principal,
                approvals=approvals,
                written_by=written_by,
                recorded=recorded,
                **limits,
            )
        except OlderPlan as error:
            click.echo(
                f"error: {name}: {error.older}: `planc migrate {shlex.quote(name)}` rewrites it, then run it again", err=True
            )
            sys.exit(1)
        except StoredPlanError as error:
            if registry is None:  # away from its project: what is missing is a planc.toml, not its tools
                _refuse_undeclared(name, _checked_bare(text))
            click.echo(f"error: {name}: {error}", err=True)
            sys.exit(1)
    else:
        from planc.passes.check import check
        from planc.syntax.extract import extract as extract_plan

        # The plan taken out of the reply, the rest blanked (so lines and columns are the reply's): what
        # the run records as its plan, and its replay checks again.
        text = extract_plan(text) if extract else text
        checked = check(
            text,
            registry=registry,
            arguments=plan_arguments(registry, name),
            policy=policy,
            principal=principal,
            approvals=approvals,
            written_by=written_by,
            **limits,
        )
        if not checked.ok:
            print_checked([(name, checked)], stderr=True)
            sys.exit(1)
    _refuse_undeclared(name, checked)
    if connects and registry is not None and registry.servers:
        from planc.backend.calls.mcp_runtime import needed_servers
        from planc.registry.mcp.mcp_credentials import missing_variable

        missing = missing_variable(registry.servers[server] for server in needed_servers(checked, registry))
        if missing is not None:
            raise UsageError(f"{registry.source}: {missing}")
    return checked


# What to do when no planc.toml is found, said wherever its absence matters.
NO_CONFIG = (
    "declare the tools in a planc.toml beside the plan or above it (`planc init` writes a "
    "starting one), or name one with --config"
)


def _refuse_undeclared(name: str, checked: CheckResult | None) -> None:
    """Exit 1 naming the tools of `checked` that no planc.toml declares, when there are any."""
    if names := undeclared_tools(checked):
        listed = ", ".join(f"`{tool}`" for tool in names)
        click.echo(f"error: {name}: no planc.toml declares {listed}, so nothing says what to call: {NO_CONFIG}", err=True)
        sys.exit(1)


def _checked_bare(text: str) -> CheckResult | None:
    """The stored plan `text`'s own source checked with no planc.toml (None when it cannot be read)."""
    from planc.passes.check import check
    from planc.store.stored import StoredPlanError, stored_source

    try:
        return check(stored_source(text))
    except StoredPlanError:
        return None


def undeclared_tools(checked: CheckResult | None) -> list[str]:
    """The tools the plan calls that nothing declares, so nothing checked: every one but the control
    steps when it was checked without a planc.toml (with one, an unknown tool is an error, E200)."""
    from planc.syntax.steps import walk_steps

    if checked is None or checked.plan is None or checked.context is None or checked.context.registry is not None:
        return []
    known = checked.resolution.tools if checked.resolution is not None else {}
    return sorted({step.tool.text for step, _ in walk_steps(checked.plan.pipelines) if step not in known})


def optimized_plan(checked: CheckResult, path: str) -> Optimized:
    """`checked` (a plan without errors, read from `path`) optimized; its notes go to stderr."""
    from planc.diagnostics.render_text import render_text
    from planc.optimize.optimize import optimize

    optimized = optimize(checked)
    err = console(stderr=True)
    for note in optimized.notes:
        err.print(render_text(note, checked.source, path))
    return optimized
