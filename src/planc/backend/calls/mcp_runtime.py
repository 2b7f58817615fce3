"""MCP servers at run time: started (or reached) once per run, checked against the lock.

`McpRuntime.open` connects to every server the run may call as `planc registry sync` does
(registry/mcp/mcp_transport.py: started over stdio in the planc.toml's folder, or reached at its URL
with its headers or OAuth login): the servers of the tools the checked plan calls, or every locked
server when the plan has an `agent` step, whose tools are chosen at run time. A server that
planc.toml now starts or reaches otherwise, or offers other roots, than it was synced with is refused
before any server starts (`lock.unsynced`). Before the first step it lists each server's live tools
and compares them with `planc.lock.json` (the same `tool_hash`): a locked tool that is missing or has
changed (description, input schema, output schema or annotations) is a "rug pull", refused with a
RunError naming the server, the tool and what changed, and nothing runs.

`call` sends `tools/call` under the tool's name on the server (the lock's; plans may call it by another,
`lock.plan_names`), with the call's idempotency key in `_meta` (under `MCP_META_KEY`) and a progress
token, and the dispatch bounds it by the server's `timeout_s`. A tool the server runs only as a task
(`execution.taskSupport` "required") is called as one: planc polls it until it ends, then takes its
result. The result is the `structuredContent` when the server gives one, else the content
(`plain_content`). An `isError` result raises `McpToolError` with the server's message, which the
interpreter turns into a failed step (or gives back to an agent); so does a request a server at a URL
refuses (its HTTP status said). What a remote server sends back, result or error, has planc's
credentials for it taken out first (`Link.redact`), so none reaches a record.

During a call the server may ask planc for its roots, to elicit an answer, or to sample a model, and
may report progress; `requests` (backend.models.mcp_requests.ServerRequests, set by the run) answers and
reports for the call in flight. A server with two calls in flight at once cannot say which one asks:
its elicitation and sampling requests are refused then.
`aclose` stops every server; the interpreter calls it in `run_plan`'s `finally`, so servers are
shut down on success, errors and cancellation alike. `open` and `aclose` must run in the same
task (the SDK's transports are anyio task groups); calls may come from any task of the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import tempfile
from collections.abc import Iterable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs

from planc.backend.state.values import RunError
from planc.registry.mcp.lock import ENTRY_KEYS, entry, lock_path, plan_names, read_lock, unsynced
from planc.registry.settings.declarations import MCP_START_TIMEOUT_S
from planc.registry.settings.errors import ConfigError
from planc.registry.tools.tool import MCP_META_KEY, Tool
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.dispatcher import CallOptions
    from mcp.types import CallToolResult, RequestParamsMeta

    from planc.backend.calls.hooks import Call
    from planc.backend.models.mcp_requests import ServerRequests
    from planc.passes.check import CheckResult
    from planc.registry.loading.registry import Registry
    from planc.registry.settings.declarations import McpServer
    from planc.syntax import ast


# The dispatch's call being made in this task, as (hooks.Call, ast.Step): what a server's request during it
# is answered for.
class Progress(Protocol):
    """A call's progress callback: a notification's progress, total and message (None where one had none)."""

    async def __call__(
        self,
        progress: float | None,
        total: float | None,
        message: str | None,
    ) -> None: ...


calling: contextvars.ContextVar[tuple[Call, ast.Step] | None] = contextvars.ContextVar("planc_mcp_calling", default=None)

TASK_TTL_MS = 3_600_000  # how long a server keeps a task's result for planc; the call's timeout ends it first
POLL_S = 1.0  # how often a task's status is asked for when the server suggests no interval


@attrs.define
class InFlight:
    """A call of a server's tool being made: the dispatch's call and step, the context it runs in (its stop
    and declared plans, for what answers the server's requests), and the inferences it asked for."""

    call: Call
    step: ast.Step
    context: contextvars.Context
    samples: int = 0


_CHANGES = {
    "description": "its description",
    "input_schema": "its input schema",
    "output_schema": "its output schema",
    "annotations": "its annotations",
}


class McpToolError(Exception):
    """An MCP tool answered with `isError`, or did not answer: the tool failed."""


class McpRuntime:
    """The MCP servers of one run: `open` before the first step, `call`, then `aclose`."""

    def __init__(self, checked: CheckResult, registry: Registry | None) -> None:
        self.registry = registry
        self.servers = needed_servers(checked, registry)
        self.sessions: dict = {}  # server name -> ClientSession
        self.links: dict = {}  # server name -> registry.mcp_transport.Link: its secrets, what it refused
        self.wire: dict[str, dict[str, str]] = {}  # server -> the tool's name in plans -> its name on the server
        self.tasks: dict[str, set[str]] = {}  # server -> its tools (names on the server) that run only as tasks
        self.in_flight: dict[str, list[InFlight | None]] = {}  # server -> its calls being made (None: not a plan's)
        self.requests: ServerRequests | None = None  # set by the run
        self._stack: AsyncExitStack | None = None

    async def open(self) -> None:
        """Start or reach the needed servers and refuse on any drift from the lock; nothing to do without them."""
        if not self.servers:
            return
        try:
            import anyio
            import mcp  # noqa: F401
        except ImportError:
            raise RunError("the plan calls MCP tools, and running them needs the MCP SDK: pip install 'planc[mcp]'") from None
        from planc.registry.mcp.mcp_transport import Link, all_tools, client_session, connected

        assert self.registry is not None and self.registry.source is not None
        try:
            lock = read_lock(lock_path(self.registry.source))
        except ConfigError as error:
            raise RunError(str(error)) from None
        for name in self.servers:  # before any server starts: what a server was synced with is what it gets
            locked = lock["servers"].get(name)
            changed = unsynced(self.registry.servers[name], locked) if locked is not None else None
            if changed is not None:
                raise RunError(f"{changed}: nothing was run. Review the server, then `planc registry sync`")
        folder = self.registry.source.parent
        self._stack = AsyncExitStack()
        stack = await self._stack.__aenter__()
        for name in self.servers:
            server = self.registry.servers[name]
            errlog = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
            link = self.links[name] = Link(server)
            try:  # the transports' task groups stay open in `stack`: no cancel scope may wrap their entry
                read, write = await stack.enter_async_context(connected(server, folder, errlog, link))
                session = await stack.enter_async_context(client_session(read, write, server, link.noise, self))
                with anyio.fail_after(MCP_START_TIMEOUT_S):
                    await session.initialize()
                    live = await all_tools(session, link)
            except Exception as error:  # noqa: BLE001 - a server that cannot start stops the run
                raise RunError(
                    f"MCP server `{name}` ({server.reached_as}) cannot be used: "
                    f"{link.failure(error, MCP_START_TIMEOUT_S, errlog)}"
                ) from None
            locked = lock["servers"].get(name, {}).get("tools", {})
            drift(name, locked, live)
            self.sessions[name] = session
            self.wire[name] = {plain: wire for wire, plain in plan_names(server, locked).items()}
            self.tasks[name] = {tool["name"] for tool in live if (tool.get("execution") or {}).get("taskSupport") == "required"}

    async def call(self, tool: Tool, arguments: dict, key: str | None = None) -> Any:
        """The result of the MCP tool `tool`, sent the call's idempotency `key` in `_meta` and a progress token;
        McpToolError if it fails. The dispatch bounds it by the server's `timeout_s`."""
        server = tool.server
        session = self.sessions.get(server) if server is not None else None
        if server is None or session is None:
            raise RunError(f"MCP server `{server}` was not started for this run")
        wire = self.wire[server].get(tool.name.removeprefix(f"{server}__"), tool.name)
        meta = {MCP_META_KEY: key} if key is not None else None
        here = calling.get()
        flight = InFlight(here[0], here[1], contextvars.copy_context()) if here is not None else None
        progress = self.requests.progress(flight) if flight is not None and self.requests is not None else None
        calls = self.in_flight.setdefault(server, [])
        calls.append(flight)
        link = self.links[server]
        try:
            if wire in self.tasks[server]:
                result = await _as_task(session, wire, arguments, meta, progress)
            else:
                result = await session.call_tool(wire, arguments, meta=meta, progress_callback=progress)
        except McpToolError as error:
            raise McpToolError(link.redact(str(error))) from None
        except Exception as error:  # over HTTP: the status it refused the call with; no credential it quotes
            if link.refused is not None:
                raise McpToolError(link.failure(error, MCP_START_TIMEOUT_S)) from None
            if link.redact(str(error)) != str(error):
                raise McpToolError(link.redact(str(error))) from None
            raise
        finally:
            calls.remove(flight)
        if result.is_error:
            raise McpToolError(link.redact(_text(result.content)) or "the server reported an error and gave no message")
        if result.structured_content is not None:
            return link.redact_value(result.structured_content)
        return link.redact_value(plain_content(result.content))

    def asking(self, server: str) -> InFlight | str:
        """The call a request of `server` comes from, or why planc cannot answer it."""
        calls = self.in_flight.get(server) or []
        if len(calls) > 1:
            return f"{len(calls)} of its calls are being made at once, and planc cannot tell which one asks"
        if not calls or calls[0] is None or self.requests is None:
            return "no step of a plan is calling it"
        return calls[0]

    async def elicit(self, server: McpServer, params: Any) -> Any:
        """The answer to the elicitation request `params` of `server` (a McpServer), for the call in flight."""
        return await self._answer(server, params, "elicit")

    async def sample(self, server: McpServer, params: Any) -> Any:
        """The reply to the sampling request `params` of `server`, for the call in flight."""
        return await self._answer(server, params, "sample")

    async def _answer(self, server: McpServer, params: Any, kind: str) -> Any:
        from mcp import types

        flight = self.asking(server.name)
        if isinstance(flight, str):
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"planc refuses the request: {flight}")
        answer = getattr(self.requests, kind)(server, flight, params)  # in the call's own context
        return await asyncio.get_running_loop().create_task(answer, context=flight.context)

    async def aclose(self) -> None:
        """Stop every started server. A server that fails while stopping does not hide the run's outcome."""
        stack, self._stack, self.sessions = self._stack, None, {}
        if stack is not None:
            try:
                await stack.aclose()
            except Exception:  # noqa: BLE001, S110 - the run is over; its result or error stands
                pass


