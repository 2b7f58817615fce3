"""Offsets into a document and LSP positions, both ways.

planc's spans hold offsets in code points (Python string indices); the 1-based lines and columns it
prints are for people. An LSP position is a 0-based line and a count of code units of the
encoding the client and server agreed on at `initialize`: UTF-16 unless both said UTF-8 or UTF-32.
So `é` is one unit in UTF-16 and two in UTF-8, and `🚀` two in UTF-16. This module goes from an
offset straight to a position and back, never through planc's columns.

LSP ends a line at "\\n", "\\r\\n" or "\\r" (planc only at "\\n", where its columns are concerned),
so the lines here are LSP's.

>>> index = LineIndex('a(x: "🚀", y: $9)')
>>> index.position(14)  # `$9`: code point 14, but the rocket is two UTF-16 units
(0, 15)
>>> index.offset(0, 15)
14
>>> LineIndex("é\\r\\nb", "utf-8").position(3)
(1, 0)
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _utf16(text: str) -> int:
    # surrogatepass: a lone surrogate (a JSON "\ud83d" the client sent) is still one unit, not an error
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


# Code units of a text, by the names LSP gives the encodings (PositionEncodingKind's values).
UNITS: dict[str, Callable[[str], int]] = {"utf-16": _utf16, "utf-8": _utf8, "utf-32": len}


class LineIndex:
    """Where the lines of one document start, to turn offsets into LSP positions and back."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.units = UNITS.get(encoding, _utf16)  # an unknown name: LSP's default
        self.starts = [0, *(match.end() for match in LINE_BREAK.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        """(line, character) of `offset`, clamped to the document."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.starts, offset) - 1
        return line, self.units(self.text[self.starts[line] : offset])

    def offset(self, line: int, character: int) -> int:
        """The offset of an LSP position. A position past the end of its line is the line's end (as
        LSP says), a line past the last is the end of the document: what a client sends is never
        trusted to be in range."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[line]
        end = self._line_end(line)
        counted = 0
        for index in range(start, end):
            if counted >= character:
                return index
            counted += self.units(self.text[index])
        return end

    def _line_end(self, line: int) -> int:
        """The offset where `line`'s text ends, before its line break."""
        if line + 1 >= len(self.starts):
            return len(self.text)
        end = self.starts[line + 1]
        return end - 2 if self.text[end - 2 : end] == "\r\n" else end - 1

    def end(self) -> tuple[int, int]:
        """The position just past the last character."""
        return self.position(len(self.text))
