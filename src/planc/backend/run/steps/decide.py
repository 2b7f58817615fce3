"""`decide` at run time: its condition asked, then the branch it chose.

Its declaration (signature, type, cost and flow rules) is `registry/steps/decide.py`.
"""

from __future__ import annotations

from planc.backend.run.control_steps import block, condition, may_exit
from planc.backend.state.values import Labelled
from planc.registry.provenance.labels import LabelView, union


async def run_decide(run, step, path, scope, piped, in_loop, shown):
    holds, decided = await condition(run, step, path, scope)
    if may_exit(step):  # whether the steps after it run was decided here, whichever branch is taken
        scope.gates.labels = union(scope.gates.labels, decided)
    branch = "then" if holds else "else"
    if step.arg(branch) is None:
        return Labelled(None, LabelView(decided))
    taken = await block(run, step, branch, path, scope, in_loop, control=decided)
    return Labelled(taken.value, LabelView(union(decided, taken.view.whole())))
