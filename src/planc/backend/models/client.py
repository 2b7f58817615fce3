"""Models by role: an OpenAI-compatible chat-completions client over httpx.

`[models.ROLE]` in planc.toml says where a role's model is: `agent` uses its
`model` argument's role (`chat` by default), `infer` the `judge` role, the
`solver` finish the `solver` role; a role without a table falls back to
`[models.default]`. One client talks to one endpoint; every failure (HTTP,
an unreachable server, a body that is not a chat completion) is a
`ModelError` naming the endpoint. Retrying is the agent loop's business.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from planc.registry.loading.registry import Registry
from planc.registry.provenance.redaction import cut
from planc.registry.settings.declarations import DEFAULT_MODEL_ROLE, ModelConfig
from planc.registry.tools.tool import Tool
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    import httpx


BACKOFF_S = 0.5  # the first wait before trying a model again; it doubles each time
MAX_WAIT_S = 30.0  # the longest wait between two attempts, whatever `Retry-After` asks
pause = asyncio.sleep  # how a retry waits (a test may stand in for it)


def retry_after(value: str | None) -> float | None:
    """The seconds a `Retry-After` header asks to wait (a number of seconds, or an HTTP date).

    >>> retry_after("2"), retry_after(None), retry_after("soon")
    (2.0, None, None)
    """
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import datetime

    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


class ModelError(Exception):
    """A model that cannot be configured, reached or understood."""


@attrs.frozen
class ToolCall:
    """A tool call the model asked for. `error` says why its arguments are unusable (then `arguments` is {})."""

    id: str
    name: str
    arguments: dict
    raw_arguments: str = "{}"  # as the model wrote them: sent back with the conversation
    error: str | None = None


@attrs.frozen
class Reply:
    """What the model answered: text, tool calls, or both; `usage` is the response's token counts."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Mapping = attrs.field(factory=dict)

    def to_data(self) -> dict:
        """The reply as JSON data, as the run store records it; `Reply.from_data` reads it back.

        >>> reply = Reply("ok", (ToolCall("c1", "search", {"q": "x"}, '{"q": "x"}'),), {"total_tokens": 3})
        >>> Reply.from_data(reply.to_data()) == reply
        True
        """
        return {
            "content": self.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "raw_arguments": call.raw_arguments,
                    "error": call.error,
                }
                for call in self.tool_calls
            ],
            "usage": dict(self.usage),
        }

    @classmethod
    def from_data(cls, data: Mapping) -> Reply:
        return cls(
            content=data["content"], tool_calls=tuple(ToolCall(**call) for call in data["tool_calls"]), usage=data["usage"]
        )

    def message(self) -> dict:
        """The reply as the assistant message that continues the conversation.

        >>> Reply("done").message()
        {'role': 'assistant', 'content': 'done'}
        """
        message: dict = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.raw_arguments}}
                for call in self.tool_calls
            ]
        return message


def tool_definition(tool: Tool) -> dict:
    """`tool` as an OpenAI function-calling tool definition.

    >>> tool_definition(Tool("search", params={"query": {"type": "string"}}, required=("query",), description="Find"))
    {'type': 'function', 'function': {'name': 'search', 'description': 'Find', 'parameters': {'type': 'object', \
'properties': {'query': {'type': 'string'}}, 'required': ['query']}}}
    """
    function: dict = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = {
        "type": "object",
        "properties": {name: dict(schema) for name, schema in tool.params.items()},
        "required": list(tool.required),
    }
    return {"type": "function", "function": function}


def role_config(registry: Registry, role: str) -> ModelConfig | None:
    """The model of `role`: `[models.<role>]`, else `[models.default]`; None when planc.toml has neither."""
    return registry.models.get(role, registry.models.get(DEFAULT_MODEL_ROLE))


class Chat(Protocol):
    """What answers a chat: a model's client (ModelClient), or a step's model that records it (StepModel)."""

    async def chat(
        self,
        messages: Sequence[Mapping],
        tools: Sequence[Tool] | None = None,
        response_format: Mapping | None = None,
        extra: Mapping | None = None,
    ) -> Reply: ...


