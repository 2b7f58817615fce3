"""What the calls and the models read of the run that makes them, as typed protocols.

The interpreter's `Run` and its `Session` (in `run/`) are what a dispatch, a question and an MCP
server's request are handed; `calls/` and `models/` sit below `run/` and never import it, so they
name here exactly what they read of it. `Recorder` is what a run tells the run store (the store's
side is `run/recorders.py`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # for the checker only: at run time `calls/` imports neither `models/` nor the passes
    from planc.backend.calls.hooks import Call, Hooks, Proceed, Skip
    from planc.backend.calls.mcp_runtime import McpRuntime
    from planc.backend.calls.ray_executor import RayExecutor
    from planc.backend.calls.spending import Spending
    from planc.backend.models.model_calls import StepModel
    from planc.backend.state.values import Labelled
    from planc.passes.flow.flow import CallFlow
    from planc.registry.loading.registry import Registry
    from planc.registry.provenance.redaction import Redactor
    from planc.syntax import ast


class Recorder(Protocol):
    """What a run tells the run store, and what the store may answer from its record."""

    calls_tools: bool  # false for a replay: every call is answered from the record
    run_id: str  # the run's id in the store: a resumed run keeps its own, and so its calls' idempotency keys
    redactor: Redactor  # what it writes passes through this first; the run's events too

    def replayed(self, call: Call, step: ast.Step | None) -> Skip | Proceed | None:
        """The recorded result of `call` (a Skip), or None to make the call (Proceed: a person approved it, and
        it is made without asking the gate again)."""

    def started(self, call: Call) -> None:
        """`call` is about to be made: its intent is committed first."""

    def finished(self, call: Call, result: object, error: Exception | None) -> None:
        """`call` returned `result`, or failed with `error`."""

    def declined(self, call: Call, message: str) -> None:
        """The gate refused `call` (`message` says so): it is not made, now or by any resume."""

    def abandoned(self, call: Call) -> None:
        """The run stopped waiting for `call` (it was interrupted): whether it had its effect is unknown."""

    def event(self, event: dict) -> None:
        """One of the run's events."""


class RunSession(Protocol):
    """What a call reads of the run's session (`run/session.py`'s `Session`): where calls are made
    and recorded, and what they spend."""

    registry: Registry | None
    recorder: Recorder | None
    executor: RayExecutor | None  # None: this process
    mcp: McpRuntime
    spending: Spending
    run_id: str
    redactor: Redactor  # the recorder's: every text the run writes passes through it first
    called: dict[str, frozenset[str]]  # a tool's name -> what decided its calls so far

    def model(self, role: str, step: ast.Step, path: str, instead: str | None = None) -> StepModel:
        """The model of `role`, as the step at `path` asks it, every inference recorded."""


class RunView(Protocol):
    """What a call, a question and an MCP server's request read of the run (the interpreter's
    `Run`)."""

    hooks: Hooks
    registry: Registry | None
    asking: asyncio.Lock  # one question at a time
    finished: dict[str, object]  # step path -> result, of every step that has finished
    by_schedule: bool  # whether its top-level steps run side by side, as a schedule allows

    @property
    def session(self) -> RunSession:
        """The run's session (read only here: a `Run` holds its own `Session`)."""

    def emit(self, event: str, error: Exception | None = None, /, **fields: object) -> None:
        """Send one of the run's events."""

    async def declared_plan(self, call: Call, step: ast.Step, in_loop: bool) -> Labelled:
        """Run the declared plan `call` calls, inside this run."""

    def flow_of(self, path: str) -> CallFlow | None:
        """The check's flow of the step at run-time path `path`, if it has one."""
