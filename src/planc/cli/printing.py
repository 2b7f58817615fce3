"""Printing for people: the rich console, and check results as `planc check` prints them."""

from __future__ import annotations


COLOR = "auto"  # `planc --color`: auto, always or never


def console(stderr: bool = False):
    """A rich console on stdout (or stderr), coloured as `--color` and NO_COLOR say; rich loads only when
    something prints through it."""
    import os

    from rich.console import Console

    never = COLOR == "never" or (COLOR == "auto" and os.environ.get("NO_COLOR", "") != "")
    return Console(stderr=stderr, highlight=False, soft_wrap=True, force_terminal=True if COLOR == "always" else None,
                   no_color=never, color_system=None if never else "auto")


def print_checked(results, stderr: bool = False) -> None:
    """Each (path, CheckResult) in `results`: its diagnostics, rustc-style, a summary line and the cost."""
    from planc.diagnostics.render_text import render_text

    out = console(stderr=stderr)
    for path, result in results:
        for diagnostic in result.diagnostics:
            out.print(render_text(diagnostic, result.source, path))
        errors = sum(d.is_error for d in result.diagnostics)
        warnings = len(result.diagnostics) - errors
        if result.ok:
            summary = f"{path}: ok, {result.steps} step{'s' if result.steps != 1 else ''}"
            out.print(summary + (f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""),
                      style="green")
        else:
            out.print(f"{path}: {errors} error{'s' if errors != 1 else ''}", style="bold red")
        if result.cost is not None:
            from planc.passes.cost.cost_words import cost_line

            out.print(f"  cost: {cost_line(result.cost.total)}", style="dim")
