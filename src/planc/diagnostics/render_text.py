"""The rustc-style rendering for people at a terminal (colour only on a terminal).

    error[E102]: positional argument `"x"`: arguments are passed by name
     --> plan.plan:1:8
      |
    1 | search("x")
      |        ^^^
      = help: write `name: "x"`, with the name of the parameter this value is for

The layout is written once, as styled pieces (`pieces`): `render_text` makes them a rich Text
for a terminal, and `render_plain` the plain text rich prints of that Text when there is no
terminal, made without rich's per-character work (a plan may have tens of thousands of
diagnostics, and a file or a pipe gets no colour anyway).
"""

from __future__ import annotations

import functools
import re

from rich.control import STRIP_CONTROL_CODES, strip_control_codes
from rich.text import Text

from planc.diagnostics.diagnostic import Diagnostic, Severity
from planc.diagnostics.span import Lines

CONTROL = re.compile("[" + "".join(map(chr, STRIP_CONTROL_CODES)) + "]")  # what rich drops from a Text
STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.NOTE: "bold cyan"}


def render_text(diagnostic: Diagnostic, source: str, file: str) -> Text:
    return Text.assemble(*pieces(diagnostic, source, file))


def render_plain(diagnostic: Diagnostic, source: str, file: str) -> str | None:
    """What a console without colour prints of `render_text(...)`, or None when rich must render it.

    Rich drops control codes (as here) and expands a tab by the display width of the text before
    it, which only rich knows: a diagnostic with a tab (in a message or a hint) is left to rich.
    """
    text = "".join([text for text, _ in pieces(diagnostic, source, file)])
    if "\t" in text:
        return None
    return strip_control_codes(text) if CONTROL.search(text) else text  # a search is cheaper than a translate


def pieces(diagnostic: Diagnostic, source: str, file: str) -> list[tuple[str, str]]:
    """The rendering as (text, style) pieces; the style is rich's, "" for none."""
    severity = diagnostic.severity
    style = STYLES[severity]
    start, end = diagnostic.span.start, diagnostic.span.end
    line_text = _lines(source).line(start.line).replace("\t", " ")
    gutter = " " * len(str(start.line))
    last_column = end.column if end.line == start.line else len(line_text) + 1
    width = max(1, last_column - start.column)

    out = [
        (f"{severity.value}[{diagnostic.code}]", style),
        (f": {diagnostic.message}\n", "bold"),
        (f"{gutter}--> ", "bold blue"),
        (f"{file}:{start.line}:{start.column}", ""),
    ]
    if diagnostic.step:
        out.append((f" (step {diagnostic.step})", "dim"))
    out += [
        ("\n", ""),
        (f"{gutter} |\n", "bold blue"),
        (f"{start.line} | ", "bold blue"),
        (line_text + "\n", ""),
        (f"{gutter} | ", "bold blue"),
        (" " * (start.column - 1) + "^" * width, style),
    ]
    if end.line != start.line:
        out.append((f" (to line {end.line})", "dim"))
    out.append(("\n", ""))
    for hint in diagnostic.hints:
        out += [(f"{gutter} = ", "bold blue"), ("help", "bold"), (f": {hint}\n", "")]
    if diagnostic.fix is not None:
        replacement = diagnostic.fix.replacement
        original = diagnostic.fix.span.text(source)
        action = f"replace `{original}` with `{replacement}`" if original else f"insert `{replacement}`"
        out += [(f"{gutter} = ", "bold blue"), ("fix", "bold green"), (f": {action}\n", "")]
    return out


@functools.lru_cache(maxsize=4)
def _lines(source: str) -> Lines:
    """The line starts of `source`, kept for the last few sources: splitting the source again
    for each diagnostic made rendering quadratic in the number of diagnostics."""
    return Lines(source)
