"""The repair message: plain text meant to go back to the model that wrote the plan.

It quotes the exact text that is wrong, says what was expected, and lists the
alternatives (the diagnostic's hints and fix), with no colour and no carets.
"""

from __future__ import annotations

from collections.abc import Sequence

from planc.diagnostics.diagnostic import Diagnostic


def render_repair(source: str, diagnostics: Sequence[Diagnostic]) -> str:
    problems = [d for d in diagnostics if d.is_error] or list(diagnostics)
    if not problems:
        return "The plan is valid.\n"
    count = len(problems)
    lines = [
        f"Your plan has {count} problem{'s' if count != 1 else ''}. Fix {{}} and send the whole corrected plan again.".format(
            "it" if count == 1 else "them"
        ),
        "",
    ]
    for number, diagnostic in enumerate(problems, start=1):
        lines += [f"{number}. {_problem(source, diagnostic)}", ""]
    return "\n".join(lines)


def _problem(source: str, diagnostic: Diagnostic) -> str:
    start = diagnostic.span.start
    quoted = diagnostic.span.text(source)
    where = f"line {start.line}, column {start.column}"
    parts = [f"{diagnostic.message} ({diagnostic.code}, {where})."]
    if quoted.strip():
        parts.append(f"   The text in question: {_quote(quoted)}")
    for hint in diagnostic.hints:
        if "`planc " not in hint:  # the model cannot run a command: only the person reading a terminal can
            parts.append(f"   - {hint[0].upper()}{hint[1:]}")
    if diagnostic.fix is not None:
        original = diagnostic.fix.span.text(source)
        if original:
            parts.append(f"   - Replace {_quote(original)} with {_quote(diagnostic.fix.replacement)}.")
        else:
            parts.append(f"   - Insert {_quote(diagnostic.fix.replacement)} there.")
    return "\n".join(parts)


def _quote(text: str) -> str:
    text = text if len(text) <= 200 else text[:197] + "..."
    return "`" + text.replace("`", "'") + "`"
