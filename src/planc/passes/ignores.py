"""`# planc: ignore[W501]`: a comment that silences warnings and notes on its line.

The comment silences the named codes (or, with no list, every warning and note) reported on the
line it is on; a comment alone on its line speaks for the next line instead. Errors cannot be
silenced: a plan with an error does not run, whatever a comment says, and naming an error code in
such a comment is itself W504.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from planc.diagnostics import Diagnostic, Lines, Span
from planc.diagnostics.build import diagnostic
from planc.syntax.lexer import Token

IGNORE = re.compile(r"(?:#|//)\s*planc:\s*ignore(?:\[([^\]]*)\])?")


def apply_ignores(diagnostics: Iterable[Diagnostic], comments: Iterable[Token], lines: Lines) -> list[Diagnostic]:
    """`diagnostics` without the warnings and notes the source's ignore comments silence, and with a W504
    for each error code a comment names. `comments` are the parse's comment tokens, `lines` its Lines.

    >>> from planc.syntax.parser import parse
    >>> parsed = parse('a()  # planc: ignore[W501]\\nb()')
    >>> d = diagnostic("W501", "unused", Span(parsed.lines.position(0), parsed.lines.position(3)), tool="a")
    >>> apply_ignores([d], parsed.comments, parsed.lines)
    []
    """
    silenced: dict[int, set[str] | None] = {}  # line -> the codes silenced there (None: all)
    found: list[Diagnostic] = []
    for comment in comments:
        match = IGNORE.match(comment.text)
        if match is None:
            continue
        start = lines.position(comment.start)
        alone = not lines.source[comment.start - start.column + 1 : comment.start].strip()
        line = start.line + 1 if alone else start.line
        codes = None if match.group(1) is None else {code.strip() for code in match.group(1).split(",") if code.strip()}
        for code in sorted(code for code in codes or () if code.startswith("E")):
            at = comment.start + comment.text.index(code)
            found.append(diagnostic("W504", "error_code", Span(lines.position(at), lines.position(at + len(code))), name=code))
        earlier = silenced.get(line, set())
        silenced[line] = None if codes is None or earlier is None else earlier | codes
    for each in diagnostics:
        line = each.span.start.line
        if not each.is_error and line in silenced and (silenced[line] is None or each.code in (silenced[line] or ())):
            continue
        found.append(each)
    return found
