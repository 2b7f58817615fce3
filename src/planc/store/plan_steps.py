"""A recorded plan as data: one row per step, so that questions about many runs are queries.

Every run's plan is kept whole (the stored plan), which answers questions about one run. Questions
about many ("how often does step 1 call `search`?", "how many calls did the check expect of
`get`, and how many were made?") want the steps as rows: the `steps` table of the run store, one
row per step of the plan a run ran, nested steps included, filled when the run's plan is recorded.

A row says where the step is (its path, its number among its siblings, how many blocks it is in),
what it calls, what kind of value each argument is (`ARGUMENT_KINDS`: never the value itself,
which may be anything a run was given), and, for a plan recorded as checked, what the cost pass
estimated one run of the step costs. A run recorded before the table existed gets its rows from
its stored plan's text when the store is migrated, without estimates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from planc.passes.cost.cost_range import CostRange, Range
from planc.syntax import ast
from planc.syntax.steps import step_blocks, walk_steps

if TYPE_CHECKING:
    from planc.passes.check import CheckResult

# What kind of value an argument is: the words the `steps.arguments` column uses.
ARGUMENT_KINDS = {
    "literal": "a number, true, false, null, or a string without holes",
    "template": "a string with holes, rendered at run time",
    "reference": "a step's result (`$2`, `$hits.title`)",
    "argument": "a run argument (`$args.limit`)",
    "path": "a bare `item.title`: a block's item",
    "list": "a list written in the plan",
    "record": "a record written in the plan",
    "block": "a block of steps (`do: { ... }`)",
    "condition": "a comparison, `not`, `and` or `or`",
}


def argument_kind(value: ast.Expr) -> str:
    """The kind (`ARGUMENT_KINDS`) of an argument's value.

    >>> from planc.syntax.parser import parse
    >>> step = parse('search(q: "disk {$args.x}", limit: $args.limit, over: $1, where: a > 1)').plan.pipelines[0].steps[0]
    >>> [argument_kind(arg.value) for arg in step.args]
    ['template', 'argument', 'reference', 'condition']
    """
    if isinstance(value, ast.String):
        return "template" if value.holes else "literal"
    if isinstance(value, ast.Ref):
        return "argument" if value.name.text == "args" else "reference"
    if isinstance(value, ast.CONDITIONS):
        return "condition"
    return {ast.Literal: "literal", ast.Path: "path", ast.ListExpr: "list", ast.Record: "record", ast.Block: "block"}[type(value)]


def _bounds(value: Range) -> tuple[float, float | None]:
    return value.low, value.high if value.bounded else None  # NULL: no bound


def step_rows(
    plan: ast.Plan, costs: Mapping[ast.Step, CostRange] | None = None, usd_each: Mapping[str, float] | None = None
) -> list[tuple]:
    """The `steps` rows of `plan` (without the run's id): path, position, depth, tool, arguments (JSON: name ->
    kind), whether its input is piped, what one call of its tool is declared to cost (`usd_each`: tool -> usd),
    and the estimates of `costs` (the cost pass's, per step) as (low, high) of calls, dollars and milliseconds.

    >>> from planc.syntax.parser import parse
    >>> [row[:5] for row in step_rows(parse('a(x: 1) |> map(do: { b(y: item.z) })').plan)]
    [('1', 1, 0, 'a', '{"x": "literal"}'), ('2', 2, 0, 'map', '{"do": "block"}'), ('2/do.1', 1, 1, 'b', '{"y": "path"}')]
    """
    piped = _piped(plan.pipelines)
    rows = []
    for step, path in walk_steps(plan.pipelines):
        cost = costs.get(step) if costs is not None else None
        estimate = (*_bounds(cost.calls), *_bounds(cost.usd), *_bounds(cost.critical_ms)) if cost else (None,) * 6
        rows.append(
            (
                path,
                int(path.rsplit(".", 1)[-1]),
                path.count("/"),
                step.tool.text,
                json.dumps({arg.name.text: argument_kind(arg.value) for arg in step.args}),
                int(step in piped),
                (usd_each or {}).get(step.tool.text, 0.0),
                *estimate,
            )
        )
    return rows


def _piped(pipelines: Sequence[ast.Pipeline]) -> set[ast.Step]:
    """The steps of `pipelines` and of their blocks that take the step before them as piped input."""
    found: set[ast.Step] = set()
    for pipeline in pipelines:
        found.update(pipeline.steps[1:])
        for step in pipeline.steps:
            for block, _ in step_blocks(step):
                found |= _piped(block.pipelines)
    return found


def recorded_step_rows(stored: Mapping) -> list[tuple]:
    """The `steps` rows of a stored plan, from its text: what a run recorded before the table existed gets.
    No rows for a plan whose text does not parse (it cannot have run)."""
    from planc.syntax.parser import parse

    parsed = parse(stored.get("source") or "")
    return step_rows(parsed.plan) if parsed.plan is not None else []


def checked_step_rows(checked: CheckResult) -> list[tuple]:
    """The `steps` rows of `checked` (a CheckResult without errors), with the cost pass's estimates."""
    tools = checked.resolution.tools.values() if checked.resolution is not None else ()
    assert checked.plan is not None  # it checked without errors
    return step_rows(
        checked.plan, checked.cost.steps if checked.cost is not None else None, {tool.name: tool.cost.usd for tool in tools}
    )
