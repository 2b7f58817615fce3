"""`planc fmt`: the canonical text of a parsed file, with its comments kept.

The printer knows only the tree; this module puts the comments back. A
comment at the end of a pipeline's last line stays there; every other comment
goes on its own line before the top-level pipeline it was written in or
before, so nothing the author wrote is lost. One blank line is kept where the
source separated two pipelines by blank lines.
"""

from __future__ import annotations

from planc.syntax.parser import ParseResult
from planc.syntax.printer import print_pipeline


def format_source(result: ParseResult) -> str:
    """The canonical text of `result`'s plan with its comments.

    >>> from planc.syntax.parser import parse
    >>> print(format_source(parse("# find them\\na( x:1 ) # first\\n\\n\\nb()")), end="")
    # find them
    a(x: 1)  # first
    <BLANKLINE>
    b()
    """
    pipelines = result.plan.pipelines
    lines = result.source.split("\n")
    comments = [(result.lines.position(c.start), c.text) for c in result.comments]
    out: list[str] = []
    previous_end = 0
    for number, pipeline in enumerate(pipelines):
        last_line = pipeline.span.end.line
        next_start = pipelines[number + 1].span.start_offset if number + 1 < len(pipelines) else None
        leading = [c for c in comments if c[0].offset < pipeline.span.end_offset]
        trailing = [c for c in comments if c not in leading and c[0].line == last_line
                    and (next_start is None or c[0].offset < next_start)
                    and not _pipeline_follows_on_line(pipelines, number, last_line)]
        comments = [c for c in comments if c not in leading and c not in trailing]
        first_line = min([pipeline.span.start.line] + [c[0].line for c in leading])
        if out and _blank_between(lines, previous_end, first_line):
            out.append("")
        out += [text for _, text in leading]
        text = print_pipeline(pipeline)
        if trailing:
            text += "  " + " ".join(text for _, text in trailing)
        out.append(text)
        previous_end = last_line
    if comments:
        if _blank_between(lines, previous_end, comments[0][0].line):
            out.append("")
        out += [text for _, text in comments]
    return "\n".join(out) + "\n"


def _pipeline_follows_on_line(pipelines, number: int, line: int) -> bool:
    return number + 1 < len(pipelines) and pipelines[number + 1].span.start.line == line


def _blank_between(lines: list[str], after_line: int, before_line: int) -> bool:
    """Whether a blank line lies strictly between two 1-based line numbers."""
    return any(not lines[index].strip() for index in range(after_line, before_line - 1))
