"""`planc check`, `fmt`, `show` and `corpus`: commands that read plans and run nothing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from planc.cli.files import plan_paths, read_file, read_plan
from planc.cli.options import (
    CONFIG_OPTION,
    POLICY_OPTION,
    PRINCIPAL_JSON_OPTION,
    PRINCIPAL_OPTION,
    STORE_OPTION,
    budget_options,
)
from planc.cli.plans import NO_CONFIG, parse_or_exit, print_syntax_errors, undeclared_tools
from planc.cli.printing import MAX_DIAGNOSTICS, console, print_checked, print_wide
from planc.cli.project import find_policy, find_registry, plan_arguments, principal_for, principal_given, with_learned_shapes
from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.passes.check import CheckResult
    from planc.registry.loading.registry import Registry

FORMATS = ["text", "json", "repair", "sarif", "line"]


@click.command("check")
@click.argument("plans", nargs=-1, required=True)
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@PRINCIPAL_JSON_OPTION
@budget_options
@click.option(
    "--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True, help="How to print diagnostics."
)
@click.option("--extract", is_flag=True, help="Take the plan out of a model reply (markdown fence or prose).")
@click.option("--fix", is_flag=True, help="Apply the fixes the diagnostics carry, and rewrite the files.")
@click.option("--diff", "show_diff", is_flag=True, help="With --fix: print the fixes as a diff, and write nothing.")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option(
    "--ignore",
    "ignored",
    multiple=True,
    metavar="CODE[,CODE]",
    help="Leave out these warnings and notes (errors cannot be ignored).",
)
@click.option(
    "--max-diagnostics",
    type=click.IntRange(min=0),
    default=MAX_DIAGNOSTICS,
    show_default=True,
    help="The text format prints this many diagnostics and counts the rest (0: all). The other formats print every one.",
)
@STORE_OPTION
def check_command(
    plans: tuple[str, ...],
    config: str | None,
    policy_file: str | None,
    principal: str | None,
    principal_json: str | None,
    max_usd: float | None,
    max_calls: int | None,
    max_inferences: int | None,
    output_format: str,
    extract: bool,
    fix: bool,
    show_diff: bool,
    strict: bool,
    ignored: tuple[str, ...],
    max_diagnostics: int,
    store: str | None,
) -> None:
    """Parse PLANS (files, or folders of .plan files; a compiled plan too) and run every pass; nothing
    runs. A tool without `returns` is checked with the shape the run store learned of its results, if any
    (W507). Exit 0 without errors, 1 with errors (or warnings, with --strict), 2 when a file cannot be read."""
    from planc.passes.check import check

    if show_diff and not fix:
        raise UsageError("--diff shows what --fix would change: give both")
    leave_out = ignored_codes(ignored)
    policy_of: dict = {}

    principal, principals = principal_given(principal, principal_json)

    def checked(path: str) -> CheckResult:
        found = find_registry(config, plan=path)
        if id(found) not in policy_of:
            who = principal_for(found, principal)
            policy_of[id(found)] = (
                found,
                with_learned_shapes(found, store),
                who,
                find_policy(policy_file, found, who, principals),
            )
        _, registry, who, policy = policy_of[id(found)]

        def check_text(text: str) -> CheckResult:
            return check(
                text,
                extract_plan=extract,
                registry=registry,
                arguments=plan_arguments(registry, path),
                policy=policy,
                principal=who,
                max_usd=max_usd,
                max_calls=max_calls,
                max_inferences=max_inferences,
            )

        result = check_text(read_plan(path))
        if fix:
            result = fixed(path, result, show_diff, check_text, extract)
        return without(result, leave_out)

    results, unreadable = [], []
    for path in plan_paths(plans):
        try:
            results.append((path, checked(path)))
        except UsageError as error:  # one file that cannot be read does not stop the others
            unreadable.append(error.message)
    print_results(results, output_format, max_diagnostics)
    for message in dict.fromkeys(unreadable):  # a planc.toml or policy that cannot be read: said once
        click.echo(f"Error: {message}", err=True)
    unchecked = [path for path, result in results if undeclared_tools(result)]
    if unchecked:
        calls = "they call" if len(unchecked) > 1 else "it calls"
        click.echo(
            f"warning: no planc.toml was found for {', '.join(unchecked)}: the tools {calls} were not "
            f"checked (their names, arguments, effects and costs); {NO_CONFIG}",
            err=True,
        )
    failed = any(not result.ok or (strict and result.diagnostics) for _, result in results) or (strict and unchecked)
    sys.exit(2 if unreadable else 1 if failed else 0)


def print_results(results: list[tuple[str, CheckResult]], output_format: str, max_diagnostics: int = MAX_DIAGNOSTICS) -> None:
    if output_format == "json":
        from planc.diagnostics.render_json import render_json

        for path, result in results:
            click.echo(render_json(path, result))
    elif output_format == "sarif":
        from planc.diagnostics.render_sarif import render_sarif

        click.echo(render_sarif(results))
    elif output_format == "repair":
        from planc.diagnostics.render_repair import render_repair

        for _, result in results:
            click.echo(render_repair(result.source, result.diagnostics), nl=False)
    elif output_format == "line":
        from planc.diagnostics.render_line import render_line

        for path, result in results:
            for diagnostic in result.diagnostics:
                click.echo(render_line(diagnostic, path))
    else:
        print_checked(results, limit=max_diagnostics, show_all="use --max-diagnostics 0 to show them all")


def ignored_codes(given: tuple[str, ...]) -> frozenset[str]:
    """The codes `--ignore` names; naming an error is a usage error, as errors cannot be ignored."""
    from planc.diagnostics.codes import CODES

    codes = frozenset(code.strip().upper() for option in given for code in option.split(",") if code.strip())
    for code in sorted(codes):
        if code not in CODES:
            raise UsageError(f"--ignore {code}: no such diagnostic code")
        if code.startswith("E"):
            raise UsageError(f"--ignore {code}: {code} is an error, and errors cannot be ignored")
    return codes


def without(result: CheckResult, codes: frozenset[str]) -> CheckResult:
    """`result` less the diagnostics of `codes` (warnings and notes only)."""
    if not codes:
        return result
    import attrs

    return attrs.evolve(result, diagnostics=tuple(d for d in result.diagnostics if d.code not in codes))


FIX_ROUNDS = 10  # fixes applied, the text checked again, so many times at most: each round must change it


def fixed(path: str, result: CheckResult, show_diff: bool, recheck: Callable[[str], CheckResult], extracted: bool) -> CheckResult:
    """`result` with the fixes its diagnostics carry applied to the file at `path` (printed as a diff
    instead, with `show_diff`), again and again until none is left (a syntax fix lets the later passes
    run, and their fixes come next); the check of the fixed text. Only plan text is edited: a file with
    prose around its plan is fixed only with `--extract` (the plan inside, the prose kept), else refused."""
    from planc.diagnostics.fixes import apply_fixes
    from planc.syntax.extract import extract

    plan_only = extract(result.source).split("\n")
    prose = [
        line
        for line, kept in zip(result.source.split("\n"), plan_only)
        if line != kept and line.strip() and not line.strip().startswith("#")
    ]  # a comment is plan text
    if not extracted and prose:
        raise UsageError(
            f"{path}: --fix edits plan text only, and this file has prose around its plan: "
            "give --extract to fix the plan inside it and keep the prose"
        )
    text, checked = result.source, result
    for _ in range(FIX_ROUNDS):
        after = apply_fixes(text, checked.diagnostics)
        if after == text:
            break
        text, checked = after, recheck(after)
    if text == result.source:
        return result
    if show_diff:
        import difflib

        click.echo(
            "".join(
                difflib.unified_diff(
                    result.source.splitlines(keepends=True), text.splitlines(keepends=True), f"{path}", f"{path} (fixed)"
                )
            ),
            nl=False,
        )
        return result
    if path == "-":
        raise UsageError("--fix rewrites files, and this plan came from standard input: use --fix --diff")
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)
    return checked


@click.command("fmt")
@click.argument("plans", nargs=-1, required=True)
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if a file is not in canonical form.")
@click.option("--write", is_flag=True, help="Rewrite the files in canonical form.")
def fmt_command(plans: tuple[str, ...], check_only: bool, write: bool) -> None:
    """Print PLANS in the canonical form (files, or folders of .plan files), within the line width of the
    nearest planc.toml's `[fmt] width` (100 without one). Exit 1 when a file is not in canonical form
    (--check) or has syntax errors, 2 when one cannot be read."""
    from planc.cli.project import fmt_width
    from planc.syntax.format import format_source
    from planc.syntax.parser import parse

    paths = plan_paths(plans)
    if len(paths) > 1 and not (check_only or write):
        raise UsageError("several files are formatted with --check or --write")
    failed = unreadable = False
    for path in paths:
        try:
            result = parse(read_file(path))
        except UsageError as error:
            click.echo(f"Error: {error.message}", err=True)
            unreadable = True
            continue
        if result.plan is None:
            print_syntax_errors(path, result)
            failed = True
            continue
        formatted = format_source(result, fmt_width(path))
        if check_only:
            if formatted != result.source:
                click.echo(f"{path}: would be reformatted", err=True)
                failed = True
        elif write:
            if path == "-":
                raise UsageError("--write needs a file, not standard input")
            if formatted != result.source:
                Path(path).write_text(formatted, encoding="utf-8")
        else:
            click.echo(formatted, nl=False)
    sys.exit(2 if unreadable else 1 if failed else 0)


@click.command("show")
@click.argument("plan")
@CONFIG_OPTION
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["tree", "json", "mermaid", "dot"]),
    default="tree",
    show_default=True,
    help="The tree (text or JSON), or the data-flow graph (Mermaid or Graphviz DOT).",
)
def show_command(plan: str, config: str | None, output_format: str) -> None:
    """Show the tree of PLAN, what each step may cost, which steps can change anything and which labelled values
    (where they came from) reach them; or its data-flow graph, as a Mermaid flowchart or in Graphviz's DOT."""
    from planc.passes.check import check

    source = parse_or_exit(plan, read_plan(plan)).source
    registry = find_registry(config, plan=plan)
    result = check(source, registry=registry, arguments=plan_arguments(registry, plan))
    if result.plan is None:  # too large to check (E106): there is no tree to show
        print_checked([(plan, result)], stderr=True)
        sys.exit(1)
    _show(result, plan, registry, output_format)
    if not result.ok:  # drawn as far as it is known, and its errors said: not a plan to go on with
        print_checked([(plan, result)], stderr=True)
        sys.exit(1)