def needed_servers(checked: CheckResult, registry: Registry | None) -> list[str]:
    """The servers whose tools the plan, or a declared plan it calls, calls; every locked server when any
    of them has an `agent` step (its tools are chosen when it runs)."""
    if registry is None:
        return []
    plans = [checked, *(checked.context.plans.values() if checked.context is not None else ())]
    tools = [tool for plan in plans if plan.resolution is not None for tool in plan.resolution.tools.values()]
    if any(tool.name == "agent" and tool.kind == "control" for tool in tools):
        tools = list(registry.tools.values())
    servers = {tool.server for tool in tools if tool.server is not None}
    return sorted(server for server in servers if server in registry.servers)


def drift(server: str, locked: dict, live: list[dict]) -> None:
    """Refuse when a locked tool of `server` is missing from the live `tools/list` or differs from the lock."""
    live_by_name = {tool["name"]: tool for tool in live}
    for name in sorted(locked):
        approved = locked[name]
        tool = live_by_name.get(name)
        if tool is None:
            raise RunError(
                f"MCP server `{server}` no longer has the tool `{name}` that planc.lock.json approved; "
                f"nothing was run. Review the server, then `planc registry sync`"
            )
        now = entry(
            name,
            tool.get("description"),
            tool.get("inputSchema") or {"type": "object"},
            tool.get("outputSchema"),
            tool.get("annotations"),
        )
        if now["hash"] != approved["hash"]:
            changed = [_CHANGES[key] for key in ENTRY_KEYS if now.get(key) != approved.get(key)] or ["its definition"]
            raise RunError(
                f"MCP server `{server}` changed the tool `{name}` since planc.lock.json approved it "
                f"({', '.join(changed)} changed): refused as a possible rug pull, and nothing was run. "
                f"Review the server, then `planc registry sync`"
            )


