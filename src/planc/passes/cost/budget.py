"""Budgets: the most a plan may cost (`--max-usd`, `--max-calls`, `--max-inferences`), E401 past them.

A plan is over a budget when the most its cost range allows exceeds it; a
cost with no upper bound exceeds every budget. The error points at the
top-level step where the running total of the most first passes the budget:
the step to shrink, split off or bound.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from planc.diagnostics import Diagnostic
from planc.diagnostics.build import diagnostic
from planc.passes.cost.cost_range import CostRange
from planc.passes.cost.cost_words import dollars
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.registry.settings.declarations import Budgets


@attrs.frozen
class Budget:
    """The most a plan may cost; None: no limit."""

    usd: float | None = None
    calls: int | None = None
    inferences: int | None = None
    declared: frozenset[str] = frozenset()  # the limits planc.toml's `[budget]` set, named so in E401

    def keywords(self) -> dict:
        """The limits as `check`'s (and `load_plan`'s) keyword arguments: `max_usd`, `max_calls`, `max_inferences`."""
        return {"max_usd": self.usd, "max_calls": self.calls, "max_inferences": self.inferences}

    @classmethod
    def of(cls, usd: float | None, calls: int | None, inferences: int | None, declared: Budgets | None = None) -> Budget:
        """The limits given, each one not given taken from `declared` (planc.toml's `[budget]`)."""
        given: dict[str, Any] = {"usd": usd, "calls": calls, "inferences": inferences}
        taken = {
            field: getattr(declared, f"max_{field}", None)
            for field, value in given.items()
            if value is None and declared is not None and getattr(declared, f"max_{field}", None) is not None
        }
        return cls(**{**given, **taken}, declared=frozenset(taken))


# The field of Budget and of CostRange, the option that sets it, and what it counts.
LIMITS = (
    ("calls", "--max-calls", "tool call"),
    ("inferences", "--max-inferences", "model inference"),
    ("usd", "--max-usd", None),
)


def over_budget(steps: list[tuple[ast.Step, str, CostRange]], budget: Budget) -> list[Diagnostic]:
    """E401 for each budget the plan may exceed; `steps` are its top-level steps, their paths and costs.

    >>> from planc.syntax.parser import parse
    >>> from planc.passes.cost.cost_range import Range
    >>> (step,) = parse("a()").plan.pipelines[0].steps
    >>> [d.message for d in over_budget([(step, "1", CostRange(calls=Range(1, 3)))], Budget(calls=2))]
    ['over budget: the plan may make up to 3 tool calls, and `--max-calls` is 2']
    """
    found = []
    for field, option, noun in LIMITS:
        limit = getattr(budget, field)
        if limit is None:
            continue
        if field in budget.declared:
            option = f"[budget] max_{field}"
        before = 0.0
        for step, path, cost in steps:
            most = getattr(cost, field).high
            if exceeds(before + most, limit):
                total = sum(getattr(cost, field).high for _, _, cost in steps)
                found.append(_over(step, path, option, noun, limit, total, before, most))
                break
            before += most
    return found


def _over(
    step: ast.Step, path: str, option: str, noun: str | None, limit: float, total: float, before: float, most: float
) -> Diagnostic:
    at = step.span
    if math.isinf(total):
        hints = ["this step's cost has no upper bound (see W500): no budget covers it"]
        if noun:
            return diagnostic("E401", "unbounded_count", at, step=path, hints=hints, noun=noun, option=option, limit=limit)
        return diagnostic("E401", "unbounded_usd", at, step=path, hints=hints, option=option, limit=limit)
    verb = "make" if noun else "cost"
    hint = f"this step may {verb} up to {_amount(most, noun)}"
    if before:
        hint += f", after up to {_amount(before, noun)} before it"
    if noun:
        return diagnostic(
            "E401", "over_count", at, step=path, hints=[hint], amount=_amount(total, noun), option=option, limit=limit
        )
    return diagnostic("E401", "over_usd", at, step=path, hints=[hint], amount=_amount(total, noun), option=option, limit=limit)


def _amount(value: float, noun: str | None) -> str:
    if noun is None:
        return dollars(value)
    return f"{value:,.0f} {noun}{'s' if value != 1 else ''}"


def exceeds(value: float, limit: float) -> bool:
    """Whether `value` is over `limit`; sums of dollars carry float error, which is not over."""
    return value > limit and not math.isclose(value, limit, rel_tol=1e-9)
