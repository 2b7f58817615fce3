"""`planc diff`: two plans compared as trees of steps, not as lines of text (docs/diff.md).

Steps are matched by structure (`match.py`): what they call, with what, reading which
steps. The change list (`changes.py`) says what was added, removed, changed (argument by
argument) and moved; `render_json.py` and `render_text.py` print it.
"""

from __future__ import annotations

from planc.diff.changes import ArgChange, Change, Diff, list_changes
from planc.diff.match import KEY_ORDERS, fingerprints, match_plans
from planc.diff.plan_view import view_of
from planc.syntax.ast import Plan
from planc.syntax.parser import ParseResult, parse

__all__ = ["ArgChange", "Change", "Diff", "DiffError", "diff_plans", "diff_trees"]


class DiffError(Exception):
    """A plan that does not parse: `side` is "a" or "b", `result` has its syntax diagnostics."""

    def __init__(self, side: str, result: ParseResult) -> None:
        super().__init__(f"plan {side} has syntax errors")
        self.side, self.result = side, result


def diff_plans(text_a: str, text_b: str) -> Diff:
    """The changes from plan text A to plan text B; DiffError when one does not parse.

    >>> diff = diff_plans('search(query: "x")\\nsummarize(text: $1)',
    ...                   'hits = search(query: "x", limit: 5)\\nsummarize(text: $hits)')
    >>> [(c.kind, c.step_a, c.step_b, c.tool, {n: (v.a, v.b) for n, v in c.args.items()}) for c in diff.changes]
    [('changed', '1', '1', 'search', {'limit': (None, '5')})]
    """
    plans = []
    for side, text in (("a", text_a), ("b", text_b)):
        result = parse(text)
        if result.plan is None:
            raise DiffError(side, result)
        plans.append(result.plan)
    return diff_trees(*plans)


def diff_trees(plan_a: Plan, plan_b: Plan) -> Diff:
    """The changes from parsed plan A to parsed plan B."""
    view_a, view_b = view_of(plan_a), view_of(plan_b)
    prints = fingerprints(view_a, view_b)
    diffs = (list_changes(view_a, view_b, match_plans(view_a, view_b, keys, prints)) for keys in KEY_ORDERS)
    return min(diffs, key=lambda diff: len(diff.changes))  # the first of the fewest changes
