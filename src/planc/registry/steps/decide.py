"""`decide`: the block `then` when a condition (or the judge model) says so, else `else`.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/decide.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from planc.registry.provenance.labels import LabelView, union
from planc.registry.steps.control import (
    BLOCK,
    CONDITION,
    STRING,
    ControlStep,
    condition_labels,
    deciding_value,
    signature,
)
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed; the flow pass's, a flow rule
    from planc.passes.cost.cost import Coster, Run
    from planc.passes.flow.flow import PlanEnv, Walk

TOOL = signature(
    "decide",
    "Runs the block `then` when the condition `when` holds (or the judge model answers yes to "
    "`infer`), else the block `else`. The result is the branch's result (null if none ran).",
    {"when": CONDITION, "infer": STRING, "then": BLOCK, "else": BLOCK},
    required=["then"],
    one_of=[("when", "infer")],
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    then = inputs.get("then")
    return then if "else" in inputs and inputs["else"] == then else None


def cost(coster: Coster, step: ast.Step) -> Run:
    then, otherwise = coster.block(step, "then"), coster.block(step, "else")
    condition = coster.judged(step) if step.arg("infer") is not None else coster.free()
    return coster.run(
        condition + then.cost.either(otherwise.cost), then.may_exit or otherwise.may_exit, then.ordered or otherwise.ordered
    )


def flow_decide(
    walk: Walk, step: ast.Step, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]
) -> frozenset[str]:
    decided = condition_labels(step, env)
    inner = union(control, decided)
    taken = walk.decided_by(
        (deciding_value(step), env),
        lambda: union(walk.block(step, "then", env, inner).whole(), walk.block(step, "else", env, inner).whole()),
    )
    return union(decided, taken)


STEP = ControlStep(TOOL, result, cost, flow_decide, rank=3)
