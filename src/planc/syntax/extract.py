"""Take a plan out of a model's reply (`planc check --extract`).

The plan is the content of the first fenced code block if there is one, else
the lines from the first line that starts a step to the last line that still
belongs to the plan. Everything else is blanked out with spaces (newlines
kept), so the text keeps its length and every span still points into the
original reply.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t\r]*$", re.MULTILINE | re.DOTALL)
# `tool(` with nothing between, or `tool (name: ...` / `tool ()`: prose like "Plan (draft):" is not a step.
STEP_START = re.compile(r"^[ \t]*(?:[A-Za-z_]\w*[ \t]*=[ \t]*)?[A-Za-z_]\w*(?:\(|[ \t]+\([ \t]*(?:\)|[A-Za-z_]\w*[ \t]*:))")
CONTINUATION = re.compile(r"^[ \t]*(?:\|>|[)\]}]|#|//|$)")


def extract(reply: str) -> str:
    """`reply` with everything but the plan blanked out.

    >>> extract("Sure! Here it is:\\n```\\na(x: 1)\\n```\\nEnjoy.").strip()
    'a(x: 1)'
    """
    fence = FENCE.search(reply)
    if fence:
        return _keep(reply, fence.start(2), fence.end(2))
    lines = reply.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    first = next((number for number, line in enumerate(lines) if STEP_START.match(line)), None)
    if first is None:
        return _keep(reply, 0, 0)
    last = first
    depth = 0
    for number in range(first, len(lines)):
        line = lines[number]
        if number > first and depth == 0 and not (STEP_START.match(line) or CONTINUATION.match(line)):
            break
        depth = max(0, depth + _bracket_balance(line))
        if line.strip():
            last = number
    return _keep(reply, offsets[first], offsets[last + 1])


def _bracket_balance(line: str) -> int:
    """Opened minus closed brackets on `line`, not counting those inside strings."""
    line = re.sub(r'"(\\.|[^"\\])*"', "", line)
    return sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")


def _keep(reply: str, start: int, end: int) -> str:
    def blank(text: str) -> str:
        return re.sub(r"[^\n]", " ", text)

    return blank(reply[:start]) + reply[start:end] + blank(reply[end:])
