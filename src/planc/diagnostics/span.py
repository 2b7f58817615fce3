"""Positions and spans in the source text.

Offsets are 0-based, lines and columns 1-based, all counted in code points
(Python string indices), as every tool that reads planc's JSON output counts them.

The parser makes a span for every node, so a span made there holds only its
two offsets and the source's `Lines`, and works out a line and column when
someone asks. A span can also be made from two Positions directly.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple


class Position(NamedTuple):
    offset: int
    line: int
    column: int

    def to_json(self) -> dict:
        return {"offset": self.offset, "line": self.line, "column": self.column}


class Lines:
    """Where the lines of one source text start; turns offsets into Positions.

    >>> Lines("a\\nbc").position(3)
    Position(offset=3, line=2, column=2)
    """

    __slots__ = ("source", "_starts")

    def __init__(self, source: str) -> None:
        self.source = source
        self._starts: list[int] | None = None

    def position(self, offset: int) -> Position:
        starts = self._line_starts()
        line = bisect_right(starts, offset)
        return Position(offset, line, offset - starts[line - 1] + 1)

    def line(self, number: int) -> str:
        """Line `number` (from 1) without its newline; "" past the last line.

        >>> Lines("a\\nbc\\n").line(2), Lines("a\\nbc\\n").line(3), Lines("a").line(5)
        ('bc', '', '')
        """
        starts = self._line_starts()
        if not 1 <= number <= len(starts):
            return ""
        end = starts[number] - 1 if number < len(starts) else len(self.source)
        return self.source[starts[number - 1] : end]

    def _line_starts(self) -> list[int]:
        starts = self._starts
        if starts is None:
            starts = self._starts = [0]
            find = self.source.find
            newline = find("\n")
            while newline >= 0:
                starts.append(newline + 1)
                newline = find("\n", newline + 1)
        return starts


class Span(tuple):
    """From `start` to `end`: two Positions, or two offsets into the text of `lines`.

    A tuple underneath, so the parser can make one per node cheaply with
    `tuple.__new__(Span, (start, end, lines))`.
    """

    __slots__ = ()

    def __new__(cls, start: Position | int, end: Position | int, lines: Lines | None = None) -> Span:
        return tuple.__new__(cls, (start, end, lines))

    @property
    def start(self) -> Position:
        lines = self[2]
        return self[0] if lines is None else lines.position(self[0])

    @property
    def end(self) -> Position:
        lines = self[2]
        return self[1] if lines is None else lines.position(self[1])

    @property
    def start_offset(self) -> int:
        return self[0] if self[2] is not None else self[0].offset

    @property
    def end_offset(self) -> int:
        return self[1] if self[2] is not None else self[1].offset

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Span):
            return NotImplemented
        return (self.start_offset, self.end_offset) == (other.start_offset, other.end_offset)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self.start_offset, self.end_offset))

    def __repr__(self) -> str:
        return f"Span({self.start!r}, {self.end!r})"

    def to_json(self) -> dict:
        return {"start": self.start.to_json(), "end": self.end.to_json()}

    def text(self, source: str) -> str:
        return source[self.start_offset : self.end_offset]


def position_at(source: str, offset: int) -> Position:
    """The position of `offset` in `source`.

    >>> position_at("a\\nbc", 3)
    Position(offset=3, line=2, column=2)
    """
    return Lines(source).position(offset)
