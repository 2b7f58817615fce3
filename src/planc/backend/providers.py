"""Call a tool's implementation: a Python function or an MCP server's tool; plans come next."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Mapping
from pathlib import Path

from planc.backend.values import RunError
from planc.registry.python_tools import import_provider
from planc.registry.registry import Registry
from planc.registry.tool import Tool


async def call_provider(tool: Tool, args: Mapping, registry: Registry | None, mcp=None):
    """The result of calling `tool` with `args`: sync functions run in a thread, async ones are awaited,
    MCP tools go to the run's servers (`mcp`, a backend.mcp_runtime.McpRuntime)."""
    if tool.provider.startswith("mcp:") and mcp is not None:
        server = tool.provider.split(":", 1)[1]
        return await mcp.call(server, tool.name.removeprefix(f"{server}__"), dict(args))
    if tool.provider.startswith("python:"):
        function = _python_function(tool.provider, registry)
        call = function(**args) if inspect.iscoroutinefunction(function) else asyncio.to_thread(function, **args)
        try:
            return await asyncio.wait_for(call, tool.timeout_s)
        except TimeoutError:
            # A sync function goes on in its thread; the run stops waiting for it.
            raise TimeoutError(f"no result within {tool.timeout_s} s (its `timeout_s`)") from None
    kind = tool.provider.split(":", 1)[0] or "none"
    raise RunError(f"`{tool.name}` is provided by `{tool.provider or 'nothing'}`: running {kind} tools is not built yet")


def _python_function(provider: str, registry: Registry | None):
    """The function `python:module:function` names, importable from the planc.toml's folder."""
    return _load(provider, registry.folder if registry is not None and registry.source is not None else None)


@functools.lru_cache(maxsize=1024)
def _load(provider: str, folder: Path | None):
    """Looked up once per provider and folder: a step pays for a dictionary lookup, not an import."""
    try:
        return import_provider(provider, folder)
    except (ImportError, AttributeError) as error:
        raise RunError(f"cannot load the tool `{provider}`: {error}") from None
