"""What each change may do to the world: the effects the registry declares for the steps it touches.

A change touches its step in A and its step in B, and the steps in their blocks: an added `map`
whose block deletes things is as destructive as the delete, and a changed `over` of that `map`
changes what is deleted. A step's effects are those `planc show` lists as its blast radius
(`planc.analysis.blast_radius`): a tool not in the registry counts as effectful, destructive and
open-world, as a tool that declares no effects does, and an `agent` as any tool it may call.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from planc.analysis.blast_radius import GROUP_WORDS, blast_radius
from planc.diff.changes import Change, Diff
from planc.passes.context import CheckContext
from planc.passes.resolve.resolve import resolve
from planc.registry.loading.registry import Registry
from planc.syntax.ast import Plan

RISKS = tuple(word for _, word in GROUP_WORDS)  # "effectful", "destructive", "open-world"


def with_risk(diff: Diff, plan_a: Plan, plan_b: Plan, registry: Registry) -> Diff:
    """`diff` (of `plan_a` and `plan_b`) with each change's `risk` by the effects `registry` declares.

    >>> from planc.diff import diff_plans
    >>> from planc.registry.tools.tool import Effects, Tool
    >>> from planc.syntax.parser import parse
    >>> search = Tool("search", effects=Effects(read_only=True, destructive=False, open_world=False))
    >>> a, b = 'search(query: "x")', 'search(query: "y")\\nmap(over: $1, do: { delete(id: item.id) })'
    >>> diff = with_risk(diff_plans(a, b), parse(a).plan, parse(b).plan, Registry({"search": search}))
    >>> [(change.kind, change.tool, change.risk) for change in diff.changes]
    [('changed', 'search', ()), ('added', 'map', ('effectful', 'destructive', 'open-world'))]
    """
    within_a, within_b = _risks_within(plan_a, registry), _risks_within(plan_b, registry)
    return Diff(tuple(attrs.evolve(change, risk=_risk(change, within_a, within_b)) for change in diff.changes))


def _risk(change: Change, within_a: dict, within_b: dict) -> tuple[str, ...]:
    found = within_a.get(change.step_a, set()) | within_b.get(change.step_b, set())
    return tuple(risk for risk in RISKS if risk in found)


def _risks_within(plan: Plan, registry: Registry) -> dict[str, set[str]]:
    """Step path -> the risks of the step and of the steps in its blocks, for the steps with any."""
    resolution, _ = resolve(plan, CheckContext(registry=registry))
    within: dict[str, set[str]] = defaultdict(set)
    for path, words in blast_radius(resolution, registry).words().items():
        parts = path.split("/")  # `2/do.1` is in the block of `2`
        for end in range(1, len(parts) + 1):
            within["/".join(parts[:end])].update(words)
    return within
