"""`exit`: ends the plan it is written in when its condition holds, with an output and a status.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/exit.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from planc.registry.provenance.labels import LabelView, union, union_all
from planc.registry.steps.control import (
    ANY,
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
    "exit",
    "Ends the plan when `when` holds (or the judge says yes to `infer`; always when neither is "
    "given), with `output` (else `value`) as the plan's result, and `status` and `message`. Inside a "
    "block it ends the whole plan it is written in; inside a declared plan, that plan, whose result "
    "is then its `output`. When it does not exit, its result is `value`.",
    {
        "value": ANY,
        "when": CONDITION,
        "infer": STRING,
        "status": {"enum": ["ok", "error"], "default": "ok"},
        "message": STRING,
        "output": ANY,
    },
    pipe="value",
    at_most_one=[("when", "infer")],
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    return None  # when it does not exit, its `value`, of any type


def cost(coster: Coster, step: ast.Step) -> Run:
    return coster.run(coster.judged(step) if step.arg("infer") is not None else coster.free(), may_exit=True, ordered=True)


def flow_exit(
    walk: Walk, step: ast.Step, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]
) -> frozenset[str]:
    decided = condition_labels(step, env)
    # When it ends the plan, the plan's result is its `output` (else its `value`), decided here.
    walk.exits = union(walk.exits, union(union_all(view.whole() for view in views.values()), union(decided, control)))
    # Whether any later step runs is decided here, by its condition and by what decides that it runs (the
    # `decide` it is in): a run adds those when it asks the condition, or takes either branch.
    walk.gates = union(walk.gates, union(decided, control))
    if step.arg("when") is not None or step.arg("infer") is not None:
        walk.deciders = (*walk.deciders, (deciding_value(step), env))
    return decided


STEP = ControlStep(TOOL, result, cost, flow_exit, rank=4)
