"""Common-subexpression elimination over a plan's top-level steps (docs/optimize.md).

A later call is the same as an earlier one when both call the same tool with
the same arguments: written alike, with every reference pointing at the same
step (or at a step already found the same as it) and the same piped input.
Its result may be reused only when the tool is declared read-only and
deterministic and no step between the two changes anything (`step_effects.py`).
Control steps are never reused, and nothing inside a block is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from planc.analysis.step_effects import StepEffects
from planc.registry.tools.tool import Tool
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution


@attrs.frozen
class Reuse:
    """`removed` repeats the call of `kept`; `between` are the top-level steps between them."""

    removed: ast.Step
    kept: ast.Step
    between: tuple[ast.Step, ...]


def common_calls(
    plan: ast.Plan, resolution: Resolution, effects: Mapping[ast.Step, StepEffects], if_declared: bool = False
) -> list[Reuse]:
    """The repeated calls of `plan` whose result may be reused, in text order.

    With `if_declared`, those it would have if every undeclared tool were declared
    read-only and deterministic.

    >>> from planc.passes.check import check
    >>> from planc.analysis.step_effects import step_effects
    >>> result = check('a(x: 1)\\nb(y: $1)\\na(x: 1)\\nb(y: $3)')
    >>> steps = [step for pipeline in result.plan.pipelines for step in pipeline.steps]
    >>> effects = {step: step_effects(step, result.resolution.tools, None) for step in steps}
    >>> common_calls(result.plan, result.resolution, effects)
    []
    >>> [(steps.index(r.removed) + 1, steps.index(r.kept) + 1) for r in common_calls(result.plan, result.resolution, effects, True)]
    [(3, 1), (4, 2)]
    """
    reuses: list[Reuse] = []
    same_as: dict[ast.Step, ast.Step] = {}  # a removed step -> the step whose result it reuses
    seen: dict = {}  # the shape of a call -> the first step that made it since the last change
    steps: list[ast.Step] = []  # the top-level steps so far
    position: dict[ast.Step, int] = {}
    for pipeline in plan.pipelines:
        before = None
        for step in pipeline.steps:
            tool = resolution.tools.get(step)
            if _reusable(tool, if_declared):
                shape = _call_shape(step, tool, before, resolution.targets, same_as)
                kept = seen.setdefault(shape, step)
                if kept is not step:
                    same_as[step] = kept
                    reuses.append(Reuse(step, kept, tuple(steps[position[kept] + 1 :])))
            if effects[step].changing(if_declared):
                seen.clear()
            position[step] = len(steps)
            steps.append(step)
            before = step
    return reuses


def _reusable(tool: Tool | None, if_declared: bool) -> bool:
    """A call of a registry tool (not a control step, not a plan) whose result depends on its arguments alone."""
    if tool is None:  # no registry declares it
        return if_declared
    if tool.kind in ("pure", "control", "plan"):
        return False
    effects = tool.effects
    return (effects.read_only and effects.deterministic) or (if_declared and not effects.declared)


def _call_shape(step: ast.Step, tool: Tool | None, before: ast.Step | None, targets: Mapping, same_as: Mapping) -> tuple:
    """What identifies the call: the tool, and each argument's value with references by the step they read."""
    args = {arg.name.text: _shape(arg.value, targets, same_as) for arg in step.args}
    if before is not None:
        args[tool.pipe if tool is not None and tool.pipe else "|>"] = ("ref", same_as.get(before, before), ())
    return (step.tool.text, tuple(sorted(args.items(), key=lambda item: item[0])))


def _shape(node: Any, targets: Mapping, same_as: Mapping) -> object:
    """`node` as hashable data without spans; a reference is the step it reads (or `args`) and its accessors.

    One call per node, loops inside (no generator frames), so the deepest plan the parser accepts
    stays far from the recursion limit.
    """
    kind = type(node)
    if kind is ast.Name:
        return node.text
    if kind is ast.Literal:
        return ("literal", type(node.value).__name__, node.value)
    if not attrs.has(kind):
        return node
    shape: list = [kind.__name__]
    if kind is ast.Ref:
        target = targets.get(node)
        shape.append(same_as.get(target, target))
    for field in attrs.fields(kind):
        if field.name == "span" or (kind is ast.Ref and field.name == "name"):
            continue
        value = getattr(node, field.name)
        if type(value) is tuple:
            items = []
            for child in value:
                items.append(_shape(child, targets, same_as))
            shape.append(tuple(items))
        else:
            shape.append(_shape(value, targets, same_as))
    return tuple(shape)
