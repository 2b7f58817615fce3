"""An agent's conversation and its check, in the types pass: E212 and the E303s of `check` and `repairs`.

`continue: $review` must refer to an agent step; a continuing step keeps the
conversation's model and system prompt, and its `tools` may only narrow the
tools of the conversation's first step. A `map` whose body continues a
conversation begun outside it runs its items one at a time. The check is
called with the answer's fields, so the output schema must require the
check's required parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from planc.analysis.agent_tools import agent_check_tool, agent_tools, conversation_start, matching_tools
from planc.analysis.literals import NOT_LITERAL, literal_value
from planc.diagnostics import Diagnostic, Span
from planc.diagnostics.build import diagnostic
from planc.registry.loading.registry import Registry
from planc.syntax import ast
from planc.syntax.steps import step_blocks

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution

KEPT = ("model", "system_prompt")  # what a continuing step takes from the conversation's first step


def agent_turns(plan: ast.Plan, resolution: Resolution, registry: Registry | None, source: str) -> list[Diagnostic]:
    """E212 and E303 for the agent steps of `plan`, given the resolve pass's facts.

    >>> from planc.passes.check import check
    >>> result = check('a = agent(prompt: "x", output_schema: {type: "object"})\\n'
    ...                'map(over: [1, 2], concurrency: 2, do: { agent(prompt: "{item}", '
    ...                'output_schema: {type: "object"}, continue: $a) })')
    >>> [d.message for d in result.diagnostics]
    ['this `map` runs 2 items at once, and its body continues the conversation of step 1: its turns would interleave']
    """
    found: list[Diagnostic] = []
    reported: set = set()  # the maps already reported
    for step, maps in _agents(plan.pipelines, ()):
        path = resolution.paths.get(step)
        found.extend(_gate(step, path, registry))
        arg = step.arg("continue")
        if arg is None:
            continue
        first = conversation_start(step, resolution.targets)
        if first is None:
            found.append(
                diagnostic(
                    "E212",
                    "not_agent",
                    arg.value.span,
                    step=path,
                    found=_words(arg.value, resolution.targets, source),
                    hints=[
                        "label the agent step whose conversation this continues, "
                        "like `review = agent(...)`, and write `continue: $review`"
                    ],
                )
            )
            continue
        first_path = resolution.paths.get(first)
        for name in KEPT:
            if (kept := step.arg(name)) is not None:
                found.append(
                    diagnostic(
                        "E212",
                        "kept",
                        kept.name.span,
                        step=path,
                        param=name,
                        first=first_path,
                        hints=[f"remove `{name}`, or begin a new conversation"],
                    )
                )
        found.extend(_widened(step, first, first_path, path, registry))
        for outer, body in maps:
            if outer not in reported and first not in set(_steps(body.pipelines)):
                problem = _concurrency(outer)
                if problem is not None:
                    reported.add(outer)
                    found.append(
                        diagnostic(
                            "E212",
                            "concurrency",
                            problem[0],
                            step=resolution.paths.get(outer),
                            concurrency=problem[1],
                            first=first_path,
                            hints=["write `concurrency: 1` for one follow-up per item, in order"],
                        )
                    )
    return found


def _agents(pipelines: Iterable[ast.Pipeline], maps: tuple) -> Iterator[tuple[ast.Step, tuple]]:
    """(agent step, the `map` steps around it, each with its body), in text order."""
    for pipeline in pipelines:
        for step in pipeline.steps:
            if step.tool.text == "agent":
                yield step, maps
            for block, _ in step_blocks(step):
                yield from _agents(block.pipelines, (*maps, (step, block)) if step.tool.text == "map" else maps)


def _steps(pipelines: Iterable[ast.Pipeline]) -> Iterator[ast.Step]:
    for pipeline in pipelines:
        for step in pipeline.steps:
            yield step
            for block, _ in step_blocks(step):
                yield from _steps(block.pipelines)


def _widened(
    step: ast.Step, first: ast.Step, first_path: str | None, path: str | None, registry: Registry | None
) -> Iterator[Diagnostic]:
    """E212 for each of `step`'s `tools` patterns that matches a tool `first` does not offer."""
    arg = step.arg("tools")
    offered = agent_tools(first, registry)
    if arg is None or offered is None or registry is None or not isinstance(arg.value, ast.ListExpr):
        return
    names = {tool.name for tool in offered}
    for item in arg.value.items:
        pattern = item.text if isinstance(item, ast.String) else None
        extra = (
            [tool.name for tool in matching_tools(registry, [pattern]) if tool.name not in names] if pattern is not None else []
        )
        if extra:
            yield diagnostic(
                "E212",
                "widened",
                item.span,
                step=path,
                pattern=pattern,
                tool=extra[0],
                first=first_path,
                hints=[f"step {first_path} offers {_listed(sorted(names))}"],
            )


def _concurrency(step: ast.Step) -> tuple[Span, str] | None:
    """Where a `map` says it runs more than one item at once, and how many; None when it runs one at a time."""
    arg = step.arg("concurrency")
    if arg is None:
        return None
    value = literal_value(arg.value)
    if value == 1 and type(value) is int:
        return None
    return arg.value.span, str(value) if value is not NOT_LITERAL else "several"


def _gate(step: ast.Step, path: str | None, registry: Registry | None) -> Iterator[Diagnostic]:
    """E303 for `repairs` without a `check`, and for a check whose required parameters the answer may lack."""
    check_arg = step.arg("check")
    if check_arg is None:
        if (repairs := step.arg("repairs")) is not None:
            yield diagnostic(
                "E303", "repairs_without_check", repairs.name.span, step=path, hints=['add `check: "TOOL"`, or remove `repairs`']
            )
        return
    check = agent_check_tool(step, registry)
    schema = step.arg("output_schema")
    literal = literal_value(schema.value) if schema is not None else NOT_LITERAL
    if check is None or not isinstance(literal, Mapping):
        return
    required: Any = literal.get("required") if isinstance(literal.get("required"), list) else []
    for param in check.required:
        if param not in required:
            yield diagnostic(
                "E303",
                "check_needs",
                check_arg.value.span,
                step=path,
                tool=check.name,
                param=param,
                hints=[
                    f"add `{param}` to the output schema's `required`: the check is "
                    "called with the answer's fields as its arguments"
                ],
            )


def _words(value: ast.Expr, targets: Mapping, source: str) -> str:
    written = value.span.text(source) if source else "this value"
    target = targets.get(value) if isinstance(value, ast.Ref) else None
    if isinstance(target, ast.Step) and isinstance(value, ast.Ref) and value.accessors:
        return f"`{written}`, a part of a result"
    if isinstance(target, ast.Step):
        return f"`{written}`, the result of `{target.tool.text}`"
    return f"`{written}`"


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names) if names else "no tool"
