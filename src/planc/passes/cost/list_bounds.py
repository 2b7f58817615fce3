"""How many items a list may have, so how many times `map`, `filter` and `reduce` may run their block.

A list's most is known from a literal list's length, from `maxItems` in its
type, or from the tool that made it: a tool that declares `returns_at_most =
"limit"` returns at most as many items as the value of its `limit`. That
value is the literal argument; when the argument is not literal, the
`maximum` of the parameter's schema (or of the value's type); when it is not
given, the parameter's `default`, else its `maximum`. `map` and `filter`
return at most as many items as they were given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from planc.analysis.literals import NOT_LITERAL, literal_value
from planc.passes.cost.cost_range import UNBOUNDED, Range
from planc.registry.tools.tool import Tool
from planc.syntax import ast
from planc.syntax.steps import step_blocks, walk_steps

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution
    from planc.passes.types.types import Typing


@attrs.frozen
class Bound:
    """How many items a list may have: `count` is [least, most].

    When the most is unknown, `why` says why, and `known` whether planc knows
    anything of the list: not of the result of a tool it does not know, or of
    a value of unknown type. As with types, the unknown passes: it has no
    upper bound, but that is no warning.
    """

    count: Range
    why: str = ""
    known: bool = True


UNKNOWN = Bound(Range(0, UNBOUNDED), known=False)


class ListBounds:
    """The bounds of the lists in one plan, from the resolve and types passes' facts."""

    def __init__(self, plan: ast.Plan, resolution: Resolution, typing: Typing) -> None:
        self.resolution = resolution
        self.typing = typing
        self.piped_from: dict[ast.Step, ast.Step] = {}
        _find_pipes(plan.pipelines, self.piped_from)
        self._steps: dict[ast.Step, Bound] = {}
        for step, _ in walk_steps(plan.pipelines):  # in text order, so what a step reads is known before it
            self.of_step(step)

    def of_over(self, step: ast.Step) -> Bound:
        """The bound of the list a `map`, `filter` or `reduce` step runs over, given or piped."""
        return self._of_input(step, "over")

    def _of_input(self, step: ast.Step, param: str) -> Bound:
        arg = step.arg(param)
        if arg is not None:
            return self.of_value(arg.value)
        before = self.piped_from.get(step)
        return self.of_step(before) if before is not None else Bound(Range(0, 0))

    def of_value(self, expr: ast.Expr) -> Bound:
        if isinstance(expr, ast.ListExpr):
            return Bound(Range(len(expr.items), len(expr.items)))
        target = self.resolution.targets.get(expr) if isinstance(expr, ast.Ref) and not expr.accessors else None
        if isinstance(target, ast.Step):
            return self.of_step(target)
        return _typed(self.typing.of(expr))

    def of_step(self, step: ast.Step) -> Bound:
        """The bound of the result of `step`, when it is a list."""
        if step not in self._steps:
            made, typed = self._made_by(step), _typed(self.typing.of(step))
            if made is None:
                bound = typed
            elif typed.count.high < made.count.high:  # `maxItems` in the tool's `returns` is tighter
                bound = Bound(Range(made.count.low, typed.count.high))
            else:
                bound = made
            self._steps[step] = bound
        return self._steps[step]

    def _made_by(self, step: ast.Step) -> Bound | None:
        """The bound the step that makes a list gives it; None when only the list's type can tell."""
        tool = self.resolution.tools.get(step)
        name = step.tool.text
        if tool is None:
            return UNKNOWN
        if tool.builtin:
            if name == "map":
                return self.of_over(step)
            if name == "filter":  # keeps any number of the items, none included
                over = self.of_over(step)
                return attrs.evolve(over, count=Range(0, over.count.high))
            if name in ("exit", "reshape"):  # their result is their `value` (when `exit` does not exit)
                return self._of_input(step, "value")
            return None
        if tool.returns_at_most is None:
            return Bound(Range(0, UNBOUNDED), f"`{name}` declares no `returns_at_most` and no `maxItems` in `returns`")
        most = largest_argument(step, tool, tool.returns_at_most, self.typing)
        if most is None:
            return Bound(Range(0, UNBOUNDED), _unknown_argument(step, tool.returns_at_most, name))
        return Bound(Range(0, most))


def largest_argument(step: ast.Step, tool: Tool, param: str, typing: Typing | None) -> float | None:
    """The largest value the integer argument `param` of `step` may have; None when it has no bound.

    >>> from planc.syntax.parser import parse
    >>> step = parse("search(limit: 5)").plan.pipelines[0].steps[0]
    >>> tool = Tool("search", params={"limit": {"type": "integer", "default": 20}, "query": {}})
    >>> largest_argument(step, tool, "limit", None), largest_argument(step, tool, "query", None)
    (5, None)
    """
    schema = tool.params.get(param) or {}
    arg = step.arg(param)
    if arg is None:
        found = [schema.get("default"), schema.get("maximum")]
    elif _number(literal := literal_value(arg.value)) is not None:
        found = [literal]
    else:
        value_type = typing.of(arg.value) if typing is not None else None
        found = [schema.get("maximum"), value_type.get("maximum") if isinstance(value_type, Mapping) else None]
    numbers = [number for number in map(_number, found) if number is not None]
    if not numbers:
        return None
    return numbers[0] if arg is None else min(numbers)


def _number(value: object) -> float | None:
    if value is NOT_LITERAL or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return max(0, math.floor(value))


def _unknown_argument(step: ast.Step, param: str, name: str) -> str:
    if step.arg(param) is None:
        return f"`{param}` of `{name}` bounds its result, but it is not given and has no `default` or `maximum`"
    return f"`{param}` of `{name}` bounds its result, but it is only known at run time and has no `maximum`"


def _typed(schema: object) -> Bound:
    """The bound that `maxItems` in a list's type states."""
    if not isinstance(schema, Mapping):
        return UNKNOWN
    most = schema.get("maxItems")
    if isinstance(most, int) and not isinstance(most, bool):
        return Bound(Range(0, most))
    return Bound(Range(0, UNBOUNDED), "its type declares no `maxItems`")


def _find_pipes(pipelines: Iterable[ast.Pipeline], found: dict) -> None:
    """Every step that receives a piped result -> the step whose result it receives."""
    for pipeline in pipelines:
        steps = pipeline.steps
        found.update(zip(steps[1:], steps[:-1]))
        for step in steps:
            for block, _ in step_blocks(step):
                _find_pipes(block.pipelines, found)
