"""What a run `planc mcp` makes asks its client, and tells it.

The gate (hooks.py) is `planc run --approve`'s, with the client in the person's place: every
effectful call, and every call the policy refuses only for where its values came from (flagged), is
put to the client as an MCP elicitation, one at a time. A client that cannot be asked (it declared no
elicitation capability) gets no such call made: the run stops before it, the refusal recorded. An
accepted answer lets an effectful call through; it lets a flagged call through only where planc.toml
says the client's answers come from a person (`[mcp_server] answers_from_person`), since only a
person may declassify a value.

Progress: each event `planc run` prints a line for (`backend.progress.line`) goes to the client as a
progress notification, in order, numbered 1, 2, 3.
"""

from __future__ import annotations

import asyncio
import json

import pydantic

from planc.backend.calls.approve import call_flags
from planc.backend.calls.hooks import Abort, Call, Proceed
from planc.backend.report.progress import line


class Approval(pydantic.BaseModel):
    """What the client is asked to fill in: whether the call may be made."""

    approve: bool = pydantic.Field(default=False, description="Make this call")


def question(call: Call) -> str:
    """The elicitation's message: the step, the tool, its effects, its input and where the input came from."""
    effects = call.tool.effects.normalised()
    kind = "read-only" if effects.read_only else "effectful"
    flags = call_flags(call)
    lines = [f"planc asks before step {call.step} calls `{call.tool.name}` ({kind}"
             + (f": {', '.join(flags)})" if flags else ")"),
             f"input: {json.dumps(call.shown_input(), ensure_ascii=False, default=str)}"]
    labelled = {name: labels for name, labels in call.sources.items() if labels}
    lines += [f"labels of `{name}`: {', '.join(sorted(labels))}" for name, labels in labelled.items()]
    if call.control:
        lines.append(f"labels of what decides that it runs: {', '.join(sorted(call.control))}")
    if call.flagged is not None:
        lines.append(f"flagged: {call.flagged}")
    return "\n".join(lines)


def elicitation_gate(context, can_ask: bool, person: bool):
    """The gate of a run made for the client of `context` (the SDK's request context); `can_ask`: the client
    declared elicitation; `person`: planc.toml says its answers come from a person."""
    lock = asyncio.Lock()  # one question at a time, even from the items of a map running at once

    async def gate(call: Call):
        if call.tool.effects.read_only and call.flagged is None:
            return Proceed()
        if not can_ask:
            return Abort("the MCP client cannot be asked (it declared no elicitation capability), and this call "
                         "is made only when someone approves it")
        if call.flagged is not None and not person:
            return Abort(f"{call.flagged}; the MCP client's answers do not count as a person's "
                         "(planc.toml `[mcp_server] answers_from_person`), so nobody can let it through")
        async with lock:
            answer = await context.elicit(question(call), Approval)
        if answer.action == "accept" and answer.data.approve:
            return Proceed()
        return Abort(f"the MCP client did not approve `{call.tool.name}` ({answer.action})")

    return gate


class ProgressNotes:
    """The events of a run as progress notifications to the client of `context`, sent in order by one task
    (`with` it around the run); the events hook (`sink`) only queues them."""

    def __init__(self, context) -> None:
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

    async def __aexit__(self, kind, *exc_info) -> None:
        self.queue.put_nowait(None)
        if kind is not None and issubclass(kind, asyncio.CancelledError):  # the client is gone: nobody to tell
            self.task.cancel()
        else:
            await self.task  # every notification out before the answer, a failed run's too