def _show(result: CheckResult, plan: str, registry: Registry | None, output_format: str) -> None:
    from planc.analysis.blast_radius import blast_radius
    from planc.syntax.steps import step_paths

    if output_format in ("mermaid", "dot"):
        from planc.pictures.graph import plan_graph

        graph = plan_graph(result, registry, "standard input" if plan == "-" else plan)
        if output_format == "dot":
            from planc.pictures.dot import render_dot as render
        else:
            from planc.pictures.mermaid import render_mermaid as render
        click.echo(render(graph), nl=False)
        return
    plan_tree, costs, facts = result.plan, result.cost, result.flow
    # a plan that parses goes through every pass
    assert plan_tree is not None and costs is not None and facts is not None and result.resolution is not None
    paths = step_paths(plan_tree)
    radius = blast_radius(result.resolution, registry)
    if output_format == "json":
        import json

        from planc.syntax.data import to_data

        per_step = {step: {"cost": cost.to_json()} for step, cost in costs.steps.items()}
        data = to_data(plan_tree, paths=paths, extra=per_step)
        data.update(cost=costs.total.to_json(), blast_radius=radius.to_json(), flows=facts.into_effects())
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    from planc.analysis.blast_radius import blast_radius_lines
    from planc.passes.cost.cost_words import cost_line, step_note
    from planc.syntax.tree_view import tree_view

    out = console()
    print_wide(out, tree_view(plan_tree, paths, plan, {step: step_note(cost) for step, cost in costs.steps.items()}))
    out.print(f"cost: {cost_line(costs.total)}")
    out.print(
        "blast radius:" + ("" if registry else " (no planc.toml: every tool counts as effectful, destructive and open-world)")
    )
    for line in blast_radius_lines(radius):
        out.print(f"  {line}", highlight=False, markup=False)
    flows = facts.into_effects()
    out.print("labelled values into calls that change the world:" + ("" if flows else " none"))
    for flow in flows:
        into = f"`{flow['argument']}`" if flow["argument"] else "whether it runs"
        out.print(
            f"  step {flow['step']} `{flow['tool']}`: {into} <- {', '.join(flow['labels'])}: " + "; ".join(flow["from"]),
            highlight=False,
            markup=False,
        )


