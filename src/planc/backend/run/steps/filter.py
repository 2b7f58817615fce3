"""`filter` at run time: the items a condition, a block or the judge keeps, and what decided it.

Its declaration (signature, type, cost and flow rules) is `registry/steps/filter.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from planc.backend.run.control_steps import carried, each_item, items, judge, labels_of
from planc.backend.state.values import Labelled, Scope, evaluate, truth
from planc.registry.provenance.control import loop_over
from planc.registry.provenance.expressions import expr_labels
from planc.registry.provenance.labels import NO_LABELS, LabelView
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_filter(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    over = items(step, path, scope, piped)
    loop = loop_over(labels_of(step, "over", scope, piped))
    if (where_arg := step.arg("where")) is not None:  # it binds the item's fields, and no `index`
        where = where_arg.value
        bound = scope.bind({"item": loop.item})
        kept = [item for item in over if truth(evaluate(where, attrs.evolve(bound.bind(item=item), fields=item)), where)]
        read = expr_labels(where, attrs.evolve(bound, field_view=loop.item)) if over else NO_LABELS
        return Labelled(kept, LabelView(read))
    if (do := step.arg("do")) is not None:
        results = await each_item(run, step, path, scope, over, loop)
        return Labelled([item for item, keep in zip(over, results) if truth(keep.value, do.value)], carried(results))
    infer = step.arg("infer")
    assert infer is not None  # a filter has one of `where`, `do` and `infer`
    question = infer.value  # a text, or a reference to one (`infer: $args.question`), evaluated per item
    bound = scope.bind({"item": loop.item, "index": loop.index})
    asked = expr_labels(question, bound) if over else NO_LABELS  # what the judge reads
    kept = [
        await judge(run, evaluate(question, scope.bind(item=item, index=index)), step, f"{path}[{index}]", asked)
        for index, item in enumerate(over)
    ]
    return Labelled([item for item, keep in zip(over, kept) if keep], LabelView(asked))