class ModelClient:
    """A chat-completions client for one `[models.NAME]`; use it in `async with`, or `aclose()` it."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.endpoint = config.base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Content-Type": "application/json"}
        if config.api_key_env is not None:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise ModelError(
                    f"[models.{config.name}]: the environment variable {config.api_key_env} (its `api_key_env`) is not set"
                )
            self.headers["Authorization"] = f"Bearer {key}"
        self._http: httpx.AsyncClient | None = None

    @classmethod
    def for_role(cls, registry: Registry, role: str) -> ModelClient:
        """The client for `role`: `[models.<role>]`, else `[models.default]`."""
        config = role_config(registry, role)
        if config is None:
            where = registry.source or "planc.toml"
            raise ModelError(
                f"no model for the role `{role}`: {where} has neither [models.{role}] nor [models.{DEFAULT_MODEL_ROLE}]"
            )
        return cls(config)

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def chat(
        self,
        messages: Sequence[Mapping],
        tools: Sequence[Tool] | None = None,
        response_format: Mapping | None = None,
        extra: Mapping | None = None,
    ) -> Reply:
        """One chat completion: `messages` in the OpenAI format; `tools` the model may call; `extra`, fields
        of the request body an endpoint takes beyond OpenAI's (a grammar). The body also carries the
        sampling fields of `[models.NAME]` (`max_tokens`, `temperature`, `top_p`, `seed`, `stop`).

        A transient failure (HTTP 429 or 5xx, a timeout) is tried again, up to
        `retries` more times (`[models.NAME]`), after the wait the server asks for in `Retry-After`, else
        after a wait that doubles each time.
        """
        body: dict = {"model": self.config.model, "messages": list(messages), **self.config.sampling, **(extra or {})}
        if tools:
            body["tools"] = [tool_definition(tool) for tool in tools]
        if response_format is not None:
            body["response_format"] = dict(response_format)
        import httpx  # only when a model is asked: `planc show-run` reads this module for `excerpt`

        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.config.timeout_s)
        for attempt in range(self.config.retries + 1):
            wait = None
            try:
                response = await self._http.post(self.endpoint, json=body, headers=self.headers)
            except httpx.TimeoutException:
                failure = ModelError(
                    f"{self.endpoint} did not answer within {self.config.timeout_s:g} s "
                    f"(`timeout_s` of [models.{self.config.name}])"
                )
            except httpx.HTTPError as error:  # nothing listens there: not a passing fault
                raise ModelError(f"cannot reach {self.endpoint}: {error or type(error).__name__}") from None
            else:
                if response.status_code != 429 and response.status_code < 500:
                    return self._reply(response)
                failure = self._failure(response)
                wait = retry_after(response.headers.get("Retry-After"))
            if attempt == self.config.retries:
                if attempt:
                    raise ModelError(f"{failure} (after {attempt + 1} attempts)")
                raise failure
            await pause(min(wait if wait is not None else BACKOFF_S * 2**attempt, MAX_WAIT_S))
        raise AssertionError("unreachable")

    def _failure(self, response: httpx.Response) -> ModelError:
        try:
            data = read_json(response.content)
        except ValueError:
            data = None
        return ModelError(f"{self.endpoint} answered HTTP {response.status_code}: {_error_message(data, response)}")

    def _reply(self, response: httpx.Response) -> Reply:
        if response.status_code >= 400:
            raise self._failure(response)
        try:
            data = read_json(response.content)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelError(f"{self.endpoint} answered with a body that is not a JSON object: {excerpt(response.text)}")
        try:
            message = data["choices"][0]["message"]
            calls = tuple(_tool_call(call) for call in message.get("tool_calls") or ())
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ModelError(
                f"{self.endpoint} answered with something that is not a chat completion "
                f"(no choices[0].message with tool calls as OpenAI's): {excerpt(response.text)}"
            ) from None
        if content is not None and not isinstance(content, str):
            raise ModelError(f"{self.endpoint} answered with a message whose content is not text: {excerpt(response.text)}")
        usage = data.get("usage")
        return Reply(content=content, tool_calls=calls, usage=usage if isinstance(usage, dict) else {})


def _tool_call(call: Mapping) -> ToolCall:
    """A tool call of a response; arguments that are not a JSON object are an `error`, not an exception."""
    function = call["function"]
    name, raw = function["name"], function.get("arguments") or "{}"
    if not isinstance(name, str):
        raise TypeError(name)
    raw = raw if isinstance(raw, str) else json.dumps(raw)  # some servers send the object itself
    error = None
    try:
        arguments = read_json(raw)
    except ValueError as problem:
        arguments, error = {}, f"the arguments are not JSON ({problem}): {excerpt(raw)}"
    if not isinstance(arguments, dict):
        arguments, error = {}, f"the arguments must be a JSON object: {excerpt(raw)}"
    return ToolCall(id=str(call.get("id", "")), name=name, arguments=arguments, raw_arguments=raw, error=error)


def _error_message(data: object, response: httpx.Response) -> str:
    """The message of an error response: OpenAI's `{"error": {"message": ...}}`, else the body."""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return excerpt(response.text) or response.reason_phrase


def excerpt(text: str, limit: int = 200) -> str:
    """`text` on one line, cut at `limit` characters (a secret's mark counting as one: `cut`).

    >>> excerpt("a\\n  b"), len(excerpt("x" * 300))
    ('a b', 201)
    """
    return cut(" ".join(text.split()), limit)
