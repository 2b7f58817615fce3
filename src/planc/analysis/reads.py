"""What a step reads: the results its references point at, in its arguments and its blocks' steps.

The cost pass's critical path, the optimizer's schedule and the parallel run all wait on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from planc.syntax import ast
from planc.syntax.steps import children


def reads(step: ast.Step, targets: Mapping) -> Iterator:
    """What the references in `step`'s arguments and in its blocks' steps point at (steps, or `args`)."""
    pending = [arg.value for arg in step.args]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is ast.Ref:
            yield targets.get(node)
        elif kind is ast.Block:
            pending.extend(arg.value for pipeline in node.pipelines for inner in pipeline.steps for arg in inner.args)
        else:
            pending.extend(children(node))
