"""`ask` at run time: the question put to the person running the plan, and what its answer was.

Its declaration (signature, type, cost and flow rules) is `registry/steps/ask.py`.
"""

from __future__ import annotations

from planc.backend.calls.hooks import Unanswered
from planc.backend.models.questions import answer
from planc.backend.run.control_steps import value
from planc.backend.state.values import RunError


async def run_ask(run, step, path, scope, piped, in_loop, shown):
    question = value(step, "question", scope)
    said = await answer(run, step, path, question)
    if not isinstance(said, Unanswered):
        return said
    unanswered = value(step, "when_unanswered", scope)
    if unanswered == "default":
        return value(step, "default", scope)
    if unanswered == "skip":
        return None
    raise RunError(f"step {path}: nobody answered `{question}`: {said.reason}", step.tool)
