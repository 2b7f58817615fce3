"""The rustc-style rendering for people at a terminal (colour only on a terminal).

    error[E102]: positional argument `"x"`: arguments are passed by name
     --> plan.plan:1:8
      |
    1 | search("x")
      |        ^^^
      = help: write `name: "x"`, with the name of the parameter this value is for
"""

from __future__ import annotations

from rich.text import Text

from planc.diagnostics.diagnostic import Diagnostic, Severity

STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.NOTE: "bold cyan"}


def render_text(diagnostic: Diagnostic, source: str, file: str) -> Text:
    style = STYLES[diagnostic.severity]
    start, end = diagnostic.span.start, diagnostic.span.end
    lines = source.split("\n")
    line_text = lines[start.line - 1].replace("\t", " ") if start.line <= len(lines) else ""
    gutter = " " * len(str(start.line))
    last_column = end.column if end.line == start.line else len(line_text) + 1
    width = max(1, last_column - start.column)

    out = Text()
    out.append(f"{diagnostic.severity.value}[{diagnostic.code}]", style)
    out.append(f": {diagnostic.message}\n", "bold")
    out.append(f"{gutter}--> ", "bold blue")
    out.append(f"{file}:{start.line}:{start.column}")
    if diagnostic.step:
        out.append(f" (step {diagnostic.step})", "dim")
    out.append("\n")
    out.append(f"{gutter} |\n", "bold blue")
    out.append(f"{start.line} | ", "bold blue")
    out.append(line_text + "\n")
    out.append(f"{gutter} | ", "bold blue")
    out.append(" " * (start.column - 1) + "^" * width, style)
    if end.line != start.line:
        out.append(f" (to line {end.line})", "dim")
    out.append("\n")
    for hint in diagnostic.hints:
        out.append(f"{gutter} = ", "bold blue")
        out.append("help", "bold")
        out.append(f": {hint}\n")
    if diagnostic.fix is not None:
        replacement = diagnostic.fix.replacement
        original = diagnostic.fix.span.text(source)
        action = f"replace `{original}` with `{replacement}`" if original else f"insert `{replacement}`"
        out.append(f"{gutter} = ", "bold blue")
        out.append("fix", "bold green")
        out.append(f": {action}\n")
    return out
