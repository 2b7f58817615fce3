"""`planc registry sync`: ask each declared MCP server for its tools and write `planc.lock.json`.

Each `[mcp.NAME]` server is reached as a run reaches it (mcp_transport.py: started over stdio, or at
its URL with its headers or OAuth login), with the same client capabilities, since a server may offer
some tools only to clients that can answer its requests. planc initialises the session, lists the
tools (every page) and closes it. Servers are synced concurrently, each within `timeout` seconds.
Each tool is locked under its name on the server, with how the server was reached and the roots it
was offered (`lock.started_as`; `lock.unsynced` compares them at run time), never with a header or a
token; its name in plans (`lock.plan_names`) is reported when it differs, and two tools that plans
would call by one name fail their server's sync.

A server that cannot be started or reached, fails, or does not answer in time is a `ServerFailure`
naming it and its command or URL; its earlier entry in the lock, if any, is kept (what was approved
stays approved) and the other servers are still synced. Servers no longer declared are dropped.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from planc.registry.mcp.lock import (
    LOCK_FORMAT,
    LOCK_VERSION,
    NameClash,
    entry,
    lock_path,
    plan_names,
    read_lock,
    started_as,
)
from planc.registry.settings.declarations import MCP_START_TIMEOUT_S, McpServer
from planc.registry.settings.errors import ConfigError

if TYPE_CHECKING:  # `mcp/` sits below `loading/`: a sync reads the registry it is handed
    from planc.registry.loading.registry import Registry


class SyncError(Exception):
    """A sync that cannot happen at all: no MCP SDK, or a lock that cannot be written."""


@attrs.frozen
class ServerFailure:
    server: str
    reached_as: str  # its command line, or its URL (McpServer.reached_as)
    message: str

    def __str__(self) -> str:
        return f"MCP server `{self.server}` ({self.reached_as}): {self.message}"


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
                outcome = ServerFailure(server=name, reached_as=registry.servers[name].reached_as, message=str(clash))
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
    return SyncResult(path=path, counts=counts, failures=tuple(failures), kept=tuple(kept), renamed=renamed, unrenamed=unrenamed)


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


async def _list_server(server: McpServer, folder: Path, timeout: float) -> dict | ServerFailure:
    """Tool name -> lock entry for `server`, or what went wrong."""
    import anyio

    from planc.registry.mcp.mcp_transport import Link, all_tools, client_session, connected

    link = Link(server)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:  # a started server's stderr
        try:
            with anyio.fail_after(timeout):
                async with connected(server, folder, errlog, link) as (read, write):
                    async with client_session(read, write, server, link.noise) as session:
                        await session.initialize()
                        tools = await all_tools(session, link)
        except Exception as error:  # noqa: BLE001 - any failure of a server is reported, not raised
            return ServerFailure(server=server.name, reached_as=server.reached_as, message=link.failure(error, timeout, errlog))
    return {
        tool["name"]: entry(
            tool["name"],
            tool.get("description"),
            tool.get("inputSchema") or {"type": "object"},
            tool.get("outputSchema"),
            tool.get("annotations"),
        )
        for tool in sorted(tools, key=lambda tool: tool["name"])
    }
