"""`planc.lock.json`: the MCP servers' tools as last synced, and the Tools planc makes of them.

`planc registry sync` (mcp_sync.py) writes the lock; `planc check` reads it, so MCP tools
resolve offline, without starting a server. The format, version 1:

    {"format": "planc.lock", "version": 1,
     "servers": {NAME: {"command": [...] or "url": "...", "roots": [...],
                        "tools": {TOOL: {"description", "input_schema", "output_schema",
                                         "annotations", "hash"}}}}}

`hash` is the sha256 of the tool's canonical JSON (see `tool_hash`); a lock whose hash does not
match its entry was edited by hand and is refused, as is any other malformed lock. `command` (or
`url`, for a server planc reaches rather than starts) and `roots` are how the server was reached and
what it was offered when it was synced (`started_as`); a run refuses a server that planc.toml now
starts, reaches or offers otherwise (`unsynced`) until it is synced again. A lock written before roots
were recorded has none. The lock never holds a server's headers or tokens.

The lock keeps each tool under its name on the server, the name every call sends. In plans, a locked
tool TOOL of a server NAME declared in planc.toml is the Tool `NAME__TOOL`, where TOOL is written as a
plan can write it (`plan_name`: `get-sum` is `get_sum`) unless the server's `rename` names it:

>>> schema = {"type": "object", "properties": {"max_count": {"type": "integer"}}, "required": []}
>>> log = entry("git_log", "Show the log", schema, None, {"readOnlyHint": True})
>>> lock = {"format": "planc.lock", "version": 1, "servers": {"git": {"command": ["g"], "tools": {"git_log": log}}}}
>>> checked = check_lock(lock, Path("planc.lock.json"))
>>> tool = locked_tools(checked, {"git": McpServer("git", ("g",), trust_annotations=True)})["git__git_log"]
>>> tool.provider, list(tool.params), tool.required, tool.returns
('mcp:git', ['max_count'], (), None)
>>> tool.effects.read_only, tool.effects.destructive, tool.effects.open_world, tool.effects.deterministic
(True, False, True, False)
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NoReturn

import attrs

from planc.registry.settings.declarations import McpServer
from planc.registry.settings.errors import ConfigError
from planc.registry.tools.tool import MCP_META_KEY, Effects, Tool
from planc.syntax.json_input import read_json

LOCK_NAME = "planc.lock.json"
LOCK_FORMAT = "planc.lock"
LOCK_VERSION = 1
ENTRY_KEYS = ("description", "input_schema", "output_schema", "annotations")

# MCP's own defaults for a hint the server leaves out (the conservative side), and the Effects
# flag each hint sets. Determinism has no hint: it is never inferred.
HINTS = {
    "readOnlyHint": ("read_only", False),
    "destructiveHint": ("destructive", True),
    "idempotentHint": ("idempotent", False),
    "openWorldHint": ("open_world", True),
}


def lock_path(config: Path) -> Path:
    """Where the lock of the planc.toml `config` is: beside it."""
    return config.with_name(LOCK_NAME)


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_hash(name: str, entry: Mapping) -> str:
    """sha256 over the canonical JSON (sorted keys, no spaces, UTF-8) of the tool's name and entry."""
    import hashlib  # here: loading planc.toml without MCP servers never needs it (OpenSSL is slow to load)

    data = {"name": name, **{key: entry.get(key) for key in ENTRY_KEYS}}
    return "sha256:" + hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def entry(name: str, description: str | None, input_schema: dict, output_schema: dict | None, annotations: dict | None) -> dict:
    """The lock entry of the tool `name`, with its hash."""
    data = {"description": description, "input_schema": input_schema, "output_schema": output_schema, "annotations": annotations}
    return {**data, "hash": tool_hash(name, data)}


class NameClash(ValueError):
    """Two tools of one server that plans would call by the same name."""


def plan_name(wire: str) -> str:
    """How a plan writes the server's tool `wire`: each character a name cannot hold becomes `_`.

    >>> plan_name("get-sum"), plan_name("files.read"), plan_name("2fa"), plan_name("git_status")
    ('get_sum', 'files_read', '_2fa', 'git_status')
    """
    name = re.sub(r"[^A-Za-z0-9_]", "_", wire)
    return name if name and not name[0].isdigit() else "_" + name