async def _as_task(
    session: ClientSession, wire: str, arguments: dict, meta: dict[str, str] | None, progress: Progress | None
) -> CallToolResult:
    """The result of the tool `wire` called as a task: created, its status polled (each status message reported
    as progress) until it ends, then its result fetched."""
    import anyio
    from mcp import types

    params = types.CallToolRequestParams(
        name=wire,
        arguments=arguments,
        task=types.TaskMetadata(ttl=TASK_TTL_MS),
        _meta=cast("RequestParamsMeta | None", meta),
    ).model_dump(by_alias=True, mode="json", exclude_none=True)
    # The SDK's `send_request` holds a `tools/call` to the shape of a direct result; a task's creation is sent
    # through its dispatcher, as `send_request` itself sends, and read as what it is.
    options: CallOptions = {"on_progress": progress} if progress is not None else {}
    raw = await session._dispatcher.send_raw_request("tools/call", params, options)
    task = types.CreateTaskResult.model_validate(raw).task
    said = None
    while True:
        if progress is not None and task.status_message and task.status_message != said:
            said = task.status_message
            await progress(None, None, f"{task.status}: {said}")
        if task.status != "working":  # ended, or waiting for an answer that tasks/result brings the request for
            break
        await anyio.sleep((task.poll_interval or POLL_S * 1000) / 1000)
        task = await session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task.task_id)), types.GetTaskResult
        )
    if task.status in ("failed", "cancelled"):
        raise McpToolError(f"its task {task.status}" + (f": {task.status_message}" if task.status_message else ""))
    return await session.send_request(
        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task.task_id)), types.CallToolResult
    )


def _text(content: Iterable[Any]) -> str:
    return "\n".join(item.text for item in content if getattr(item, "type", None) == "text").strip()


def plain_content(content: Iterable[Any]) -> Any:
    """A result's content as a plan's value: a text block is its text, JSON-decoded when it is JSON; a text
    block with annotations, and any other block (an image, a resource), is the block itself as JSON (its
    annotations kept). One block is its value; several, the list of their values; none, null."""
    values = []
    for item in content:
        if getattr(item, "type", None) == "text" and getattr(item, "annotations", None) is None:
            try:
                values.append(read_json(item.text))
            except ValueError:
                values.append(item.text)
        else:
            values.append(item.model_dump(mode="json", by_alias=True, exclude_none=True))
    if not values:
        return None
    return values[0] if len(values) == 1 else values
