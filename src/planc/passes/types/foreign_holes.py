"""W502: text in a string that looks like a hole from another template language.

Models write `{{E0.title}}` (Jinja, Mustache), `${{ steps.x }}` (GitHub
Actions), `${item.id}` (JavaScript) or `{E0.title}` (Python's `str.format`).
planc leaves all of them as literal text (but for a planc hole inside one, as
`{{item}}`: that is filled, its braces kept), so they are reported; a lone word in
single braces (`{name}`) is left alone unless it names a label or a binding
here, as a tool may well do its own templating. The fix to
the planc spelling is offered only where it is certain: the text inside
already is a planc reference (`{{$1.title}}`, `{ item.id }`), or its first
name is a label this string can read (`{{hits.title}}` -> `{$hits.title}`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from planc.diagnostics import Diagnostic, Fix, Lines, Span
from planc.diagnostics.build import diagnostic
from planc.syntax import ast
from planc.syntax.templates import HOLE, escaped

PATH = r"[$#]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?:\.[A-Za-z0-9_]+|\[[0-9]+\])*"
FOREIGN = re.compile(
    r"\$?\{\{\s*(?P<double>PATH)\s*\}\}"  # {{ x }}, ${{ x }}
    r"|\$\{\s*(?P<dollar>PATH)\s*\}"  # ${x}
    r"|\{\s*(?P<single>PATH)\s*\}".replace("PATH", PATH)  # {x}
)
PLANC_PATH = re.compile(r"(?P<head>\$?[A-Za-z_][A-Za-z0-9_]*|\$[0-9]+)(?P<rest>(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*)")
# `{E0.title}`, `{#E1}`, `{steps[0]}`: single braces around more than a plain word.
REFERENCE_LIKE = re.compile(r"[$#]|E[0-9]+\b|[^.\[]*[.\[]")
HINT = "planc writes a hole as `{$1.field}`, `{$label.field}` or `{item.field}`; `\\{` is a literal brace"


def foreign_holes(string: ast.String, source: str, spell: Callable[[str], str | None], step: str | None) -> Iterator[Diagnostic]:
    """W502 for each foreign-looking hole in `string` (of the step at path `step`), whose text is in `source`.

    `spell(head)` is the planc spelling of a hole's first name when it is certain
    here (`hits` -> `$hits` for a readable label, `item` where it is bound), else None.
    """
    start, end = string.span.start_offset, string.span.end_offset
    raw = source[start:end]
    lines = string.span[2] or Lines(source)
    for match in FOREIGN.finditer(raw):
        text = match.group()
        if match["single"] is not None and HOLE.fullmatch(text):
            continue  # a planc hole
        if escaped(raw, raw.index("{", match.start())):
            continue
        inner = match["double"] or match["dollar"] or match["single"]
        replacement = _planc_spelling(inner, spell)
        if match["single"] is not None and not replacement and not REFERENCE_LIKE.match(inner):
            continue  # a lone `{name}` is as likely meant for a tool that does its own templating
        span = Span(start + match.start(), start + match.end(), lines)
        filled = HOLE.search(text, 1)  # `{{item}}`, `${item}`: the run fills the planc hole inside
        hints, fix = ((f"did you mean `{replacement}`?",), Fix(span, replacement)) if replacement else ((HINT,), None)
        if filled:
            yield diagnostic("W502", "foreign_hole_filled", span, step=step, hints=hints, fix=fix, text=text, hole=filled.group())
        else:
            yield diagnostic("W502", "foreign_hole", span, step=step, hints=hints, fix=fix, text=text)


def _planc_spelling(inner: str, spell: Callable[[str], str | None]) -> str | None:
    path = PLANC_PATH.fullmatch(inner)
    if path is None:
        return None
    head = path["head"]
    spelled = head if head.startswith("$") else spell(head)
    return "{" + spelled + path["rest"] + "}" if spelled else None
