"""The parallel schedule of a plan's top-level steps (docs/optimize.md).

A step waits for the steps whose results it reads (a reference or a pipe, in
its arguments or in its blocks' steps). A step that keeps its place (it
changes something or may `exit`, `step_effects.py`) waits for every step
before it, and every step after it waits for it. Everything else may run at
the same time. This is the schedule the cost pass's critical path assumes.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from planc.analysis.reads import reads
from planc.analysis.step_effects import StepEffects
from planc.syntax import ast


@attrs.frozen
class Schedule:
    """When each top-level step may start: once every step it waits for has finished."""

    steps: tuple[ast.Step, ...]  # the top-level steps, in text order
    waits: Mapping[ast.Step, tuple[ast.Step, ...]]  # step -> the earlier steps it waits for

    def waves(self) -> list[list[ast.Step]]:
        """The steps by how many steps must finish, one after the other, before each can start.

        The steps of one wave wait for none of each other: they may run at the same time.
        """
        depth: dict[ast.Step, int] = {}
        waves: list[list[ast.Step]] = []
        for step in self.steps:
            level = depth[step] = max((depth[earlier] + 1 for earlier in self.waits[step]), default=0)
            if level == len(waves):
                waves.append([])
            waves[level].append(step)
        return waves


def schedule(plan: ast.Plan, targets: Mapping, effects: Mapping[ast.Step, StepEffects], if_declared: bool = False) -> Schedule:
    """The schedule of `plan`'s top-level steps, given the resolve pass's `targets` and each step's effects.

    With `if_declared`, as it would be if every undeclared tool were declared read-only.

    >>> from planc.passes.check import check
    >>> from planc.analysis.step_effects import step_effects
    >>> result = check("a = x()\\nb = y()\\nz(p: $a, q: $b)")
    >>> steps = [step for pipeline in result.plan.pipelines for step in pipeline.steps]
    >>> effects = {step: step_effects(step, result.resolution.tools, None) for step in steps}
    >>> [len(wave) for wave in schedule(result.plan, result.resolution.targets, effects, if_declared=True).waves()]
    [2, 1]
    >>> [len(wave) for wave in schedule(result.plan, result.resolution.targets, effects).waves()]
    [1, 1, 1]
    """
    steps = tuple(step for pipeline in plan.pipelines for step in pipeline.steps)
    top = set(steps)
    waits: dict[ast.Step, tuple[ast.Step, ...]] = {}
    last_ordered: ast.Step | None = None
    since: list[ast.Step] = []  # the steps after the last ordered one
    for pipeline in plan.pipelines:
        before = None
        for step in pipeline.steps:
            found = dict.fromkeys(target for target in reads(step, targets) if target in top)
            if before is not None:
                found[before] = None
            ordered = effects[step].ordered(if_declared)
            if ordered:
                found.update(dict.fromkeys(since))
            if last_ordered is not None:
                found[last_ordered] = None
            waits[step] = tuple(found)
            if ordered:
                last_ordered, since = step, []
            else:
                since.append(step)
            before = step
    return Schedule(steps, waits)
