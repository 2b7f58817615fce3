"""What calling a declared plan (`plan__NAME`) may cost: the cost of one run of that plan.

The plan's file is checked with the registry and its declared `params`, and its
total is the call's cost. A plan that takes part in a cycle (E210), or whose
file cannot be read or checked, has no known bound.
"""

from __future__ import annotations

from pathlib import Path

from planc.passes.cost.cost_range import UNBOUNDED, CostRange, Range
from planc.passes.resolve.plan_calls import cycle_from, plan_calls
from planc.registry.registry import Registry

NO_BOUND = CostRange(*(Range(0, UNBOUNDED) for _ in range(5)))


# (plan name, id of the registry) -> (the registry, kept so its id stays its own; the cost)
_COSTS: dict[tuple[str, int], tuple[Registry, CostRange]] = {}


def plan_cost(name: str, registry: Registry) -> CostRange:
    """The cost of one run of the declared plan `name` (worked out once per registry)."""
    key = (name, id(registry))
    if key not in _COSTS:
        if len(_COSTS) > 256:
            _COSTS.clear()
        _COSTS[key] = (registry, _cost(name, registry))
    return _COSTS[key][1]


def _cost(name: str, registry: Registry) -> CostRange:
    if cycle_from(name, plan_calls(registry)):
        return NO_BOUND
    from planc.passes.check import check  # the cost pass runs inside check: imported when a plan is called

    table = registry.plans[name]
    folder = registry.source.parent if registry.source else Path.cwd()
    try:
        text = (folder / table["file"]).read_text(encoding="utf-8")
    except OSError:
        return NO_BOUND
    checked = check(text, registry=registry, arguments=table.get("params", {}))
    return checked.cost.total if checked.ok and checked.cost else NO_BOUND
