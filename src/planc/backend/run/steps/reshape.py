"""`reshape` at run time: its `value`, with its references and templates filled in.

Its declaration (signature, type, cost and flow rules) is `registry/steps/reshape.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.run.control_steps import value
from planc.backend.state.values import Scope
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_reshape(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    return value(step, "value", scope)