def plan_names(server: McpServer, tools: Iterable[str]) -> dict[str, str]:
    """Each of the server's `tools` (names on the wire) -> its name in plans: `rename`'s, else `plan_name`'s.

    >>> plan_names(McpServer("e", ("e",), rename={"a.b": "ab"}), ["get-sum", "a.b"])
    {'a.b': 'ab', 'get-sum': 'get_sum'}
    >>> plan_names(McpServer("e", ("e",)), ["get-sum", "get_sum"])
    Traceback (most recent call last):
    ...
    planc.registry.mcp.lock.NameClash: the tools `get-sum` and `get_sum` of MCP server `e` would both be `e__get_sum` in plans; name one of them with `rename = { "get-sum" = "..." }` in [mcp.e]
    """
    names: dict[str, str] = {}
    taken: dict[str, str] = {}
    for wire in sorted(tools):
        name = server.rename.get(wire) or plan_name(wire)
        if name in taken:
            raise NameClash(
                f"the tools `{taken[name]}` and `{wire}` of MCP server `{server.name}` would both be "
                f"`{server.name}__{name}` in plans; name one of them with "
                f'`rename = {{ "{taken[name]}" = "..." }}` in [mcp.{server.name}]'
            )
        names[wire], taken[name] = name, wire
    return names


def started_as(server: McpServer) -> dict:
    """What the lock records of how `server` was synced: its command (or its URL), and its roots as planc.toml
    writes them. Never its headers: their values are credentials."""
    reached = {"url": server.url} if server.url is not None else {"command": list(server.command)}
    return {**reached, "roots": [root.written for root in server.roots]}


def unsynced(server: McpServer, locked: Mapping) -> str | None:
    """How planc.toml now starts `server`, or what it offers it, unlike when its lock entry `locked` was synced;
    None when alike.

    >>> from planc.registry.settings.declarations import Root
    >>> locked = {"command": ["fs", "data"], "roots": []}
    >>> unsynced(McpServer("fs", ("fs", "data")), locked) is None
    True
    >>> print(unsynced(McpServer("fs", ("fs", "data"), roots=(Root("data", Path("/p/data")),)), locked))
    MCP server `fs` was synced with no roots, and planc.toml now offers it the roots ["data"]
    >>> print(unsynced(McpServer("fs", ("fs", "/")), locked))
    MCP server `fs` was synced as `fs data`, and planc.toml now starts it as `fs /`
    >>> print(unsynced(McpServer("fs", url="https://example.org/mcp"), locked))
    MCP server `fs` was synced as `fs data`, and planc.toml now reaches it at https://example.org/mcp
    """
    now, then = started_as(server), {"roots": locked.get("roots", [])}
    then.update({"url": locked["url"]} if "url" in locked else {"command": locked.get("command", [])})
    if now.get("url") != then.get("url") or now.get("command") != then.get("command"):
        return (
            f"MCP server `{server.name}` was synced {_reached(then, 'as', 'at')}, and planc.toml now "
            f"{_reached(now, 'starts it as', 'reaches it at')}"
        )
    if now["roots"] != then["roots"]:
        return (
            f"MCP server `{server.name}` was synced with {_roots(then['roots'])}, and planc.toml now offers it "
            f"{_roots(now['roots'])}"
        )
    return None


def _reached(how: Mapping, started: str, reached: str) -> str:
    return f"{reached} {how['url']}" if "url" in how else f"{started} `{shlex.join(how['command'])}`"


def _roots(roots: list[str]) -> str:
    return f"the roots {json.dumps(roots)}" if roots else "no roots"


def load_locked_tools(config: Path, servers: Mapping[str, McpServer], text: str | None = None) -> dict[str, Tool]:
    """The Tools of the declared `servers` in the lock beside `config` (or in `text`, the lock's
    text); none if there is no lock."""
    path = lock_path(config)
    if not servers or (text is None and not path.is_file()):
        return {}
    try:
        return locked_tools(read_lock(path, text), servers)
    except NameClash as clash:
        raise ConfigError(config, None, str(clash)) from None


