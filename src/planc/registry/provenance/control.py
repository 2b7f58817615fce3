"""What decides whether a step runs, or how often, where no condition the plan writes says it: a
loop's list (`Loop`, `loop_over`: what a `map`, `filter` or `reduce` binds in its block and adds to
the control of every step there), a declared plan's `exit`s (`Decided`). The check's flow rules
(`registry/steps/`) and a run's handlers (`backend/run/steps/`) both use them.
"""

from __future__ import annotations

import attrs

from planc.registry.provenance.labels import LabelView
from planc.syntax import ast


@attrs.frozen
class Loop:
    """What a loop over a list (`map`, `filter`, `reduce`) binds in its block, and adds to the
    control of every step there: an item carries the list's labels and its part's; a position
    (`index`) and how often the block runs carry the list's own labels (`LabelView.members`), which
    hold what chose its items and their order (a `filter`'s condition, a `sort`'s field)."""

    item: LabelView
    index: LabelView
    control: frozenset[str]


@attrs.frozen
class Decided:
    """What decides whether a step runs, or how often, where no condition the plan writes says it: a
    loop's list, a declared plan's `exit`s. `node` is where a refusal points."""

    node: ast.Name
    labels: frozenset[str]
    origin: str  # in words, for the refusal's hint


def loop_over(over: LabelView) -> Loop:
    """The views a loop over `over` binds, and the control it adds to its block.

    >>> inbox = LabelView(frozenset({"untrusted"}))
    >>> sorted(loop_over(inbox).index.whole()), sorted(loop_over(inbox).control)
    (['untrusted'], ['untrusted'])
    """
    members = over.members()
    return Loop(over.item(), LabelView(members), members)
