"""W506: a label on the first step of a pipeline, which nothing reads, while the pipeline's result is read.

`hits = search(...) |> map(...)` names the search, not the pipeline: `$hits` reads the search's result.
When nothing reads `$hits` and something reads the pipeline's last step (by its number), the label was
almost certainly meant for that step; the fix moves it there (`search(...) |> hits = map(...)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from planc.diagnostics import Diagnostic, Fix, Span
from planc.diagnostics.build import diagnostic
from planc.syntax import ast
from planc.syntax.steps import step_blocks


def misplaced_labels(pipelines: Iterable[ast.Pipeline], targets: Mapping, paths: Mapping[ast.Step, str]) -> Iterator[Diagnostic]:
    """W506 for each pipeline of `pipelines` (blocks' included) whose head's label nothing reads, while some
    reference (`targets`: the resolve pass's, ref -> step) reads its last step.

    >>> from planc.passes.check import check
    >>> [d.fix.replacement for d in check('hits = a() |> b()\\nc(x: $2)').diagnostics if d.code == "W506"]
    ['a() |> hits = ']
    """
    read = set(targets.values())
    for pipeline in _pipelines(pipelines):
        head, last = pipeline.steps[0], pipeline.steps[-1]
        if head is last or head.label is None or last.label is not None or head in read or last not in read:
            continue
        label, lines = head.label.text, head.label.span[2]
        fix = None
        if lines is not None and isinstance(head.label.span[0], int):
            start, middle, end = head.label.span[0], head.tool.span[0], last.tool.span[0]
            fix = Fix(Span(start, end, lines), lines.source[middle:end] + f"{label} = ")
        yield diagnostic(
            "W506",
            "head_label",
            head.label.span,
            step=paths.get(head),
            label=label,
            last=paths.get(last),
            fix=fix,
            hints=[f"label the last step (`... |> {label} = {last.tool.text}(...)`) to name the pipeline's result"],
        )


def _pipelines(pipelines: Iterable[ast.Pipeline]) -> Iterator[ast.Pipeline]:
    for pipeline in pipelines:
        yield pipeline
        for step in pipeline.steps:
            for block, _ in step_blocks(step):
                yield from _pipelines(block.pipelines)
