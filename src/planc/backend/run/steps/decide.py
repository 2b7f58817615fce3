"""`decide` at run time: its condition asked, then the branch it chose.

Its declaration (signature, type, cost and flow rules) is `registry/steps/decide.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.run.control_steps import block, condition, may_exit
from planc.backend.state.values import Labelled, Scope
from planc.registry.provenance.labels import LabelView, union
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_decide(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    holds, decided = await condition(run, step, path, scope)
    if may_exit(step):  # whether the steps after it run was decided here, whichever branch is taken
        scope.gates.labels = union(scope.gates.labels, decided)
    branch = "then" if holds else "else"
    if step.arg(branch) is None:
        return Labelled(None, LabelView(decided))
    taken = await block(run, step, branch, path, scope, in_loop, control=decided)
    return Labelled(taken.value, LabelView(union(decided, taken.view.whole())))
