"""One plan as the diff sees it: its steps in frames, each step's path, what each step reads.

A frame is one level of steps: the plan's top level, or the body of one block. Steps are
only ever matched with steps of the corresponding frame (the top level with the top level,
the `do` block of a matched `map` with the `do` block of its partner).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from planc.passes.context import CheckContext
from planc.passes.resolve.resolve import ARGS, resolve
from planc.syntax import ast
from planc.syntax.steps import step_blocks


@attrs.frozen
class PlanView:
    plan: ast.Plan
    paths: dict  # Step -> its step path
    order: dict  # Step -> its place in text order, nested steps included
    targets: dict  # Ref -> the Step it reads, or ARGS for `$args`; a Ref that does not resolve is absent
    piped_from: dict  # Step -> the step whose result `|>` passes to it
    inner: dict  # Step -> its blocks' frames, by the name they have in step paths; steps with blocks only

    def blocks(self, step: ast.Step) -> dict[str, list[ast.Step]]:
        """The frames inside `step`, by the name they have in step paths (`do`, `then`, `do2`)."""
        return self.inner.get(step, NO_BLOCKS)


NO_BLOCKS: dict = {}


def view_of(plan: ast.Plan) -> PlanView:
    """What the diff needs to know about `plan`. A plan with reference errors is still diffed:
    a reference that does not resolve compares by how it is written."""
    resolution, _ = resolve(plan, CheckContext())
    paths = resolution.paths  # every step's, in text order
    blocks = {step: found for step in paths if (found := list(step_blocks(step)))}
    piped_from: dict[ast.Step, ast.Step] = {}
    for pipelines in [plan.pipelines] + [block.pipelines for found in blocks.values() for block, _ in found]:
        for pipeline in pipelines:
            piped_from.update(zip(pipeline.steps[1:], pipeline.steps))
    inner = {step: {name: frame_steps(block.pipelines) for block, name in found} for step, found in blocks.items()}
    return PlanView(plan, paths, {step: number for number, step in enumerate(paths)}, resolution.targets, piped_from, inner)


def frame_steps(pipelines: Iterable[ast.Pipeline]) -> list[ast.Step]:
    """The steps of one frame in text order, as they are numbered."""
    return [step for pipeline in pipelines for step in pipeline.steps]


def accessor_key(accessors: Iterable[ast.Accessor]) -> tuple:
    """`.title[0]` -> `("title", 0)`: accessors as plain data."""
    return tuple(a.name if isinstance(a, ast.Field) else a.value for a in accessors)


def reads_args(target: object) -> bool:
    """Whether a reference with this target reads a run argument (`$args.NAME`)."""
    return isinstance(target, str) and target == ARGS
