"""Approvals that wait in the run store: a call a person must approve ends this process's part of the run.

Which calls a person approves is one rule (`needs_approval`), asked on a terminal (`approve.py`) or,
where nobody is there to ask (a service, a run with no terminal), by the waiting gate here: the call
is recorded as `awaiting_approval` with what it asks (it is not made), the run stops, and its record
says `awaiting_approval`. `planc approve` (`planc.approve`) answers it from any process and continues
the run from its record: the approved call is made then, once; a denied one never is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from planc.backend.calls.hooks import Call, Proceed
from planc.backend.state.values import RunError

if TYPE_CHECKING:
    from planc.backend.run.recorders import Recorder as StoreRecorder

EFFECTFUL = "effectful"  # a person approves every effectful call, and every flagged one (`--approve`)
FLAGGED = "flagged"  # a person approves only the calls the policy flags for their labels (checked with approvals)


class AwaitingApproval(RunError):
    """The run waits for a person to approve or deny a call. Once the run has recorded it, `run_id` names the
    run and `calls` holds what each waiting call asks (`RunStore.awaiting`)."""

    def __init__(self, message: str, node: object = None, *, run_id: str | None = None, calls: list | None = None) -> None:
        super().__init__(message, node)
        self.run_id = run_id
        self.calls = list(calls or [])


def needs_approval(call: Call, every_effectful: bool) -> bool:
    """Whether a person must approve `call` before it is made: a call the policy flagged for where its values
    came from, always; with `every_effectful` (`--approve`), also any call of a tool that is not read-only."""
    return call.flagged is not None or (every_effectful and not call.tool.effects.read_only)


def what_it_asks(call: Call) -> str:
    """What a waiting call asks the person, in words (the record keeps it, `planc runs` shows it)."""
    if call.flagged is not None:
        return f"flagged: {call.flagged}"
    return f"`{call.tool.name}` is effectful"


def waiting_gate(recorder: StoreRecorder, which: str) -> Callable[[Call], Awaitable[Proceed]]:
    """The gate of a recorded run nobody is there to ask: a call `which` (EFFECTFUL or FLAGGED) says a person
    approves is recorded as waiting, and the run stops with AwaitingApproval; the rest proceed."""

    async def gate(call: Call) -> Proceed:
        if not needs_approval(call, which == EFFECTFUL):
            return Proceed()
        asks = what_it_asks(call)
        recorder.awaiting(call, asks)
        raise AwaitingApproval(
            f"step {call.step}: `{call.tool.name}` waits for a person's approval ({asks})", run_id=recorder.run_id
        )

    return gate
