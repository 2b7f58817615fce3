"""What an MCP server asks of planc during one of a run's calls, answered under planc's own rules.

- Progress: each call carries a progress token; each notification the server sends for it is the event
  `tool_progress` at the call's step path (`progress`, `total`, `message`), which the progress line and
  the traces show like any event. A task's status messages come the same way.
- Elicitation is a question, as `ask` puts it (`questions.py`): to the run's interlocutor (`--answers`,
  then the terminal), one at a time, what came of it recorded at the call's step path. A form's answer
  is an object the server's schema allows (a lone value fills a schema of one field); a URL's answer
  says whether to go on (`true`, `"accept"`). Nobody to answer, or an answer the schema does not allow,
  declines.
- Sampling is an inference of the `[models]` role the server's `sampling` names, made and recorded as an
  agent's are (`model_calls.py`), at most `samples_per_call` for one call (the cost pass counts them);
  with no role named it is refused.

A replay answers the call from its record, so the server, its questions and its inferences are never
asked.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from planc.backend.calls.hooks import Unanswered
from planc.backend.calls.mcp_runtime import InFlight, Progress
from planc.backend.calls.run_view import RunView
from planc.backend.models.client import ModelError
from planc.backend.models.questions import answer
from planc.backend.state.values import RunError

if TYPE_CHECKING:
    from mcp.types import CreateMessageResult, ElicitResult, ErrorData

    from planc.registry.settings.declarations import McpServer

ACCEPT = (True, "accept", "yes")  # answers that accept a URL elicitation


class ServerRequests:
    """The answers of one run to its MCP servers' requests."""

    def __init__(self, run: RunView) -> None:
        self.run = run

    def progress(self, flight: InFlight) -> Progress:
        """The progress callback of the call `flight`: each notification an event at the call's step path."""
        call = flight.call

        async def report(progress: float | None, total: float | None, message: str | None) -> None:
            flight.context.run(
                self.run.emit,
                "tool_progress",
                step=call.step,
                tool=call.tool.name,
                progress=progress,
                total=total,
                message=message,
            )

        return report

    async def elicit(self, server: McpServer, flight: InFlight, params: Any) -> ElicitResult:
        """The ElicitResult of the server's request `params`, asked as `ask` asks, at the call's step path."""
        from mcp import types

        url = getattr(params, "url", None)
        text = params.message + (f" (open {url})" if url else "")
        schema = getattr(params, "requested_schema", None)
        said = await answer(self.run, flight.step, flight.call.step, text, schema=schema)
        if isinstance(said, Unanswered):
            return types.ElicitResult(action="decline")
        if url:
            return types.ElicitResult(action="accept" if said in ACCEPT else "decline")
        content = form_content(said, schema or {"type": "object"})
        return (
            types.ElicitResult(action="accept", content=content) if content is not None else types.ElicitResult(action="decline")
        )

    async def sample(self, server: McpServer, flight: InFlight, params: Any) -> CreateMessageResult | ErrorData:
        """The CreateMessageResult of the server's request `params`, from the server's `sampling` role."""
        from mcp import types

        def refused(why: str) -> ErrorData:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"planc refuses to sample a model: {why}")

        if server.sampling is None:
            return refused(
                f'planc.toml names no model role for MCP server `{server.name}` (add `sampling = "ROLE"` to [mcp.{server.name}])'
            )
        if flight.samples >= server.samples_per_call:
            return refused(f"one call may ask for {server.samples_per_call} (`samples_per_call` of [mcp.{server.name}])")
        messages = chat_messages(params)
        if isinstance(messages, str):
            return refused(messages)
        flight.samples += 1
        call = flight.call
        try:
            model = self.run.session.model(server.sampling, flight.step, call.step)
            reply = await model.chat(messages, extra={"max_tokens": params.max_tokens})
        except (ModelError, RunError) as error:
            return refused(str(error))
        named = model.config.model if model.config is not None else server.sampling
        return types.CreateMessageResult(
            role="assistant", model=named, stop_reason="endTurn", content=types.TextContent(type="text", text=reply.content or "")
        )


def form_content(said: object, schema: Mapping) -> dict | None:
    """The content an answer gives a form of `schema`, or None when the schema does not allow it.

    >>> schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    >>> form_content("Ada", schema), form_content({"name": "Ada"}, schema), form_content(3, schema)
    ({'name': 'Ada'}, {'name': 'Ada'}, None)
    >>> form_content("42", {"type": "object", "properties": {"age": {"type": "integer"}}})
    {'age': 42}
    """
    from jsonschema.validators import validator_for

    properties = schema.get("properties") or {}
    if not isinstance(said, dict) and len(properties) == 1:
        ((field, wanted),) = properties.items()
        if isinstance(said, str) and wanted.get("type") not in (None, "string"):  # typed on a terminal
            with contextlib.suppress(ValueError):
                said = json.loads(said)
        said = {field: said}
    if not isinstance(said, dict) or next(iter(validator_for(schema)(schema).iter_errors(said)), None) is not None:
        return None
    return said


def chat_messages(params: Any) -> list[dict] | str:
    """The sampling request as a chat's messages (its system prompt first), or why it cannot be one: planc
    sends a model text only."""
    messages = [{"role": "system", "content": params.system_prompt}] if params.system_prompt else []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if any(getattr(block, "type", None) != "text" for block in blocks):
            return "the request holds content other than text"
        messages.append({"role": message.role, "content": "\n".join(block.text for block in blocks)})
    return messages
