"""`planc check`, `fmt`, `show` and `corpus`: commands that read plans and run nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planc.cli.files import read_file
from planc.cli.options import (
    CONFIG_OPTION,
    POLICY_OPTION,
    PRINCIPAL_OPTION,
    budget_options,
)
from planc.cli.plans import parse_or_exit
from planc.cli.printing import console, print_checked
from planc.cli.project import find_policy, find_registry, plan_arguments
from planc.cli.usage import UsageError

FORMATS = ["text", "json", "repair", "sarif", "line"]


@click.command("check")
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
    from planc.passes.check import check

    registry = find_registry(config, plan=plans[0])
    policy = find_policy(policy_file, registry, principal)

    def checked(path: str):
        return check(read_file(path), extract_plan=extract, registry=registry,
                     arguments=plan_arguments(registry, path), policy=policy, principal=principal,
                     max_usd=max_usd, max_calls=max_calls, max_inferences=max_inferences)

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
        print_checked(results)
    sys.exit(0 if all(result.ok for _, result in results) else 1)


@click.command("fmt")
@click.argument("plan")
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the file is not in canonical form.")
@click.option("--write", is_flag=True, help="Rewrite the file in canonical form.")
def fmt_command(plan: str, check_only: bool, write: bool) -> None:
    """Print PLAN in the canonical form."""
    from planc.syntax.format import format_source

    result = parse_or_exit(plan, 2)
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


@click.command("show")
@click.argument("plan")
@CONFIG_OPTION
@click.option("--format", "output_format", type=click.Choice(["tree", "json", "mermaid", "dot"]), default="tree",
              show_default=True, help="The tree (text or JSON), or the data-flow graph (Mermaid or Graphviz DOT).")
def show_command(plan: str, config: str | None, output_format: str) -> None:
    """Show the tree of PLAN, what each step may cost, and which steps can change anything; or its data-flow
    graph, as a Mermaid flowchart or in Graphviz's DOT."""
    from planc.analysis.blast_radius import blast_radius
    from planc.passes.check import check
    from planc.syntax.steps import step_paths

    source = parse_or_exit(plan, 1).source
    registry = find_registry(config, plan=plan)
    result = check(source, registry=registry, arguments=plan_arguments(registry, plan))
    if output_format in ("mermaid", "dot"):
        from planc.pictures.graph import plan_graph

        graph = plan_graph(result, registry, "standard input" if plan == "-" else plan)
        if output_format == "dot":
            from planc.pictures.dot import render_dot as render
        else:
            from planc.pictures.mermaid import render_mermaid as render
        click.echo(render(graph), nl=False)
        return
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
    from planc.analysis.blast_radius import blast_radius_lines
    from planc.passes.cost.cost_words import cost_line, step_note
    from planc.syntax.tree_view import tree_view

    out = console()
    out.print(tree_view(result.plan, paths, plan, {step: step_note(cost) for step, cost in costs.steps.items()}))
    out.print(f"cost: {cost_line(costs.total)}")
    out.print("blast radius:" + ("" if registry else " (no planc.toml: every tool counts as effectful, "
                                                    "destructive and open-world)"))
    for line in blast_radius_lines(radius):
        out.print(f"  {line}", highlight=False, markup=False)


@click.command("corpus")
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
                       f"     expected {case.describe(case.expected)}, found {case.describe(outcome.found)}")
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
