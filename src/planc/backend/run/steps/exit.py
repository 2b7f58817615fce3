"""`exit` at run time: its condition asked; the plan ended with its output, or `value` passed on.

Its declaration (signature, type, cost and flow rules) is `registry/steps/exit.py`.
"""

from __future__ import annotations

from planc.backend.run.control_steps import condition, piped_labels, step_sources, value
from planc.backend.state.values import Exited, Labelled
from planc.registry.provenance.labels import NO_LABELS, LabelView, union, union_all
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.syntax.steps import deciding


async def run_exit(run, step, path, scope, piped, in_loop, shown):
    passed = value(step, "value", scope, piped)
    decided = NO_LABELS
    if deciding(step) is not None:
        holds, decided = await condition(run, step, path, scope)
        # Whether any later step runs was decided here, and by what decided that this step runs.
        scope.gates.labels = union(scope.gates.labels, union(decided, scope.control))
        if not holds:
            return Labelled(passed, LabelView(decided))
    output = value(step, "output", scope) if step.arg("output") is not None else passed
    given = union_all(step_sources(step, CONTROL_STEPS["exit"], scope, piped_labels(piped)).values())
    raise Exited(value(step, "status", scope), value(step, "message", scope), output,
                 union(union(given, decided), scope.controlled()))
