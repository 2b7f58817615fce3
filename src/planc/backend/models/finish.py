"""`--finish solver`: the `solver` model role writes a report from a run's result and the user's query."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from planc.backend.models.client import ModelClient, ModelError

if TYPE_CHECKING:
    from planc.backend.models.model_calls import StepModel

SYSTEM = (
    "You write the report a user asked for, from the result of a plan that was run for them. "
    "Answer the user's query from the result alone, and say so when the result does not hold the answer. "
    "Write plain text, no JSON."
)


def solver_messages(query: str, value: object, status: str = "ok", message: str | None = None) -> list[dict]:
    """The conversation the solver gets: the query and the result as JSON.

    >>> solver_messages("How many?", [1, 2])[1]["content"].splitlines()[0]
    'Query: How many?'
    """
    stopped = f" (the plan stopped with status error: {message or 'no message'})" if status == "error" else ""
    result = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Query: {query}\n\nThe plan's result{stopped}:\n```json\n{result}\n```"},
    ]


async def solver_report(
    client: ModelClient | StepModel, query: str, value: object, status: str = "ok", message: str | None = None
) -> str:
    """The solver's report; a ModelError when the model fails or answers with no text."""
    reply = await client.chat(solver_messages(query, value, status, message))
    if not reply.content or not reply.content.strip():
        raise ModelError(f"{client.endpoint} (the `solver` role) answered with no report text")
    return reply.content.strip()
