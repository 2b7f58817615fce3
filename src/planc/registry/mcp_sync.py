"""`planc registry sync`: ask each declared MCP server for its tools and write `planc.lock.json`.

Each `[mcp.NAME]` server is started over stdio with the official `mcp` SDK (imported here only,
so planc works without it until a sync is asked for), in the folder of planc.toml, with its
`env` over a minimal inherited environment. planc initialises the session, lists the tools
(every page) and stops the server. Servers run concurrently, each within `timeout` seconds.

planc declares the same client capabilities here as when it runs the tools (`client_session`), since a
server may offer some tools only to clients that can answer its requests: roots (when the server's
table declares some), elicitation and sampling. Each tool is locked under its name on the server, with
the command and roots the server was synced with (`lock.unsynced` compares them at run time); its name
in plans (`lock.plan_names`) is reported when it differs, and two tools that plans would call by one
name fail their server's sync.

A server that cannot be started, fails, or does not answer in time is a `ServerFailure` naming
it and its command; its earlier entry in the lock, if any, is kept (what was approved stays
approved) and the other servers are still synced. Servers no longer declared are dropped.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path

import attrs

from planc.registry.declarations import MCP_START_TIMEOUT_S, McpServer
from planc.registry.errors import ConfigError
from planc.registry.lock import (
    LOCK_FORMAT,
    LOCK_VERSION,
    NameClash,
    entry,
    lock_path,
    plan_names,
    read_lock,
    started_as,
)
from planc.registry.registry import Registry


class SyncError(Exception):
    """A sync that cannot happen at all: no MCP SDK, or a lock that cannot be written."""


@attrs.frozen
class ServerFailure:
    server: str
    command: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"MCP server `{self.server}` (`{shlex.join(self.command)}`): {self.message}"


@attrs.frozen
class SyncResult:
    path: Path  # the lock written
    counts: Mapping[str, int]  # server -> tools locked, for each server that answered
    failures: tuple[ServerFailure, ...]
    kept: tuple[str, ...] = ()  # failed servers whose earlier lock entry was kept
    renamed: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)  # server -> {name on the wire: in plans}
    unrenamed: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)  # server -> `rename` keys it has no tool of


def sync(registry: Registry, timeout: float = MCP_START_TIMEOUT_S) -> SyncResult:
    """List every declared server's tools and write the lock beside `registry.source`."""
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        raise SyncError("`planc registry sync` needs the MCP SDK: pip install 'planc[mcp]'") from None
    assert registry.source is not None, "sync needs a registry loaded from a planc.toml"
    path = lock_path(registry.source)
    previous = _previous(path)
    folder = registry.source.parent
    listed: dict[str, dict | ServerFailure] = {}

    async def one(name: str) -> None:
        listed[name] = await _list_server(registry.servers[name], folder, timeout)

    async def all_servers() -> None:
        async with anyio.create_task_group() as group:
            for name in sorted(registry.servers):
                group.start_soon(one, name)

    anyio.run(all_servers)
    servers, counts, failures, kept, renamed, unrenamed = {}, {}, [], [], {}, {}
    for name in sorted(listed):
        outcome = listed[name]
        if not isinstance(outcome, ServerFailure):
            try:
                names = plan_names(registry.servers[name], outcome)
            except NameClash as clash:
                outcome = ServerFailure(server=name, command=registry.servers[name].command, message=str(clash))
            else:
                renamed[name] = {wire: plain for wire, plain in names.items() if wire != plain}
                unrenamed[name] = tuple(sorted(set(registry.servers[name].rename) - set(names)))
        if isinstance(outcome, ServerFailure):
            failures.append(outcome)
            if name in previous:
                servers[name] = previous[name]
                kept.append(name)
        else:
            servers[name] = {**started_as(registry.servers[name]), "tools": outcome}
            counts[name] = len(outcome)
    try:
        write_lock(path, {"format": LOCK_FORMAT, "version": LOCK_VERSION, "servers": servers})
    except OSError as error:
        raise SyncError(f"{path}: cannot write it: {error.strerror or error}") from None
    return SyncResult(path=path, counts=counts, failures=tuple(failures), kept=tuple(kept), renamed=renamed,
                      unrenamed=unrenamed)


def _previous(path: Path) -> dict:
    """The servers of the lock being replaced; none if there is none or it is broken."""
    try:
        return read_lock(path)["servers"] if path.is_file() else {}
    except ConfigError:
        return {}


