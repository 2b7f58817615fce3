"""A run's budget kept at run time: what the check estimated is also what the run may spend.

The check refuses a plan whose most may pass a budget (E401), but a most can be unbounded (W500) or
rest on a tool's `returns_at_most`, which the tool may break. So every real call and every model
inference is counted before it is made, and the one that would pass a limit is not made: the run
stops there, naming the limit as E401 names it. An inference of a priced model (`[models.ROLE]
input_usd_per_million`, `output_usd_per_million`) may cost, before it is made, its request (at most one
token per byte) in and `max_tokens` out; once made, what its reply's `usage` says it cost. A tool that
returns more items than its `returns_at_most` allows breaks its declaration, and that call fails
(`more_than_declared`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from planc.backend.state.values import RunError
from planc.passes.cost.budget import LIMITS, Budget, exceeds
from planc.passes.cost.cost_words import dollars
from planc.registry.tools.tool import Tool


class Spending:
    """What one run has spent of `budget`: calls, inferences and dollars, each counted before it is spent."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.spent = {"calls": 0, "inferences": 0, "usd": 0.0}

    def call(self, tool: Tool, path: str, at: object = None) -> None:
        """Count one call of `tool` at step path `path`, or stop the run before it (a RunError at `at`)."""
        self.spend({"calls": 1, "usd": tool.cost.usd}, f"step {path}: `{tool.name}` was not called", at)

    def inference(self, role: str, path: str, at: object = None, most_usd: float = 0.0) -> None:
        """Count one inference of the `role` model at step path `path`, or stop the run before it: before one
        that may cost up to `most_usd` where that would pass `--max-usd`. What it did cost is `paid` after it."""
        self.spend(
            {"inferences": 1, "usd": most_usd},
            f"step {path}: the `{role}` model was not asked",
            at,
            counted={"inferences": 1},
            this="inference may cost up to",
        )

    def paid(self, usd: float) -> None:
        """Add what an inference cost, from the token usage its reply reports."""
        self.spent["usd"] += usd

    def spend(
        self,
        costs: Mapping[str, float],
        what: str,
        at: object,
        counted: Mapping[str, float] | None = None,
        this: str = "call costs",
    ) -> None:
        """Count `costs` (`counted` instead, when given: what is known to be spent before the thing is done),
        or stop the run before it (a RunError at `at`) when one of `costs` would pass its limit."""
        for field, option, noun in LIMITS:
            limit, cost = getattr(self.budget, field), costs.get(field, 0)
            if limit is None or not cost or not exceeds(self.spent[field] + cost, limit):
                continue
            if field in self.budget.declared:
                option = f"[budget] max_{field}"
            if noun:
                had = self.spent[field]
                spent = f"the run has made {had:,} {noun}{'s' if had != 1 else ''}"
            else:
                amount = dollars(cost) if math.isfinite(cost) else "any amount (its model has no `max_tokens`)"
                spent = f"the run has spent {dollars(self.spent[field])} and this {this} {amount}"
            raise RunError(f"{what}: it would pass the budget: {spent}, and `{option}` is {limit}", at, code="E401")
        for field, cost in (costs if counted is None else counted).items():
            self.spent[field] += cost


def more_than_declared(tool: Tool, args: Mapping, result: object) -> str | None:
    """Why `result` breaks `tool`'s `returns_at_most` (more items than the bounding argument allows), or None.

    >>> tool = Tool("search", params={"limit": {"type": "integer", "default": 2}}, returns_at_most="limit")
    >>> more_than_declared(tool, {}, [1, 2, 3])
    'it returned 3 items, and its `returns_at_most` is `limit`, which was 2'
    >>> more_than_declared(tool, {"limit": 3}, [1, 2, 3]) is None
    True
    """
    param = tool.returns_at_most
    if param is None or not isinstance(result, list):
        return None
    schema = tool.params.get(param, {})
    most = args.get(param, schema.get("default", schema.get("maximum")))
    if not isinstance(most, (int, float)) or isinstance(most, bool) or len(result) <= most:
        return None
    return f"it returned {len(result)} items, and its `returns_at_most` is `{param}`, which was {most}"
