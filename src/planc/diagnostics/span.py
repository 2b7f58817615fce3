"""Positions and spans in the source text.

Offsets are 0-based, lines and columns 1-based, all counted in code points
(Python string indices), as DESIGN section 4 asks.
"""

from __future__ import annotations

from typing import NamedTuple


class Position(NamedTuple):
    offset: int
    line: int
    column: int

    def to_json(self) -> dict:
        return {"offset": self.offset, "line": self.line, "column": self.column}


class Span(NamedTuple):
    start: Position
    end: Position

    def to_json(self) -> dict:
        return {"start": self.start.to_json(), "end": self.end.to_json()}

    def text(self, source: str) -> str:
        return source[self.start.offset : self.end.offset]


def position_at(source: str, offset: int) -> Position:
    """The position of `offset` in `source`.

    >>> position_at("a\\nbc", 3)
    Position(offset=3, line=2, column=2)
    """
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return Position(offset, line, column)


def advance(position: Position, text: str) -> Position:
    """The position just after `text` when it starts at `position`.

    >>> advance(Position(0, 1, 1), "ab\\ncd")
    Position(offset=5, line=2, column=3)
    """
    newlines = text.count("\n")
    if not newlines:
        return Position(position.offset + len(text), position.line, position.column + len(text))
    tail = len(text) - text.rfind("\n") - 1
    return Position(position.offset + len(text), position.line + newlines, tail + 1)


def span_between(source: str, start: int, end: int) -> Span:
    """The span of `source[start:end]`."""
    first = position_at(source, start)
    return Span(first, advance(first, source[start:end]))
