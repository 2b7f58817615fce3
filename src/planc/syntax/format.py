"""`planc fmt`: the canonical text of a parsed file within a line width, with its comments kept.

The printer lays the tree out (`printer.py`); this module gives it the file's
comments, which it places as it prints each node. A comment on its own line
stays before the pipeline, step, argument, entry or item it was written
before; one at the end of a line stays at the end of the printed line of the
node that line ended; whatever is left inside a top-level pipeline goes on
its own line before it, so nothing the author wrote is lost. One blank line is
kept where the source separated two pipelines by blank lines.
"""

from __future__ import annotations

from collections.abc import Callable

from planc.diagnostics.span import Position, Span
from planc.syntax.parser import ParseResult
from planc.syntax.printer import WIDTH, Printer


def format_source(result: ParseResult, width: int | None = WIDTH) -> str:
    """The canonical text of `result`'s plan with its comments, within `width` columns where it can be (None:
    every step on a line, as a decoder writes plans: `planc grammar`).

    >>> from planc.syntax.parser import parse
    >>> print(format_source(parse("# find them\\na( x:1 ) # first\\n\\n\\nb()")), end="")
    # find them
    a(x: 1)  # first
    <BLANKLINE>
    b()
    >>> print(format_source(parse("map(over: [1], do: {\\n  # each\\n  a()  # one\\n})")), end="")
    map(over: [1], do: {
      # each
      a()  # one
    })
    >>> print(format_source(parse('post(channel: "#ops",  # the team\\n     text: "disk full")'), width=30), end="")
    post(
      channel: "#ops",  # the team
      text: "disk full",
    )
    """
    assert result.plan is not None, "only a plan that parsed is formatted"
    pipelines = result.plan.pipelines
    lines = result.source.split("\n")
    comments = _Comments([(result.lines.position(c.start), c.text) for c in result.comments])
    printer = Printer(width, comments)
    out: list[str] = []
    previous_end = 0
    for number, pipeline in enumerate(pipelines):
        # take() calls each test before the loop moves on: the loop variable is the one meant (B023)
        leading = comments.take(lambda at: at.offset < pipeline.span.start_offset)  # noqa: B023
        first_line = min([pipeline.span.start.line, *(at.line for at, _ in leading)])
        text = printer.pipeline(pipeline)
        leading += comments.take(lambda at: at.offset < pipeline.span.end_offset)  # noqa: B023  # none left inside, or before it
        following = pipelines[number + 1].span if number + 1 < len(pipelines) else None
        trailing = (
            []
            if following is not None and following.start.line == pipeline.span.end.line
            else comments.trailing(pipeline.span.end, following.start_offset if following is not None else None)
        )
        if out and _blank_between(lines, previous_end, first_line):
            out.append("")
        out += [comment for _, comment in leading]
        out.append(text + ("  " + " ".join(trailing) if trailing else ""))
        previous_end = pipeline.span.end.line
    if comments.left:
        if _blank_between(lines, previous_end, comments.left[0][0].line):
            out.append("")
        out += [text for _, text in comments.left]
    return "\n".join(out) + "\n"


class _Comments:
    """The comments of a file not yet placed, in text order; each is taken once."""

    def __init__(self, comments: list[tuple[Position, str]]) -> None:
        self.left = comments

    def take(self, chosen: Callable[[Position], bool]) -> list[tuple[Position, str]]:
        taken = [comment for comment in self.left if chosen(comment[0])]
        self.left = [comment for comment in self.left if comment not in taken]
        return taken

    def within(self, span: Span) -> bool:
        return any(span.start_offset <= at.offset < span.end_offset for at, _ in self.left)

    def before(self, offset: int) -> list[str]:
        """The comments before `offset`: they go on their own lines before what starts there."""
        return [text for _, text in self.take(lambda at: at.offset < offset)]

    def trailing(self, end: Position, limit: int | None) -> list[str]:
        """The comments on the line that ends at `end`, after it and before `limit`: they end that line."""
        return [
            text
            for _, text in self.take(
                lambda at: at.line == end.line and at.offset >= end.offset and (limit is None or at.offset < limit)
            )
        ]


def _blank_between(lines: list[str], after_line: int, before_line: int) -> bool:
    """Whether a blank line lies strictly between two 1-based line numbers."""
    return any(not lines[index].strip() for index in range(after_line, before_line - 1))
