"""`reshape`: a record or a list built from earlier results, at no cost.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/reshape.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from planc.registry.steps.control import ANY, ControlStep, signature
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed
    from planc.passes.cost.cost import Coster, Run

TOOL = signature(
    "reshape",
    "The result is `value`, with its references and templates filled in: builds a record "
    "or a list from earlier results, at no cost.",
    {"value": ANY},
    required=["value"],
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    return inputs.get("value")


def cost(coster: Coster, step: ast.Step) -> Run:
    return coster.run()


STEP = ControlStep(TOOL, result, cost, None, rank=7)  # it carries only what any call carries