def read_lock(path: Path, text: str | None = None) -> dict:
    """The lock at `path` (whose text is `text`, when given), checked: a ConfigError says what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8") if text is None else text
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(path, None, f"cannot read it: {getattr(error, 'strerror', None) or error}") from None
    try:
        data = read_json(text)
    except json.JSONDecodeError as error:
        raise ConfigError(path, error.lineno, f"not valid JSON: {error.msg}; run `planc registry sync`") from None
    except ValueError as error:
        raise ConfigError(path, None, f"not a lock planc reads: {error}; run `planc registry sync`") from None
    return check_lock(data, path)


def check_lock(data: object, path: Path) -> dict:
    def fail(message: str) -> NoReturn:
        raise ConfigError(path, None, f"{message}; run `planc registry sync` to write it anew")

    if not isinstance(data, dict) or data.get("format") != LOCK_FORMAT:
        fail(f'not a planc lock file (`format` must be "{LOCK_FORMAT}")')
    if data.get("version") != LOCK_VERSION:
        fail(f"lock version {data.get('version')!r} is not one this planc reads (version {LOCK_VERSION})")
    servers = data.get("servers")
    if not isinstance(servers, dict):
        fail("`servers` must be an object")
    for server, locked in servers.items():
        if not isinstance(locked, dict) or not isinstance(locked.get("tools"), dict):
            fail(f"server `{server}` must be an object with `tools`")
        for key, what in (("command", "strings"), ("roots", "folders")):
            value = locked.get(key, [])
            if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
                fail(f"`{key}` of server `{server}` must be a list of {what}")
        if not isinstance(locked.get("url", ""), str):
            fail(f"`url` of server `{server}` must be a string")
        for name, tool in locked["tools"].items():
            where = f"tool `{name}` of server `{server}`"
            if not isinstance(tool, dict):
                fail(f"{where} must be an object")
            for key, kinds in (
                ("description", (str, type(None))),
                ("input_schema", (dict,)),
                ("output_schema", (dict, type(None))),
                ("annotations", (dict, type(None))),
                ("hash", (str,)),
            ):
                if not isinstance(tool.get(key), kinds):
                    fail(f"{where} has no valid `{key}`")
            if tool["hash"] != tool_hash(name, tool):
                fail(f"{where} does not match its hash: the lock was edited")
    return data


def locked_tools(lock: Mapping, servers: Mapping[str, McpServer]) -> dict[str, Tool]:
    """The Tools of the declared `servers`; a server not in the lock has none."""
    tools = {}
    for server in sorted(servers):
        locked = lock["servers"].get(server)
        if locked is None:
            continue
        declared = servers[server]
        for wire, name in plan_names(declared, locked["tools"]).items():
            tool = to_tool(server, name, locked["tools"][wire], declared.trust_annotations)
            tools[tool.name] = attrs.evolve(
                tool,
                timeout_s=declared.timeout_s,
                idempotency_key=MCP_META_KEY if declared.idempotency_keys else None,
                labels=declared.labels,
            )
    return tools


def to_tool(server: str, name: str, locked: Mapping, trust: bool) -> Tool:
    """The Tool `server__name` of a lock entry (`name`: the tool's name in plans)."""
    schema = locked["input_schema"]
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    params = {param: (value if isinstance(value, dict) else {}) for param, value in properties.items()}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return Tool(
        name=f"{server}__{name}",
        params=params,
        required=tuple(param for param in required if param in params),
        returns=locked["output_schema"],
        effects=effects(locked["annotations"], trust),
        description=locked["description"] or "",
        provider=f"mcp:{server}",
    )


def effects(annotations: Mapping | None, trust: bool) -> Effects:
    """Effects from MCP annotations when they are trusted, else the conservative defaults.

    A missing hint takes MCP's default: not read-only, destructive, not idempotent, open-world.
    MCP defines destructiveHint and idempotentHint only for tools that are not read-only, so a
    read-only tool that leaves them out is not destructive and is idempotent.

    >>> effects({"readOnlyHint": False}, trust=True)
    Effects(read_only=False, deterministic=False, idempotent=False, destructive=True, open_world=True)
    >>> effects({"readOnlyHint": True}, trust=True)
    Effects(read_only=True, deterministic=False, idempotent=True, destructive=False, open_world=True)
    >>> effects({"readOnlyHint": True}, trust=False) == Effects()
    True
    """
    if not trust:
        return Effects()
    annotations = annotations or {}
    read_only = annotations.get("readOnlyHint") is True
    flags = {}
    for hint, (flag, default) in HINTS.items():
        if flag in ("destructive", "idempotent") and read_only:
            default = flag == "idempotent"
        value = annotations.get(hint)
        flags[flag] = value if isinstance(value, bool) else default
    return Effects(**flags, declared=True)
