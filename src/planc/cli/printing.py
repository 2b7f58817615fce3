"""Printing for people: the rich console, and check results as `planc check` prints them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from planc.diagnostics import Diagnostic
    from planc.passes.check import CheckResult

# How many diagnostics the text format prints before it only counts the rest: past that, a
# person reads the first ones and fixes them, and printing the rest only takes time.
MAX_DIAGNOSTICS = 100
SHOW_ALL = "run `planc check --max-diagnostics 0` to show them all"
COLOR = "auto"  # `planc --color`: auto, always or never


def console(stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr), coloured as `--color` and NO_COLOR say; rich loads only when
    something prints through it."""
    import os

    from rich.console import Console

    never = COLOR == "never" or (COLOR == "auto" and os.environ.get("NO_COLOR", "") != "")
    return Console(
        stderr=stderr,
        highlight=False,
        soft_wrap=True,
        force_terminal=True if COLOR == "always" else None,
        no_color=never,
        color_system=None if never else "auto",
    )


# The widest a table or a tree is printed where no terminal sets a width: its cells whole, not cut.
WIDEST = 10_000


def print_wide(out: Console, renderable: RenderableType) -> None:
    """`renderable` (a table, a tree) on the console `out`: within a terminal's width; elsewhere (a pipe, a
    file) as wide as it needs, so that what reads it gets every cell whole rather than cut at 80 columns
    (`COLUMNS` set says the width, as it does to rich)."""
    import os

    if out.is_terminal or os.environ.get("COLUMNS"):
        out.print(renderable)
        return
    from rich.measure import Measurement

    out.width = max(out.width, Measurement.get(out, out.options.update(max_width=WIDEST), renderable).maximum)
    out.print(renderable)


def print_checked(
    results: Iterable[tuple[str, CheckResult]], stderr: bool = False, limit: int = MAX_DIAGNOSTICS, show_all: str = SHOW_ALL
) -> None:
    """Each (path, CheckResult) in `results`: its diagnostics, rustc-style, a summary line and the cost.

    At most `limit` diagnostics are printed in all (0: every one); the others of a file are
    counted in one line that ends with `show_all`.
    """
    out = console(stderr=stderr)
    left = limit or None
    for path, result in results:
        left = print_some(out, result.diagnostics, result.source, path, left, show_all)
        errors = sum(d.is_error for d in result.diagnostics)
        warnings = len(result.diagnostics) - errors
        if result.ok:
            summary = f"{path}: ok, {result.steps} step{'s' if result.steps != 1 else ''}"
            out.print(summary + (f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""), style="green")
        else:
            out.print(f"{path}: {errors} error{'s' if errors != 1 else ''}", style="bold red")
        if result.cost is not None:
            from planc.passes.cost.cost_words import cost_line

            out.print(f"  cost: {cost_line(result.cost.total)}", style="dim")


def print_some(
    out: Console, diagnostics: Sequence[Diagnostic], source: str, path: str, left: int | None, show_all: str = SHOW_ALL
) -> int | None:
    """The first `left` of `diagnostics` (None: all) printed, the rest counted in one line ending with
    `show_all`; how many more may be printed after them."""
    shown = diagnostics if left is None else diagnostics[:left]
    print_diagnostics(out, shown, source, path)
    if len(shown) < len(diagnostics):
        out.print(f"... and {more(diagnostics[len(shown) :])}; {show_all}", style="bold", markup=False)
    return None if left is None else left - len(shown)


def print_diagnostics(out: Console, diagnostics: Iterable[Diagnostic], source: str, path: str) -> None:
    """`diagnostics` of `source` (read from `path`), rustc-style, on the console `out`.

    Without a terminal (a file, a pipe) there is no colour, and the same text is written
    directly: rich's work for each diagnostic costs far more than the text itself.
    """
    from planc.diagnostics.render_text import render_plain, render_text

    plain = not out.is_terminal and out.color_system is None
    for diagnostic in diagnostics:
        text = render_plain(diagnostic, source, path) if plain else None
        if text is None:
            out.print(render_text(diagnostic, source, path))
        else:
            out.file.write(text + "\n")


def more(hidden: Sequence[Diagnostic]) -> str:
    """`hidden` diagnostics counted by severity: "19,900 more errors", "3 more diagnostics (2 errors, 1 warning)".

    >>> from planc.diagnostics import Diagnostic, Position, Span
    >>> at = Span(Position(0, 1, 1), Position(1, 1, 2))
    >>> more([Diagnostic("E206", "m", at)] * 1900)
    '1,900 more errors'
    >>> more([Diagnostic("E206", "m", at)] * 2 + [Diagnostic("W501", "m", at)])
    '3 more diagnostics (2 errors, 1 warning)'
    """
    from planc.diagnostics.diagnostic import Severity

    counts = {severity: 0 for severity in Severity}
    for diagnostic in hidden:
        counts[diagnostic.severity] += 1
    words = [f"{count:,} {severity.value}{'s' if count != 1 else ''}" for severity, count in counts.items() if count]
    if len(words) == 1:
        return words[0].replace(" ", " more ", 1)
    return f"{len(hidden):,} more diagnostics ({', '.join(words)})"
