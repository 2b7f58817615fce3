"""MCP servers at run time: started once per run, checked against the lock.

`McpRuntime.open` starts every server the run may call over stdio with the official `mcp` SDK
(the servers of the tools the checked plan calls; every locked server when the plan has an
`agent` step, whose tools are chosen at run time), in the planc.toml's folder, with its `env`
as `planc registry sync` does. Before the first step it lists each server's live tools and
compares them with `planc.lock.json` (the same `tool_hash`): a locked tool that is missing or
has changed (description, input schema, output schema or annotations) is a "rug pull", refused
with a RunError naming the server, the tool and what changed, and nothing runs.

`call` sends `tools/call`, with the call's idempotency key in `_meta` (under `MCP_META_KEY`), and the
dispatch bounds it by the server's `timeout_s`. The result is the `structuredContent` when the server
gives one, else the text content, JSON-decoded when it parses as JSON. An `isError` result raises `McpToolError` with the
server's message, which the interpreter turns into a failed step (or gives back to an agent).
`aclose` stops every server; the interpreter calls it in `run_plan`'s `finally`, so servers are
shut down on success, errors and cancellation alike. `open` and `aclose` must run in the same
task (the SDK's transports are anyio task groups); calls may come from any task of the run.
"""

from __future__ import annotations

import shlex
import tempfile
from contextlib import AsyncExitStack

from planc.backend.values import RunError
from planc.registry.declarations import MCP_START_TIMEOUT_S
from planc.registry.errors import ConfigError
from planc.registry.lock import ENTRY_KEYS, entry, lock_path, read_lock
from planc.registry.tool import MCP_META_KEY
from planc.syntax.json_input import read_json

_CHANGES = {"description": "its description", "input_schema": "its input schema",
            "output_schema": "its output schema", "annotations": "its annotations"}


class McpToolError(Exception):
    """An MCP tool answered with `isError`, or did not answer: the tool failed."""


class McpRuntime:
    """The MCP servers of one run: `open` before the first step, `call`, then `aclose`."""

    def __init__(self, checked, registry) -> None:
        self.registry = registry
        self.servers = needed_servers(checked, registry)
        self.sessions: dict = {}  # server name -> ClientSession
        self._stack: AsyncExitStack | None = None

    async def open(self) -> None:
        """Start the needed servers and refuse on any drift from the lock; nothing to do without them."""
        if not self.servers:
            return
        try:
            import anyio
            from mcp import ClientSession
            from mcp.client.stdio import stdio_client
        except ImportError:
            raise RunError("the plan calls MCP tools, and running them needs the MCP SDK: "
                           "pip install 'planc[mcp]'") from None
        from planc.registry.mcp_sync import (
            StdoutNoise,
            _all_tools,
            _describe,
            _tail,
            server_parameters,
        )

        assert self.registry is not None and self.registry.source is not None
        try:
            lock = read_lock(lock_path(self.registry.source))
        except ConfigError as error:
            raise RunError(str(error)) from None
        folder = self.registry.source.parent
        self._stack = AsyncExitStack()
        stack = await self._stack.__aenter__()
        for name in self.servers:
            server = self.registry.servers[name]
            command = server.command
            parameters = server_parameters(server, folder)
            errlog = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
            noise = StdoutNoise()
            try:  # the transports' task groups stay open in `stack`: no cancel scope may wrap their entry
                read, write = await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=noise))
                with anyio.fail_after(MCP_START_TIMEOUT_S):
                    await session.initialize()
                    live = await _all_tools(session)
            except Exception as error:  # noqa: BLE001 - a server that cannot start stops the run
                raise RunError(f"MCP server `{name}` (`{shlex.join(command)}`) cannot be used: "
                               f"{_describe(error, command[0], MCP_START_TIMEOUT_S)}{noise.said()}{_tail(errlog)}") from None
            drift(name, lock["servers"].get(name, {}).get("tools", {}), live)
            self.sessions[name] = session

    async def call(self, server: str, tool: str, arguments: dict, key: str | None = None):
        """The result of the MCP tool `tool` of `server`, sent the call's idempotency `key` in `_meta`;
        McpToolError if it fails. The dispatch bounds it by the server's `timeout_s`."""
        session = self.sessions.get(server)
        if session is None:
            raise RunError(f"MCP server `{server}` was not started for this run")
        meta = {MCP_META_KEY: key} if key is not None else None
        result = await session.call_tool(tool, arguments, meta=meta)
        if result.is_error:
            raise McpToolError(_text(result.content) or "the server reported an error and gave no message")
        if result.structured_content is not None:
            return result.structured_content
        return _value(result.content)

    async def aclose(self) -> None:
        """Stop every started server. A server that fails while stopping does not hide the run's outcome."""
        stack, self._stack, self.sessions = self._stack, None, {}
        if stack is not None:
            try:
                await stack.aclose()
            except Exception:  # noqa: BLE001, S110 - the run is over; its result or error stands
                pass


def needed_servers(checked, registry) -> list[str]:
    """The servers whose tools the plan, or a declared plan it calls, calls; every locked server when any
    of them has an `agent` step (its tools are chosen when it runs)."""
    if registry is None:
        return []
    plans = [checked, *(checked.context.plans.values() if checked.context is not None else ())]
    tools = [tool for plan in plans if plan.resolution is not None for tool in plan.resolution.tools.values()]
    if any(tool.name == "agent" and tool.provider == "builtin" for tool in tools):
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
            raise RunError(f"MCP server `{server}` no longer has the tool `{name}` that planc.lock.json approved; "
                           f"nothing was run. Review the server, then `planc registry sync`")
        now = entry(name, tool.get("description"), tool.get("inputSchema") or {"type": "object"},
                    tool.get("outputSchema"), tool.get("annotations"))
        if now["hash"] != approved["hash"]:
            changed = [_CHANGES[key] for key in ENTRY_KEYS if now.get(key) != approved.get(key)] or ["its definition"]
            raise RunError(f"MCP server `{server}` changed the tool `{name}` since planc.lock.json approved it "
                           f"({', '.join(changed)} changed): refused as a possible rug pull, and nothing was run. "
                           f"Review the server, then `planc registry sync`")


def _text(content) -> str:
    return "\n".join(item.text for item in content if getattr(item, "type", None) == "text").strip()


def _value(content):
    """The text content of a result, JSON-decoded when it is JSON; other content as its JSON form."""
    values = []
    for item in content:
        if getattr(item, "type", None) == "text":
            try:
                values.append(read_json(item.text))
            except ValueError:
                values.append(item.text)
        else:
            values.append(item.model_dump(mode="json", by_alias=True, exclude_none=True))
    if not values:
        return None
    return values[0] if len(values) == 1 else values
