"""`exit` at run time: its condition asked; the plan ended with its output, or `value` passed on.

Its declaration (signature, type, cost and flow rules) is `registry/steps/exit.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.run.control_steps import condition, labels_of, piped_labels, step_sources, value
from planc.backend.state.values import Exited, Labelled, Scope
from planc.registry.provenance.labels import NO_LABELS, LabelView, union, union_all
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.syntax import ast
from planc.syntax.steps import deciding

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_exit(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
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
    message = value(step, "message", scope)
    if message is not None:
        message = run.session.redactor.labelled(message, labels_of(step, "message", scope).whole())
    raise Exited(value(step, "status", scope), message, output, union(union(given, decided), scope.controlled()))
