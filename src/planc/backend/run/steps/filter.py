"""`filter` at run time: the items a condition, a block or the judge keeps, and what decided it.

Its declaration (signature, type, cost and flow rules) is `registry/steps/filter.py`.
"""

from __future__ import annotations

import attrs

from planc.backend.run.control_steps import carried, each_item, items, judge, labels_of
from planc.backend.state.values import Labelled, evaluate, render, truth
from planc.registry.provenance.expressions import expr_labels
from planc.registry.provenance.labels import NO_LABELS, LabelView


async def run_filter(run, step, path, scope, piped, in_loop, shown):
    over = items(step, path, scope, piped)
    item_view = labels_of(step, "over", scope, piped).item()
    if step.arg("where") is not None:
        where = step.arg("where").value
        bound = scope.bind({"item": item_view})
        kept = [item for item in over
                if truth(evaluate(where, attrs.evolve(bound.bind(item=item), fields=item)), where)]
        return Labelled(kept, LabelView(expr_labels(where, attrs.evolve(bound, field_view=item_view)) if over
                                        else NO_LABELS))
    if step.arg("do") is not None:
        results = await each_item(run, step, path, scope, over, item_view)
        return Labelled([item for item, keep in zip(over, results) if truth(keep.value, step.arg("do").value)],
                        carried(results))
    question = step.arg("infer").value
    asked = expr_labels(question, scope.bind({"item": item_view})) if over else NO_LABELS  # what the judge reads
    kept = [await judge(run, render(question, scope.bind(item=item, index=index)), step, f"{path}[{index}]", asked)
            for index, item in enumerate(over)]
    return Labelled([item for item, keep in zip(over, kept) if keep], LabelView(asked))
