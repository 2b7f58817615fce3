"""`ask` at run time: the question put to the person running the plan, and what its answer was.

Its declaration (signature, type, cost and flow rules) is `registry/steps/ask.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.calls.hooks import Unanswered
from planc.backend.models.questions import answer
from planc.backend.run.control_steps import labels_of, value
from planc.backend.state.values import RunError, Scope
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_ask(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    question = run.session.redactor.labelled(value(step, "question", scope), labels_of(step, "question", scope).whole())
    said = await answer(run, step, path, str(question))
    if not isinstance(said, Unanswered):
        return said
    unanswered = value(step, "when_unanswered", scope)
    if unanswered == "default":
        return value(step, "default", scope)
    if unanswered == "skip":
        return None
    raise RunError(f"step {path}: nobody answered `{question}`: {said.reason}", step.tool)
