"""Remove top-level steps whose result another step already has, keeping what reads them right.

What read a removed step reads the step it repeats: a reference to it (by
number or label), and the step it piped into, which then names its pipe
parameter (`|> map(...)` becomes `map(over: $1, ...)`) and starts a pipeline.
Numbers are written anew, as the steps after a removed one move up. The plan's
last step gives the plan its result, so it is not removed but becomes
`reshape(value: $N)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from planc.syntax import ast

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution


def remove_steps(plan: ast.Plan, resolution: Resolution, replaced: Mapping[ast.Step, ast.Step]) -> tuple[ast.Plan, list]:
    """`plan` without the steps of `replaced` (step -> the earlier step whose result it has), and the
    steps of `plan` the new plan's top-level steps come from, in order.

    >>> from planc.passes.check import check
    >>> from planc.syntax.printer import print_plan
    >>> result = check('a = s(q: 1)\\ns(q: 1) |> filter(where: true)\\ng(x: $2, y: $a)\\ns(q: 1)')
    >>> steps = [step for pipeline in result.plan.pipelines for step in pipeline.steps]
    >>> new, kept = remove_steps(result.plan, result.resolution, {steps[1]: steps[0], steps[4]: steps[0]})
    >>> print(print_plan(new), end="")
    a = s(q: 1)
    filter(over: $a, where: true)
    g(x: $1, y: $a)
    reshape(value: $a)
    """
    top = [step for pipeline in plan.pipelines for step in pipeline.steps]
    last = top[-1]
    survivors = [step for step in top if step not in replaced or step is last]
    number = {step: str(position) for position, step in enumerate(survivors, start=1)}

    def name_of(step: ast.Step) -> str:
        return step.label.text if step.label else number[step]

    def retarget(ref: ast.Ref) -> ast.Ref:
        target = resolution.targets.get(ref)
        if not isinstance(target, ast.Step) or target not in number and target not in replaced:  # `$args`, or a step in a block
            return ref
        written = ref.name.text
        new = replaced.get(target, target)
        text = number[new] if written.isdigit() else name_of(new) if new is not target else written
        return ref if text == written else attrs.evolve(ref, name=attrs.evolve(ref.name, text=text))

    pipelines = []
    for pipeline in plan.pipelines:
        steps: list[ast.Step] = []
        piped: ast.Step | None = None  # the step a removed step repeats, whose result the next step now names
        for step in pipeline.steps:
            if step in replaced and step is not last:
                if steps:
                    pipelines.append(attrs.evolve(pipeline, steps=tuple(steps)))
                steps, piped = [], replaced[step]
                continue
            if step in replaced:
                new = _step("reshape", "value", _ref(name_of(replaced[step]), step), step, step.label)
            else:
                new = _replace_refs(step, retarget)
                if piped is not None:
                    pipe = resolution.tools[step].pipe
                    new = attrs.evolve(new, args=(_arg(pipe, _ref(name_of(piped), step), step), *new.args))
            steps.append(new)
            piped = None
        if steps:
            pipelines.append(attrs.evolve(pipeline, steps=tuple(steps)))
    return attrs.evolve(plan, pipelines=tuple(pipelines)), survivors


def _replace_refs(node: Any, replace: Callable[[ast.Ref], ast.Expr]) -> Any:
    """`node` with every reference in it (blocks and template holes included) replaced by `replace(ref)`.

    One call per node, loops inside (no generator frames), so the deepest plan the parser accepts
    stays far from the recursion limit.
    """
    kind = type(node)
    if kind is ast.Ref:
        return replace(node)
    if kind is ast.Name or not attrs.has(kind):
        return node
    changed = {}
    for field in attrs.fields(kind):
        if field.name == "span":
            continue
        value = getattr(node, field.name)
        if type(value) is tuple:
            items, different = [], False
            for child in value:
                new = _replace_refs(child, replace)
                items.append(new)
                different = different or new is not child
            if different:
                changed[field.name] = tuple(items)
        else:
            new = _replace_refs(value, replace)
            if new is not value:
                changed[field.name] = new
    return attrs.evolve(node, **changed) if changed else node


def _ref(name: str, at: ast.Step) -> ast.Ref:
    return ast.Ref(ast.Name(name, at.span), (), at.span)


def _arg(name: str, value: ast.Expr, at: ast.Step) -> ast.Arg:
    return ast.Arg(ast.Name(name, at.span), value, at.span)


def _step(tool: str, param: str, value: ast.Expr, at: ast.Step, label: ast.Name | None) -> ast.Step:
    return ast.Step(ast.Name(tool, at.span), (_arg(param, value, at),), label, at.span)
