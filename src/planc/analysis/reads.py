"""What a step reads: the results its references point at, in its arguments and its blocks' steps.

The cost pass's critical path, the optimizer's schedule and the parallel run all wait on it; the
pictures draw an edge for each reference, from the step that holds it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from planc.syntax import ast
from planc.syntax.steps import children


def reads(step: ast.Step, targets: Mapping) -> Iterator:
    """What the references in `step`'s arguments and in its blocks' steps point at (steps, or `args`)."""
    return (targets.get(ref) for ref in _refs([arg.value for arg in step.args], into_blocks=True))


def reads_by_argument(step: ast.Step, targets: Mapping) -> Iterator[tuple[str, object]]:
    """(argument name, what a reference in it points at) for `step`'s own arguments; the references in
    its blocks' steps are those steps' own.

    >>> from planc.passes.check import check
    >>> result = check('a()\\nb(x: $1, y: "{$1}", do: { c(z: $1) })')
    >>> step = result.plan.pipelines[1].steps[0]
    >>> [(name, result.resolution.paths[target]) for name, target in reads_by_argument(step, result.resolution.targets)]
    [('x', '1'), ('y', '1')]
    """
    for arg in step.args:
        for ref in _refs([arg.value], into_blocks=False):
            yield arg.name.text, targets.get(ref)


def _refs(pending: list, into_blocks: bool) -> Iterator[ast.Ref]:
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is ast.Ref:
            yield node
        elif kind is ast.Block:
            if into_blocks:
                pending.extend(arg.value for pipeline in node.pipelines for inner in pipeline.steps for arg in inner.args)
        else:
            pending.extend(children(node))
