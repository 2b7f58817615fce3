"""`planc fmt`: the canonical text of a parsed file, with its comments kept.

The printer knows only the tree; this module puts the comments back, and the
printer asks it for them as it prints each block. A comment at the end of a
pipeline's last line stays there, in a block too; a comment on its own line
stays before the pipeline it was written before, in its block; a comment
anywhere else (between the arguments of a step) goes on its own line before
the top-level pipeline it was written in, so nothing the author wrote is lost. One blank line is kept where the
source separated two pipelines by blank lines.
"""

from __future__ import annotations

from planc.syntax.parser import ParseResult
from planc.syntax.printer import COMMENTS, print_pipeline


def format_source(result: ParseResult) -> str:
    """The canonical text of `result`'s plan with its comments.

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
    """
    pipelines = result.plan.pipelines
    lines = result.source.split("\n")
    comments = _Comments([(result.lines.position(c.start), c.text) for c in result.comments])
    out: list[str] = []
    previous_end = 0
    token = COMMENTS.set(comments)
    try:
        for number, pipeline in enumerate(pipelines):
            leading = comments.before(pipeline)
            first_line = min([pipeline.span.start.line, *(at.line for at, _ in leading)])
            text = print_pipeline(pipeline)
            leading += comments.inside(pipeline)  # one no block took (between arguments): before it, not lost
            trailing = comments.after(pipelines, number)
            if out and _blank_between(lines, previous_end, first_line):
                out.append("")
            out += [comment for _, comment in leading]
            out.append(text + ("  " + " ".join(comment for _, comment in trailing) if trailing else ""))
            previous_end = pipeline.span.end.line
    finally:
        COMMENTS.reset(token)
    if comments.left:
        if _blank_between(lines, previous_end, comments.left[0][0].line):
            out.append("")
        out += [text for _, text in comments.left]
    return "\n".join(out) + "\n"


class _Comments:
    """The comments of a file not yet placed, in text order; each is taken once."""

    def __init__(self, comments: list) -> None:
        self.left = comments  # (Position, text)

    def _take(self, chosen: list) -> list:
        self.left = [c for c in self.left if c not in chosen]
        return chosen

    def within(self, span) -> bool:
        return any(span.start_offset <= at.offset < span.end_offset for at, _ in self.left)

    def before(self, pipeline) -> list:
        """The comments before `pipeline` starts: they go on their own lines before it."""
        return self._take([c for c in self.left if c[0].offset < pipeline.span.start_offset])

    def inside(self, pipeline) -> list:
        return self._take([c for c in self.left if c[0].offset < pipeline.span.end_offset])

    def after(self, pipelines, number: int) -> list:
        """The comments at the end of the last line of `pipelines[number]`, before the next one starts."""
        pipeline = pipelines[number]
        last_line = pipeline.span.end.line
        if _pipeline_follows_on_line(pipelines, number, last_line):
            return []
        following = pipelines[number + 1].span.start_offset if number + 1 < len(pipelines) else None
        return self._take([c for c in self.left if c[0].line == last_line and c[0].offset >= pipeline.span.end_offset
                           and (following is None or c[0].offset < following)])


def _pipeline_follows_on_line(pipelines, number: int, line: int) -> bool:
    return number + 1 < len(pipelines) and pipelines[number + 1].span.start.line == line


def _blank_between(lines: list[str], after_line: int, before_line: int) -> bool:
    """Whether a blank line lies strictly between two 1-based line numbers."""
    return any(not lines[index].strip() for index in range(after_line, before_line - 1))
