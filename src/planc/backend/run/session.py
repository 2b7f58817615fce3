"""What one run holds open from before its first step to after its last: its recorder, MCP servers,
models, the sink its events go to (`events.py`), the executor its Python tool calls may be made
on, and its redaction step (`planc.registry.provenance.redaction.Redactor`: the recorder's, shared with the
run store's rows), which every event passes through before any sink sees it.

The recorder (`calls/run_view.py`'s `Recorder`; `recorders.py` beside this module makes them) is the
run store's side of a run: it is told of every real tool call and model inference, and a replay
answers them from its record, so a replay starts no MCP server and needs no model endpoint. A
`Session` is the `RunSession` the calls read.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from planc.backend.calls import plan_stack
from planc.backend.calls.mcp_runtime import McpRuntime
from planc.backend.calls.run_view import Recorder
from planc.backend.calls.spending import Spending
from planc.backend.state.values import RunError
from planc.passes.cost.budget import Budget
from planc.registry.loading.registry import Registry
from planc.registry.provenance.redaction import Redactor
from planc.registry.settings.declarations import DEFAULT_MODEL_ROLE
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.calls.ray_executor import RayExecutor
    from planc.backend.models.client import ModelClient
    from planc.backend.models.model_calls import StepModel
    from planc.passes.check import CheckResult


class Session:
    """The recorder, MCP servers, models and events of one run; `open` before the first step, `close` after
    the last.

    `run_id` is the run's: the recorder's, or one of its own for a run that is not recorded. The
    `executor` (a backend.calls.ray_executor.RayExecutor, or None: this process) is connected before the run
    and closed by whoever connected it, as a batch's runs share one."""

    def __init__(
        self,
        checked: CheckResult,
        registry: Registry | None,
        recorder: Recorder | None = None,
        events: Callable[[dict], None] | None = None,
        executor: RayExecutor | None = None,
    ) -> None:
        self.registry, self.recorder, self.events = registry, recorder, events
        self.executor = executor
        self.run_id = recorder.run_id if recorder is not None else uuid.uuid4().hex
        self.redactor = recorder.redactor if recorder is not None else Redactor()
        self.mcp = McpRuntime(checked, registry)
        self.clients: dict[str, ModelClient] = {}  # role -> its client, made on first use
        context = getattr(checked, "context", None)
        self.spending = Spending(context.budget if context is not None else Budget())  # counted before each call
        # A tool's name -> what decided its calls made so far: what its later answers carry, when they
        # may depend on the calls before (`answers_depend`).
        self.called: dict[str, frozenset[str]] = {}

    def emit(self, event: str, error: Exception | None = None, /, **fields: object) -> None:
        """Send one of the run's events (`event` names it) to the events hook, if there is one.

        An event about a step (one with `step`: a step's, a tool call's, a model inference's) carries
        `stack`, the declared plans it is in. An event about an `error` carries its message and kind
        (`error_type`: ToolFailed, ModelError, ...), and the diagnostic code of a refusal that has one (`code`:
        E400 for the policy, E401 for a budget); a sink that fails then (an events file on a full
        disk) does not hide that error. Every secret the run knows is taken out first (`redactor`).
        """
        if self.events is None:
            return
        if "step" in fields:
            fields["stack"] = plan_stack.as_data(plan_stack.current())
        if error is None:
            said = {"event": event, **fields}
        else:
            found = getattr(error, "code", None)  # a RunError's diagnostic code, when it has one
            code = {"code": found} if found else {}
            said = {"event": event, **fields, "error": str(error), "error_type": type(error).__name__, **code}
        if self.redactor.marks:
            said = self.redactor.event(said)
        if error is None:
            self.events(said)
            return
        with contextlib.suppress(RunError):
            self.events(said)

    @property
    def calls_tools(self) -> bool:
        return self.recorder is None or self.recorder.calls_tools

    async def open(self) -> None:
        """Start the MCP servers the run may call, checked against the lock; a replay starts none."""
        if self.calls_tools:
            await self.mcp.open()

    async def close(self) -> None:
        """Stop the servers and close the models' connections; never raises."""
        await self.mcp.aclose()
        for client in self.clients.values():
            await client.aclose()

    def model(self, role: str, step: ast.Step, path: str, instead: str | None = None) -> StepModel:
        """The model of `role` as the step at `path` asks it, every inference through the recorder and sent
        as events; the model of the role `instead` when planc.toml declares neither `[models.<role>]` nor
        `[models.default]`."""
        from planc.backend.models.model_calls import StepModel

        models = self.registry.models if self.registry is not None else {}
        if instead is not None and role not in models and DEFAULT_MODEL_ROLE not in models:
            role = instead

        if self.calls_tools:
            self.client(role, step, path)  # a model that is not configured fails here, before the step asks it
        from planc.backend.calls.dispatch import result_bytes
        from planc.backend.models.client import role_config

        return StepModel(
            lambda: self.client(role, step, path),
            role,
            path,
            self.recorder,
            step,
            result_bytes(self.registry),
            emit=self.emit,
            spending=self.spending,
            config=role_config(self.registry, role) if self.registry is not None else None,
        )

    def client(self, role: str, step: ast.Step, path: str) -> ModelClient:
        """The model client of `role` (`[models.<role>]`, else `[models.default]`), made once per run."""
        from planc.backend.models.client import ModelClient, ModelError

        if role not in self.clients:
            if self.registry is None:
                raise RunError(f"step {path}: a model is needed, and no planc.toml declares `[models.*]`", step.tool)
            try:
                self.clients[role] = ModelClient.for_role(self.registry, role)
            except ModelError as error:
                raise RunError(f"step {path}: {error}", step.tool) from None
        return self.clients[role]
