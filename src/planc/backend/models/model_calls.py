"""Model inferences as the run store sees them: calls like any tool's, recorded and replayed.

A step's inference (an `agent` round, an `infer` question, the `solver` finish) is a `Call` of
the pseudo-tool `model:<role>` whose input is the conversation and the names of the tools
offered, and whose result is the reply as data. So the recorder commits an intent row before
it and the reply after, replay answers it from the record without any HTTP, and resume asks
the model again only for an inference that never finished (a model call changes nothing, so it
is safe to repeat).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from planc.backend.calls.dispatch import recorded_call
from planc.backend.calls.hooks import Call, Skip
from planc.backend.calls.run_view import Recorder
from planc.backend.models.client import ModelClient, ModelError, Reply
from planc.backend.state.stop import current as current_stop
from planc.backend.state.values import ToolFailed
from planc.registry.settings.declarations import RESULT_BYTES, ModelConfig
from planc.registry.tools.tool import Effects, Tool

if TYPE_CHECKING:
    from planc.backend.calls.spending import Spending
    from planc.syntax import ast

# What asking a model may do: nothing in the world (so it may be asked again), not deterministic.
MODEL_EFFECTS = Effects(read_only=True, deterministic=False, idempotent=True, destructive=False, open_world=True)


def model_tool(role: str) -> Tool:
    return Tool(f"model:{role}", effects=MODEL_EFFECTS)


def is_model(tool: Tool) -> bool:
    """Whether `tool` is a model's (`model_tool`): a tool a registry declares has no `:` in its name."""
    return tool.name.startswith("model:")


class StepModel:
    """The model of `role` as the step at `path` asks it: every `chat` goes through `recorder`, and sends
    `model_started`, then `model_finished` (with the reply's token usage) or `model_failed`, to `emit`.

    `connect` gives the real client; it is only called when an inference is really made, so a
    replay needs neither the endpoint nor its API key. `config`, the role's `[models.*]`, names the
    model in the events.
    """

    def __init__(
        self,
        connect: Callable[[], ModelClient],
        role: str,
        path: str,
        recorder: Recorder | None = None,
        step: ast.Step | None = None,
        limit_bytes: int = RESULT_BYTES,
        emit: Callable[..., None] | None = None,
        config: ModelConfig | None = None,
        spending: Spending | None = None,
    ) -> None:
        self.connect, self.role, self.path, self.recorder, self.step = connect, role, path, recorder, step
        self.limit_bytes = limit_bytes  # `[limits] result_bytes`: a longer reply is refused like a tool's result
        self.emit, self.config = emit, config
        self.spending = spending  # the run's budget (backend.calls.spending.Spending): each inference counted before it
        # What the messages it is sent carry, as labels (asked anew at each inference, as an agent's conversation
        # grows): an inference shown a `secret` value is recorded by its length and hash only.
        self.shown: Callable[[], frozenset] = frozenset
        self.client: ModelClient | None = None  # once connected
        self.made = False  # whether the last inference was made now, rather than answered from the record

    def connected(self) -> ModelClient:
        if self.client is None:
            self.client = self.connect()
        return self.client

    async def aclose(self) -> None:
        """Close the client, if one was made (a client `connect` shares with others is closed by its owner)."""
        if self.client is not None:
            await self.client.aclose()

    @property
    def endpoint(self) -> str:
        return self.connected().endpoint

    async def chat(
        self,
        messages: Sequence[Mapping],
        tools: Sequence[Tool] | None = None,
        response_format: Mapping | None = None,
        extra: Mapping | None = None,
    ) -> Reply:
        current_stop().check(self.path, getattr(self.step, "tool", None))  # no inference after a failure
        most = self.most_usd(messages, tools, response_format, extra)
        if self.spending is not None:
            self.spending.inference(self.role, self.path, getattr(self.step, "tool", None), most)
        self.sent("model_started", **self.named())
        try:
            reply = await self.recorded(messages, tools, response_format, extra)
        except Exception as error:
            self.sent("model_failed", error)
            raise
        usd = self.usd(reply.usage, most)
        if self.spending is not None:  # a reply from the record counts too: the budget is the whole run's
            self.spending.paid(usd)
        # `usd` only for an inference made now: what a run spent is the sum of its events' (`planc runs`).
        self.sent("model_finished", usage=dict(reply.usage), **({"usd": usd} if usd and self.made else {}))
        return reply

    def most_usd(
        self, messages: Sequence[Mapping], tools: Sequence[Tool] | None, response_format: Mapping | None, extra: Mapping | None
    ) -> float:
        """The most the inference of this request may cost: every byte of it a token (no tokenizer makes a
        token of less than one byte), and `max_tokens` out."""
        if self.config is None or not (self.config.input_usd_per_million or self.config.output_usd_per_million):
            return 0.0
        request = [list(messages), [tool.to_data() for tool in tools or ()], response_format, extra]
        return self.config.most_usd(len(json.dumps(request, ensure_ascii=False, default=str).encode()))

    def usd(self, usage: Mapping, most: float) -> float:
        """What an inference cost by the `usage` its reply reports; `most` when it reports none it can be priced
        by (the bound it was allowed to spend), so that a silent server does not make the budget free."""
        if self.config is None or not most:
            return 0.0
        tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (tokens_in, tokens_out)):
            return most if math.isfinite(most) else 0.0
        return self.config.usd(cast(int, tokens_in), cast(int, tokens_out))  # both counts, as just checked

    def sent(self, event: str, error: Exception | None = None, /, **fields: object) -> None:
        if self.emit is not None:
            self.emit(event, error, step=self.path, role=self.role, **fields)

    def named(self) -> dict:
        """What the events say of the model: its name, its provider and where it answers."""
        config = self.config
        return {} if config is None else {"model": config.model, "provider": config.provider, "url": config.base_url}

    async def recorded(
        self, messages: Sequence[Mapping], tools: Sequence[Tool] | None, response_format: Mapping | None, extra: Mapping | None
    ) -> Reply:
        """The reply, from the record (a replay, a resume) or asked for and recorded."""
        self.made = True
        if self.recorder is None:
            return await self.connected().chat(messages, tools=tools, response_format=response_format, extra=extra)
        asked: dict = {"messages": list(messages), "tools": [tool.name for tool in tools or ()]}
        if self.config is not None and self.config.sampling:
            asked["sampling"] = dict(self.config.sampling)
        if response_format is not None:
            asked["response_format"] = dict(response_format)
        if extra:
            asked["extra"] = dict(extra)
        shown = self.shown()
        call = Call(self.path, model_tool(self.role), asked, sources={"messages": shown} if shown else {})

        async def reply() -> dict:
            return (await self.connected().chat(messages, tools=tools, response_format=response_format, extra=extra)).to_data()

        try:
            replayed = self.recorder.replayed(call, self.step)
            if isinstance(replayed, Skip):  # an inference is never approved (Proceed): it is no tool call
                self.made = False
                return Reply.from_data(cast(Mapping, replayed.result))  # recorded as `reply` gives it
            # The reply the run goes on with is the one recorded, as replay will read it back.
            return Reply.from_data(
                await recorded_call(
                    self.recorder,
                    call,
                    reply,
                    what=f"the `{self.role}` model",
                    explain=lambda error: error,
                    limit_bytes=self.limit_bytes,
                )
            )
        except ToolFailed as error:  # a reply refused, or a recorded inference that failed: fail as the model did
            raise ModelError(str(error)) from None
