"""What a run `planc mcp` makes asks its client, and tells it.

The gate (hooks.py) is `planc run --approve`'s, with the client in the person's place: every
effectful call, and every call the policy refuses only for where its values came from (flagged), is
put to the client as an MCP elicitation, one at a time. A client that cannot be asked (it declared no
elicitation capability) is asked nothing: such a call waits in the run store, and the run with it,
until the client answers it with `approve_run`, as a run with no terminal waits for `planc approve`.
An accepted answer lets an effectful call through; it lets a flagged call through only where
planc.toml says the client's answers come from a person (`[mcp_server] answers_from_person`), since
only a person may declassify a value.

An `ask` step is asked the same way, its answer a string the client fills in; where the client cannot
be asked, or declines, the question is unanswered and the step's `when_unanswered` decides.

Progress: each event `planc run` prints a line for (`backend.progress.line`) goes to the client as a
progress notification, in order, numbered 1, 2, 3.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import pydantic

from planc.backend.calls.approve import call_flags
from planc.backend.calls.hooks import Abort, Call, Proceed, Question, Unanswered
from planc.backend.report.progress import line

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context


class Approval(pydantic.BaseModel):
    """What the client is asked to fill in: whether the call may be made."""

    approve: bool = pydantic.Field(default=False, description="Make this call")


def question(call: Call) -> str:
    """The elicitation's message: the step, the tool, its effects, its input and where the input came from."""
    effects = call.tool.effects.normalised()
    kind = "read-only" if effects.read_only else "effectful"
    flags = call_flags(call)
    lines = [
        f"planc asks before step {call.step} calls `{call.tool.name}` ({kind}" + (f": {', '.join(flags)})" if flags else ")"),
        f"input: {json.dumps(call.shown_input(), ensure_ascii=False, default=str)}",
    ]
    labelled = {name: labels for name, labels in call.sources.items() if labels}
    lines += [f"labels of `{name}`: {', '.join(sorted(labels))}" for name, labels in labelled.items()]
    if call.control:
        lines.append(f"labels of what decides that it runs: {', '.join(sorted(call.control))}")
    if call.flagged is not None:
        lines.append(f"flagged: {call.flagged}")
    return "\n".join(lines)


class Answer(pydantic.BaseModel):
    """What the client is asked to fill in for an `ask` step: the answer."""

    answer: str = pydantic.Field(description="The answer")


class ClientAsks:
    """What a run made for the client of `context` (the SDK's request context) asks it, one question at a time,
    even from the items of a map running at once: the gate's approvals and the `ask` steps' questions.

    `can_ask`: the client declared elicitation; `person`: planc.toml says its answers come from a person. A
    client that cannot be asked has no gate here (`gate` is None): a call it would be asked about waits in the
    run store for `approve_run` instead, as `planc run --approve` without a terminal waits for `planc approve`.
    """

    def __init__(self, context: Context, can_ask: bool, person: bool) -> None:
        self.context, self.can_ask, self.person = context, can_ask, person
        self.lock = asyncio.Lock()
        self.gate = self._gate if can_ask else None

    async def _gate(self, call: Call) -> Proceed | Abort:
        if call.tool.effects.read_only and call.flagged is None:
            return Proceed()
        if call.flagged is not None and not self.person:
            return Abort(
                f"{call.flagged}; the MCP client's answers do not count as a person's "
                "(planc.toml `[mcp_server] answers_from_person`), so nobody can let it through"
            )
        async with self.lock:
            answer = await self.context.elicit(question(call), Approval)
        if answer.action == "accept" and answer.data.approve:
            return Proceed()
        return Abort(f"the MCP client did not approve `{call.tool.name}` ({answer.action})")

    async def interlocutor(self, asked: Question) -> object:
        """The client's answer to an `ask` step, by elicitation; Unanswered where it cannot be asked or declines."""
        if not self.can_ask:
            return Unanswered("the MCP client cannot be asked (it declared no elicitation capability)")
        async with self.lock:
            answer = await self.context.elicit(f"planc asks, at step {asked.step}: {asked.text}", Answer)
        if answer.action == "accept" and answer.data is not None:
            return answer.data.answer
        return Unanswered(f"the MCP client did not answer ({answer.action})")


class ProgressNotes:
    """The events of a run as progress notifications to the client of `context`, sent in order by one task
    (`with` it around the run); the events hook (`sink`) only queues them."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.queue: asyncio.Queue = asyncio.Queue()
        self.sent = 0
        self.task: asyncio.Task | None = None

    def sink(self, event: dict) -> None:
        text = line(event)
        if text is not None:
            self.queue.put_nowait(text)

    async def _send(self) -> None:
        while True:
            text = await self.queue.get()
            if text is None:
                return
            self.sent += 1
            try:
                await self.context.report_progress(self.sent, None, text)
            except Exception:  # noqa: BLE001 - a client gone: the run is told so by its cancellation, not here
                return

    async def __aenter__(self) -> ProgressNotes:
        self.task = asyncio.create_task(self._send())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        self.queue.put_nowait(None)
        assert self.task is not None  # started on entering
        if kind is not None and issubclass(kind, asyncio.CancelledError):  # the client is gone: nobody to tell
            self.task.cancel()
        else:
            await self.task  # every notification out before the answer, a failed run's too
