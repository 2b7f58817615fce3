"""Decode a string literal into text and template holes.

A hole is `{` + a reference (`$1.title`, `$hits[0]`) or a path starting with
`item`, `index` or `accumulator`, + `}`. Every other brace is literal text,
and `\\{` is always a literal brace. Holes become Ref and Path nodes whose
spans point into the string, so they are resolved like any reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from planc.diagnostics import Diagnostic, Lines, Span
from planc.diagnostics.build import diagnostic
from planc.syntax.ast import Field, Hole, Index, Name, Path, Ref

BINDINGS = ("item", "index", "accumulator")

# Numbers in holes are bounded like numbers in code (planc.syntax.lexer.MAX_NUMBER).
HOLE = re.compile(
    r"\{(?P<head>\$(?:[0-9]{1,100}|[A-Za-z_][A-Za-z0-9_]*)|item|index|accumulator)"
    r"(?P<accessors>(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,100}\])*)\}"
)
ACCESSOR = re.compile(r"\.(?P<field>[A-Za-z_][A-Za-z0-9_]*)|\[(?P<index>[0-9]{1,100})\]")
ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
CLOSING_QUOTES = "\"'”“"
SIMPLE_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "{": "{"}


def decode_string(raw: str, start: int, lines: Lines | None, diagnostics: list[Diagnostic], holes: bool = True) -> tuple:
    """The parts (text and Hole nodes) of the string literal `raw` found at offset `start`.

    With `holes=False` (record keys) every brace is text.
    """
    quote = 3 if raw.startswith('"""') else 1
    # The lexer also hands over the strings it reported ('single' or “curly” quotes, maybe
    # unclosed) as they are written, so that spans inside them stay exact.
    closed = len(raw) > quote and raw[-1] in CLOSING_QUOTES
    body = raw[quote : len(raw) - quote if closed else len(raw)]
    body_start = start + quote
    if "{" not in body and "\\" not in body:
        return (body,)
    parts: list = []
    text_from = 0
    for match in _holes(body) if holes else ():
        if match.start() > text_from:
            parts.append(_unescape(body, text_from, match.start(), body_start, lines, diagnostics))
        parts.append(_hole(match, body_start, lines))
        text_from = match.end()
    if text_from < len(body) or not parts:
        parts.append(_unescape(body, text_from, len(body), body_start, lines, diagnostics))
    return tuple(parts)


def _holes(body: str) -> Iterator[re.Match[str]]:
    """Hole matches in `body`, skipping braces escaped with a backslash."""
    position = 0
    while True:
        brace = body.find("{", position)
        if brace < 0:
            return
        match = HOLE.match(body, brace) if not escaped(body, brace) else None
        if match:
            yield match
            position = match.end()
        else:
            position = brace + 1


def escaped(text: str, brace: int) -> bool:
    """Whether the brace at `brace` of `text` follows an odd run of backslashes (`\\{`).

    Counted back from the brace, so a string with many braces is read in linear time.
    """
    before = brace
    while before > 0 and text[before - 1] == "\\":
        before -= 1
    return (brace - before) % 2 == 1


def _unescape(body: str, start: int, end: int, body_start: int, lines: Lines | None, diagnostics: list[Diagnostic]) -> str:
    def replace(match: re.Match) -> str:
        escape = match.group(1)
        if escape[0] == "u" and len(escape) == 5:
            return chr(int(escape[1:], 16))
        if escape in SIMPLE_ESCAPES:
            return SIMPLE_ESCAPES[escape]
        where = Span(body_start + start + match.start(), body_start + start + match.end(), lines)
        diagnostics.append(
            diagnostic(
                "E100",
                "escape",
                where,
                escape=escape,
                hints=["the escapes are JSON's (`\\n`, `\\t`, `\\\"`, `\\\\`, `\\uXXXX`) and `\\{` for a literal brace"],
            )
        )
        return escape

    text = ESCAPE.sub(replace, body[start:end])
    if "\\u" in body[start:end]:
        # Join UTF-16 surrogate pairs written as two \\u escapes, as JSON does.
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _hole(match: re.Match, body_start: int, lines: Lines | None) -> Hole:
    def span(start: int, end: int) -> Span:
        return Span(body_start + start, body_start + end, lines)

    head = match.group("head")
    head_start = match.start("head")
    accessors = tuple(
        Field(a.group("field"), span(a.start(), a.end()))
        if a.group("field")
        else Index(int(a.group("index")), span(a.start(), a.end()))
        for a in ACCESSOR.finditer(match.string, match.start("accessors"), match.end("accessors"))
    )
    target_span = span(head_start, match.end("accessors"))
    target: Ref | Path
    if head.startswith("$"):
        target = Ref(Name(head[1:], span(head_start + 1, match.end("head"))), accessors, target_span)
    else:
        target = Path(Name(head, span(head_start, match.end("head"))), accessors, target_span)
    return Hole(target, span(match.start(), match.end()))
