"""`filter`: the items of `over` a condition, a block or the judge model keeps.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/filter.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from planc.registry.provenance.control import loop_over
from planc.registry.provenance.expressions import expr_labels
from planc.registry.provenance.labels import NO_LABELS, LabelView
from planc.registry.steps.control import (
    BLOCK,
    CONDITION,
    ITEM_FIELDS,
    LIST,
    STRING,
    ControlStep,
    keep_bound,
    looped,
    signature,
)
from planc.registry.tools.schemas import kinds
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed; the flow pass's, a flow rule
    from planc.passes.cost.cost import Coster, Run
    from planc.passes.flow.flow import PlanEnv, Walk

TOOL = signature(
    "filter",
    "Keeps the items of `over` for which the condition `where` holds (a bare name there is a "
    "field of the item), the block `do` returns true, or the judge model answers yes to `infer`. The "
    "result is the kept items, in order.",
    {"over": LIST, "where": CONDITION, "do": BLOCK, "infer": STRING},
    required=["over"],
    pipe="over",
    one_of=[("where", "do", "infer")],
    binds={"where": ("item", ITEM_FIELDS), "do": ("item", "index"), "infer": ("item", "index")},
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    over: Any = inputs.get("over")
    if kinds(over) != {"array"}:
        return keep_bound(dict(LIST), over)
    # The kept items have the input's item type and at most its length; any may be dropped.
    if "minItems" not in over and "prefixItems" not in over:
        return over
    return {key: value for key, value in over.items() if key not in ("minItems", "prefixItems")}


def cost(coster: Coster, step: ast.Step) -> Run:
    if step.arg("infer") is not None:
        body = coster.run(coster.judged(step))
    else:
        body = coster.block(step, "do")
    return attrs.evolve(body, cost=body.cost.times(coster.fan_out(step, body)))


def flow_filter(
    walk: Walk, step: ast.Step, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]
) -> frozenset[str]:
    loop = loop_over(views.get("over", LabelView()))
    inner = env.bound_by(step).bind(item=loop.item, index=loop.index)
    if (where := step.arg("where")) is not None:  # it binds the item's fields, and no `index`
        fields = env.bound_by(step).bind(item=loop.item).with_fields(loop.item)
        return expr_labels(where.value, fields)
    if step.arg("do") is not None:
        return looped(walk, step, env, inner, loop, control).whole()
    if (infer := step.arg("infer")) is not None:
        return expr_labels(infer.value, inner)
    return NO_LABELS


STEP = ControlStep(TOOL, result, cost, flow_filter, rank=1)
