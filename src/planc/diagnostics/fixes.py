"""Applying the fixes diagnostics carry (`planc check --fix`): each a replacement for its span."""

from __future__ import annotations

from collections.abc import Iterable

from planc.diagnostics.diagnostic import Diagnostic


def apply_fixes(source: str, diagnostics: Iterable[Diagnostic]) -> str:
    """`source` with the fix of every diagnostic that has one applied; a fix that overlaps one before it
    is left for another run, as both cannot be right at once.

    >>> from planc.diagnostics import Fix, Position, Span
    >>> at = Span(Position(17, 1, 18), Position(24, 1, 25))
    >>> apply_fixes('summarize(style: bullets)', [Diagnostic("E206", "bare word", at, fix=Fix(at, '"bullets"'))])
    'summarize(style: "bullets")'
    """
    fixes = sorted(
        (d.fix for d in diagnostics if d.fix is not None), key=lambda fix: (fix.span.start_offset, fix.span.end_offset)
    )
    out, at = [], 0
    for fix in fixes:
        start, end = fix.span.start_offset, fix.span.end_offset
        if start < at:
            continue
        out += [source[at:start], fix.replacement]
        at = end
    out.append(source[at:])
    return "".join(out)
