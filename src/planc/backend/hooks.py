"""What a program embedding planc can decide during a run: the hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import attrs

from planc.registry.tool import Tool


@attrs.frozen
class Call:
    """One real tool dispatch, about to happen or done."""

    step: str  # the step path, `3/do.1[4]` inside the fifth item of a map
    tool: Tool
    args: Mapping
    id: str | None = None  # the model's id of the call, for a call an agent's model asked for


@attrs.frozen
class Proceed:
    """Call the tool."""


@attrs.frozen
class Skip:
    """Do not call the tool; use `result` as if it had returned it."""

    result: object = None


@attrs.frozen
class Abort:
    """Stop the run here."""

    reason: str


@attrs.frozen
class Propagate:
    """Let the tool's error fail the run."""


@attrs.frozen
class Replace:
    """Use `result` instead of the error."""

    result: object = None


@attrs.frozen
class Hooks:
    gate: Callable[[Call], Awaitable[Proceed | Skip | Abort]] | None = None
    on_tool_error: Callable[[Call, Exception], Awaitable[Propagate | Replace | Abort]] | None = None
    events: Callable[[dict], None] | None = None  # the run, its steps, tool calls and inferences: events.py
    interlocutor: Callable[[str], Awaitable[str | None]] | None = None  # answers `ask`; None: unanswered