@click.command("corpus")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Fail on any difference from the cases this baseline pins.",
)
@click.option(
    "--update-baseline",
    "update",
    is_flag=True,
    help="Write every case, its expectation and its outcome to --baseline, saying what changed.",
)
@click.option(
    "--bless",
    is_flag=True,
    help="Write the golden output of every error case (FILE.out beside FILE.txt) as it is now, saying which files changed.",
)
def corpus_command(directory: Path, baseline: Path | None, update: bool, bless: bool) -> None:
    """Check every case of the corpus in DIRECTORY against its expectation, its golden output and its baseline."""
    from planc import corpus
    from planc.corpus import baseline as pinned
    from planc.corpus import golden

    if update and baseline is None:
        raise UsageError("--update-baseline writes the file --baseline names: give both")
    try:
        outcomes = [corpus.run_case(case) for case in corpus.load_cases(directory)]
    except corpus.CorpusError as error:
        raise UsageError(str(error)) from None
    counts = corpus.tally(outcomes)
    for outcome in outcomes:
        if not outcome.passed:
            case = outcome.case
            click.echo(
                f"FAIL {case.location} {case.category}: {case.name}\n"
                f"     expected {case.describe(case.expected)}, found {case.describe(outcome.found)}"
            )
    for name, numbers in counts["categories"].items():
        click.echo(f"{name:<24} {numbers['passed']:>4}/{numbers['cases']:<4} {corpus.rate(numbers):7.1%}")
    total = counts["total"]
    click.echo(f"{'total':<24} {total['passed']:>4}/{total['cases']:<4} {corpus.rate(total):7.1%}")
    problems = []
    if bless:
        for line in golden.bless(directory, outcomes):
            click.echo(line)
    else:
        problems += golden.compare(directory, outcomes)
    problems += golden.bad_messages(directory, outcomes)
    if baseline is not None:
        current = pinned.entries(outcomes)
        if update:
            try:
                previous = pinned.load(baseline) if baseline.exists() else {}
            except corpus.CorpusError as error:  # an older kind of baseline: every case is new to it
                click.echo(f"baseline: {error}")
                previous = {}
            for line in pinned.compare(current, previous):
                click.echo(f"baseline: {line}")
            baseline.write_text(pinned.dumps(current), encoding="utf-8")
            click.echo(f"wrote {baseline}")
        elif not baseline.exists():
            raise UsageError(f"{baseline}: no such baseline (create it with --update-baseline)")
        else:
            try:
                problems += [f"{baseline}: {line}" for line in pinned.compare(current, pinned.load(baseline))]
            except corpus.CorpusError as error:
                raise UsageError(str(error)) from None
    for line in problems:
        click.echo(line, err=True)
    if problems:
        click.echo(
            f"{len(problems)} difference{'s' if len(problems) != 1 else ''} from what the corpus pins: if "
            f"they are meant, write them with --bless and --update-baseline (`make bless`)",
            err=True,
        )
    sys.exit(1 if problems else 0)
