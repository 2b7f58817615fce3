"""`reduce` at run time: the block `do` once per item, in order, carrying an accumulator.

Its declaration (signature, type, cost and flow rules) is `registry/steps/reduce.py`.
"""

from __future__ import annotations

from planc.backend.run.control_steps import block, items, labels_of, value
from planc.backend.state.values import Labelled
from planc.registry.provenance.labels import LabelView, union


async def run_reduce(run, step, path, scope, piped, in_loop, shown):
    accumulator = Labelled(value(step, "initial", scope), LabelView(labels_of(step, "initial", scope).whole()))
    views = {"item": labels_of(step, "over", scope, piped).item()}
    for index, item in enumerate(items(step, path, scope, piped)):
        bound = scope.bind({**views, "accumulator": LabelView(accumulator.view.whole())}, item=item, index=index,
                           accumulator=accumulator.value)
        done = await block(run, step, "do", path, bound, True, item=index)
        accumulator = Labelled(done.value, LabelView(union(accumulator.view.whole(), done.view.whole())))
    return accumulator
