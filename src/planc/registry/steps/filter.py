"""`filter`: the items of `over` a condition, a block or the judge model keeps.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/filter.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

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
    signature,
)
from planc.registry.tools.schemas import kinds
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed
    from planc.passes.cost.cost import Coster, Run

TOOL = signature("filter", "Keeps the items of `over` for which the condition `where` holds (a bare name there is a "
                 "field of the item), the block `do` returns true, or the judge model answers yes to `infer`. The "
                 "result is the kept items, in order.",
                 {"over": LIST, "where": CONDITION, "do": BLOCK, "infer": STRING},
                 required=["over"], pipe="over", one_of=[("where", "do", "infer")],
                 binds={"where": ("item", ITEM_FIELDS), "do": ("item", "index"), "infer": ("item", "index")})


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    over = inputs.get("over")
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


def flow_filter(walk, step, env, views, control):
    over = views.get("over", LabelView())
    item = over.item()
    inner = env.bound_by(step).bind(item=item, index=LabelView())
    if step.arg("where") is not None:
        return expr_labels(step.arg("where").value, inner.with_fields(item))
    if step.arg("do") is not None:
        return walk.loop(step, "do", inner, control).whole()
    if step.arg("infer") is not None:
        return expr_labels(step.arg("infer").value, inner)
    return NO_LABELS


STEP = ControlStep(TOOL, result, cost, flow_filter, rank=1)
