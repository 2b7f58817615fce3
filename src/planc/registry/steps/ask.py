"""`ask`: a question to the person running the plan; the answer is the result.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/ask.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from planc.registry.steps.control import ANY, STRING, ControlStep, signature
from planc.registry.tools.tool import Effects
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed
    from planc.passes.cost.cost import Coster, Run

TOOL = signature(
    "ask",
    "Asks the person running the plan `question`; the result is the answer. Unanswered (no one "
    "to ask), it fails, gives `default`, or gives null (`skip`), as `when_unanswered` says.",
    {"question": STRING, "when_unanswered": {"enum": ["fail", "default", "skip"], "default": "fail"}, "default": ANY},
    required=["question"],
    required_when=[("when_unanswered", "default", "default")],
    effects=Effects(read_only=True, destructive=False, open_world=True),
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    return None  # whatever the person answers


def cost(coster: Coster, step: ast.Step) -> Run:
    return coster.run()


STEP = ControlStep(TOOL, result, cost, None, rank=6)  # it carries only what any call carries
