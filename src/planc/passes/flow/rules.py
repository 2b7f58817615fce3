"""The flow rule of each control step, from its declaration (`registry/steps/`; `control.py` says
what a rule is): what its result carries besides what any call's result carries (its arguments'
labels and its control labels), and what the steps in its blocks are given, before a run. A built-in
step without a rule of its own (`ask`, `reshape`, a pure step) carries only what any call carries.
"""

from __future__ import annotations

from planc.registry.steps.builtins import CONTROL_DECLARATIONS
from planc.registry.steps.pure_steps import PURE_STEPS

# tests/test_architecture.py holds the two together to the built-in steps.
FLOW_RULES = {name: step.flow for name, step in CONTROL_DECLARATIONS.items() if step.flow is not None}
CALL_RULE = frozenset({*(name for name in CONTROL_DECLARATIONS if name not in FLOW_RULES), *PURE_STEPS})
