"""`reduce`: the block `do` once per item of `over`, in order, carrying an accumulator.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/reduce.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from planc.registry.provenance.control import loop_over
from planc.registry.provenance.labels import LabelView, union
from planc.registry.steps.control import ANY, BLOCK, LIST, ControlStep, looped, signature
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed; the flow pass's, a flow rule
    from planc.passes.cost.cost import Coster, Run
    from planc.passes.flow.flow import PlanEnv, Walk

TOOL = signature(
    "reduce",
    "Runs the block `do` once per item of `over`, in order, with `item`, `index` and "
    "`accumulator` (the block's last result, `initial` at first) bound. The result is the last "
    "accumulator.",
    {"over": LIST, "do": BLOCK, "initial": ANY},
    required=["over", "do"],
    pipe="over",
    binds={"do": ("item", "index", "accumulator")},
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    return inputs.get("do")


def cost(coster: Coster, step: ast.Step) -> Run:
    body = coster.block(step, "do")
    return attrs.evolve(body, cost=body.cost.times(coster.fan_out(step, body)))


def flow_reduce(
    walk: Walk, step: ast.Step, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]
) -> frozenset[str]:
    loop = loop_over(views.get("over", LabelView()))
    accumulator = views.get("initial", LabelView()).whole()
    while True:  # the accumulator carries what any round gave it: walked until nothing is added
        bound = env.bound_by(step).bind(item=loop.item, index=loop.index, accumulator=LabelView(accumulator))
        rounds = looped(walk, step, env, bound, loop, control)
        grown = union(accumulator, rounds.whole())
        if grown is accumulator:
            return accumulator
        accumulator = grown


STEP = ControlStep(TOOL, result, cost, flow_reduce, rank=2)
