"""The built-in steps: reserved names the interpreter intercepts.

`CONTROL_STEPS` is the one table of them: the control steps, each declared once in a module of this
folder named after it (`map.py`: its signature, its type, cost and flow rules, as `STEP`; its
handler is `backend/run/steps/map.py`), and the pure steps (numbers, text, lists, dates) declared
with their implementations in `pure_steps.py`. Their signatures are tools': parameters as JSON
Schema (with `x-planc` marking conditions and blocks), which are required, the pipe parameter, the
one-of groups, and the names a block binds. The resolve and types passes check them exactly as they
check registry tools.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import cast

from planc.registry.steps.control import ITEM_FIELDS, ControlStep
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.registry.tools.tool import Tool
from planc.syntax import ast

__all__ = ["CONTROL_DECLARATIONS", "CONTROL_STEPS", "ITEM_FIELDS", "agent_check", "agent_patterns", "param_binds"]


def control_declarations() -> dict[str, ControlStep]:
    """Every control step this folder declares: each module holding a `STEP`, named after its step,
    in the order of their ranks. A module named otherwise than its step is a mistake, said at
    import."""
    package = __name__.rpartition(".")[0]
    found = []
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        step = getattr(importlib.import_module(f"{package}.{module.name}"), "STEP", None)
        if isinstance(step, ControlStep):
            if step.tool.name != module.name:
                raise ImportError(
                    f"{package}.{module.name} declares the control step "
                    f"`{step.tool.name}`: a control step's module is named after it"
                )
            found.append(step)
    return {step.tool.name: step for step in sorted(found, key=lambda step: step.rank)}


CONTROL_DECLARATIONS = control_declarations()
CONTROL_STEPS: dict[str, Tool] = {
    **{name: step.tool for name, step in CONTROL_DECLARATIONS.items()},
    **{name: pure.tool for name, pure in PURE_STEPS.items()},
}


def param_binds(tool: Tool | None, param: str) -> tuple[str, ...]:
    """The names `tool`'s parameter `param` binds inside its value (a block's, a condition's)."""
    return tool.binds.get(param, ()) if tool is not None else ()


def agent_patterns(step: ast.Step) -> list[str] | None:
    """The tool names and `*` patterns an `agent` step's `tools` writes; `["*"]` when it has no `tools`; None
    when they are not literal strings (known only when it runs).

    >>> from planc.syntax.parser import parse
    >>> agent_patterns(parse('agent(prompt: "x", output_schema: {}, tools: ["a", "b*"])').plan.pipelines[0].steps[0])
    ['a', 'b*']
    """
    arg = step.arg("tools")
    if arg is None:
        return ["*"]
    value = arg.value
    if not isinstance(value, ast.ListExpr):
        return None
    texts = [item.text if isinstance(item, ast.String) else None for item in value.items]
    return None if None in texts else cast(list[str], texts)


def agent_check(step: ast.Step) -> str | None:
    """The tool an `agent` step's `check` names, when it is a literal string."""
    arg = step.arg("check")
    return arg.value.text if arg is not None and type(arg.value) is ast.String else None
