"""What a hover says, in Markdown: a tool as the plan language writes its signature, with its
description and effects; a reference as the step it reads, that step's path and the types.

>>> from planc.registry.steps.builtins import CONTROL_STEPS
>>> print(tool_hover(CONTROL_STEPS["reshape"]).splitlines()[1])
reshape(value: any)
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from planc.passes.check import CheckResult
from planc.passes.resolve.resolve import ARGS
from planc.registry.tools.signatures import groups, signature, type_text
from planc.registry.tools.tool import Effects, Tool
from planc.syntax import ast
from planc.syntax.printer import print_step

EFFECT_FLAGS = [field.name for field in attrs.fields(Effects) if field.name != "declared"]
SHOWN_STEP = 80  # characters of the step a reference reads, shown in its hover


def tool_hover(tool: Tool) -> str:
    parts = [_code(signature(tool))]
    if tool.description.strip():
        parts.append(tool.description.strip())
    parts += groups(tool)
    if not tool.builtin:  # a control step's effects are its blocks' and its model's
        parts.append(_effects(tool.effects))
    return "\n\n".join(parts)


def _effects(effects: Effects) -> str:
    flags = [name.replace("_", "-") for name in EFFECT_FLAGS if getattr(effects, name)]
    text = f"effects: {', '.join(flags) or 'none'}"
    return text if effects.declared else f"{text} (not declared: the conservative defaults)"


def reference_hover(ref: ast.Ref, checked: CheckResult) -> str | None:
    """The step `ref` reads, its path and result type, and the type `ref` reads when it reads into
    that result; for `$args.NAME`, the run argument. None when `ref` points at nothing (E204)."""
    resolution, typing = checked.resolution, checked.typing
    target = resolution.targets.get(ref) if resolution else None
    if target is None:
        return None
    written = ref.span.text(checked.source)
    read = _type(typing.of(ref) if typing else None)
    if target == ARGS:
        return f"`{written}`: a run argument, `{read}`"
    assert resolution is not None  # it found the target
    parts = [
        f"`${ref.name.text}` is step {resolution.paths.get(target, '?')}",
        _code(_step_text(target)),
        f"result: `{_type(typing.of(target) if typing else None)}`",
    ]
    if ref.accessors:
        parts.append(f"`{written}`: `{read}`")
    return "\n\n".join(parts)


def _step_text(step: ast.Step) -> str:
    """The step in canonical form, cut to its first line and SHOWN_STEP characters."""
    text = print_step(step)
    first = text.split("\n", 1)[0]
    if first != text or len(first) > SHOWN_STEP:
        return first[: SHOWN_STEP - 1] + "…"
    return first


def _type(schema: Mapping | None) -> str:
    return "unknown" if schema is None else type_text(schema)


def _code(text: str) -> str:
    return f"```planc\n{text}\n```"