def write_lock(path: Path, lock: dict) -> None:
    """Write `lock` deterministically (sorted keys, two-space indent, final newline), atomically."""
    text = json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=".planc.lock.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as an ordinary file: mkstemp's are private
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class StdoutNoise:
    """A session's `message_handler` that keeps what a server wrote on its standard output that is not MCP.

    The SDK logs every such line with a traceback; planc says it once, in the server's error, instead.
    """

    SHOWN = 3

    def __init__(self) -> None:
        _quiet_sdk_parse_errors()
        self.lines: list[str] = []
        self.count = 0

    async def __call__(self, message) -> None:
        if isinstance(message, Exception):
            self.count += 1
            if len(self.lines) < self.SHOWN:
                self.lines.append(_bad_line(message))

    def said(self) -> str:
        if not self.count:
            return ""
        shown = ", ".join(f"`{line}`" for line in self.lines) + (", ..." if self.count > self.SHOWN else "")
        return (f"; it wrote {self.count} line{'s' if self.count > 1 else ''} that {'are' if self.count > 1 else 'is'}"
                f" not MCP on its standard output ({shown}): a server writes only protocol messages there, and its "
                "logs on standard error")


def _bad_line(error: Exception) -> str:
    errors = getattr(error, "errors", None)
    found = errors()[0].get("input") if callable(errors) and errors() else None
    text = found if isinstance(found, str) else str(error)
    return text if len(text) <= 60 else text[:57] + "..."


def _quiet_sdk_parse_errors() -> None:
    """Drop the SDK's log record (with a traceback) for each line of a server's stdout that is not MCP."""
    import logging

    stdio = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(each, _NoParseErrors) for each in stdio.filters):
        stdio.addFilter(_NoParseErrors())


class _NoParseErrors:
    def filter(self, record) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


def client_session(read, write, server: McpServer, noise: StdoutNoise, requests=None):
    """The SDK's session with `server`, declaring planc's client capabilities: roots (only when the server's
    `roots` names some: a server such as the reference filesystem server replaces the folders it was started
    on with its client's roots), elicitation and sampling. `requests` (a backend.models.mcp_requests.ServerRequests)
    answers the server's elicitation and sampling requests during a run's calls; without it (a sync, which calls
    no tool) they are refused."""
    from mcp import ClientSession, types

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=root.path.as_uri(), name=root.path.name or root.written)
                                            for root in server.roots])

    async def elicitation(context, params):
        if requests is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="planc answers no request while it lists tools")
        return await requests.elicit(server, params)

    async def sampling(context, params):
        if requests is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="planc answers no request while it lists tools")
        return await requests.sample(server, params)

    return ClientSession(read, write, message_handler=noise, list_roots_callback=roots if server.roots else None,
                         elicitation_callback=elicitation, sampling_callback=sampling)


def server_parameters(server: McpServer, folder: Path):
    """How the SDK starts `server` over stdio: its command, in the folder of planc.toml, with its `env`."""
    from mcp import StdioServerParameters

    command = server.command
    return StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(server.env) or None,
                                 cwd=str(folder))


async def _list_server(server: McpServer, folder: Path, timeout: float) -> dict | ServerFailure:
    """Tool name -> lock entry for `server`, or what went wrong."""
    import anyio
    from mcp.client.stdio import stdio_client

    command = server.command

    def failure(message: str) -> ServerFailure:
        return ServerFailure(server=server.name, command=command, message=message)

    parameters = server_parameters(server, folder)
    noise = StdoutNoise()
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:  # the server's stderr
        try:
            with anyio.fail_after(timeout):
                async with stdio_client(parameters, errlog=errlog) as (read, write):
                    async with client_session(read, write, server, noise) as session:
                        await session.initialize()
                        tools = await _all_tools(session)
        except Exception as error:  # noqa: BLE001 - any failure of a server is reported, not raised
            return failure(_describe(error, command[0], timeout) + noise.said() + _tail(errlog))
    return {tool["name"]: entry(tool["name"], tool.get("description"), tool.get("inputSchema") or {"type": "object"},
                                tool.get("outputSchema"), tool.get("annotations"))
            for tool in sorted(tools, key=lambda tool: tool["name"])}


async def _all_tools(session) -> list[dict]:
    """Every tool the server lists, following pagination, as wire-format JSON (camelCase keys)."""
    tools, result = [], await session.list_tools()
    while True:
        tools += [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]
        cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
        if not cursor:
            return tools
        from mcp.types import PaginatedRequestParams

        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))


def _describe(error: BaseException, program: str, timeout: float) -> str:
    """One line for an exception, looking inside exception groups (anyio task groups raise them)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, FileNotFoundError):
        return f"cannot start it: `{program}` not found"
    if isinstance(error, PermissionError):
        return f"cannot start it: `{program}` is not executable"
    if isinstance(error, OSError) and error.strerror:
        return f"cannot start it: {error.strerror}"
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _tail(errlog, lines: int = 5) -> str:
    """The last lines the server wrote on its standard error, if any."""
    try:
        errlog.flush()
        errlog.seek(0)
        text = errlog.read().strip()
    except OSError:
        return ""
    if not text:
        return ""
    return "\n  stderr: " + "\n  stderr: ".join(text.splitlines()[-lines:])
