"""`reduce` at run time: the block `do` once per item, in order, carrying an accumulator.

Its declaration (signature, type, cost and flow rules) is `registry/steps/reduce.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.run.control_steps import block, items, labels_of, value
from planc.backend.state.values import Labelled, Scope
from planc.registry.provenance.control import loop_over
from planc.registry.provenance.labels import LabelView, union
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_reduce(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    accumulator = Labelled(value(step, "initial", scope), LabelView(labels_of(step, "initial", scope).whole()))
    loop = loop_over(labels_of(step, "over", scope, piped))
    views = {"item": loop.item, "index": loop.index}
    for index, item in enumerate(items(step, path, scope, piped)):
        bound = scope.bind(
            {**views, "accumulator": LabelView(accumulator.view.whole())}, item=item, index=index, accumulator=accumulator.value
        )
        done = await block(run, step, "do", path, bound, True, item=index, control=loop.control)
        accumulator = Labelled(done.value, LabelView(union(accumulator.view.whole(), done.view.whole())))
    return accumulator
