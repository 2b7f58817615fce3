"""`map`: the block `do` once per item of `over`, up to `concurrency` items at once.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/map.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from planc.registry.provenance.control import loop_over
from planc.registry.provenance.labels import LabelView
from planc.registry.steps.control import BLOCK, LIST, ControlStep, keep_bound, looped, signature
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed; the flow pass's, a flow rule
    from planc.passes.cost.cost import Coster, Run
    from planc.passes.flow.flow import PlanEnv, Walk

TOOL = signature(
    "map",
    "Runs the block `do` once per item of `over`, with `item` and `index` bound in it, up to "
    "`concurrency` items at once. The result is the list of the block's results, in order.",
    {"over": LIST, "do": BLOCK, "concurrency": {"type": "integer", "minimum": 1, "default": 1}},
    required=["over", "do"],
    pipe="over",
    binds={"do": ("item", "index")},
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    result: dict = {"type": "array"}
    if inputs.get("do") is not None:
        result["items"] = inputs["do"]
    return keep_bound(result, inputs.get("over"))


def cost(coster: Coster, step: ast.Step) -> Run:
    body = coster.block(step, "do")
    count = coster.fan_out(step, body)
    return attrs.evolve(body, cost=body.cost.times(count, coster.waves(count, coster.concurrency(step))))


def flow_map(walk: Walk, step: ast.Step, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]) -> LabelView:
    """What each of its results carries: its block's result, field by field."""
    loop = loop_over(views.get("over", LabelView()))
    inner = env.bound_by(step).bind(item=loop.item, index=loop.index)
    return looped(walk, step, env, inner, loop, control)


STEP = ControlStep(TOOL, result, cost, flow_map, rank=0)
