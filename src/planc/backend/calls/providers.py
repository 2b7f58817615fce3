"""Call a tool's implementation: a Python function or an MCP server's tool, within its timeout.

A Python function runs in this process, unless the run's executor takes the call (`planc run
--executor ray`: `ray_executor.py`). Here a synchronous function runs in a thread of its own, so
a run can have as many calls in flight as its `map`s and schedule ask for; the thread is a
daemon, so a tool that never returns cannot keep planc from exiting. Every call is bounded by
the tool's `timeout_s` (or `[limits] timeout_s`): past it the run stops waiting, and whether the
call had its effect is unknown (`CallTimedOut`). A tool that raises SystemExit or
KeyboardInterrupt has failed; it does not end planc.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planc.backend.state.values import RunError
from planc.registry.loading.registry import Registry
from planc.registry.settings.declarations import limits_of
from planc.registry.tools.python_tools import import_provider
from planc.registry.tools.tool import Tool

if TYPE_CHECKING:
    from planc.backend.calls.mcp_runtime import McpRuntime
    from planc.backend.calls.ray_executor import RayExecutor


class UnknownOutcome(Exception):
    """A call whose result never came: whether it had its effect is unknown."""

    outcome = "unknown"  # as the run store records it: resume calls it again only if that is safe


class CallTimedOut(UnknownOutcome):
    """A call gave no result within its timeout."""


class ToolExited(Exception):
    """A tool raised SystemExit or KeyboardInterrupt: a failed call, never the end of planc."""


async def call_provider(
    tool: Tool,
    args: Mapping,
    registry: Registry | None,
    mcp: McpRuntime | None = None,
    key: str | None = None,
    executor: RayExecutor | None = None,
) -> Any:
    """The result of calling `tool` with `args`: sync functions run in a thread, async ones are awaited,
    MCP tools go to the run's servers (`mcp`, a backend.calls.mcp_runtime.McpRuntime); a Python tool's call
    goes to `executor` instead when there is one (a backend.calls.ray_executor.RayExecutor). `key`, the
    call's idempotency key, goes to a Python tool that takes one (in its `idempotency_key` parameter),
    wherever it runs, and to every MCP tool (in `_meta`). Past the timeout the call is cancelled: a
    thread is left to itself, an executor's task is stopped."""
    if tool.timeout_s is not None:
        timeout, source = tool.timeout_s, "its `timeout_s`"
    else:
        timeout, source = limits_of(registry).timeout_s, "`[limits] timeout_s`"
    timer = asyncio.timeout(timeout)  # in this task: a failure reaches the run with no turn of the loop between
    try:
        async with timer:
            return await _call(tool, args, registry, mcp, key, executor, timeout)
    except TimeoutError:
        if not timer.expired():  # the tool's own TimeoutError: its failure, like any other
            raise
        raise CallTimedOut(f"no result within {timeout:g} s ({source}); whether it had its effect is unknown") from None


async def _call(
    tool: Tool,
    args: Mapping,
    registry: Registry | None,
    mcp: McpRuntime | None,
    key: str | None,
    executor: RayExecutor | None,
    timeout: float,
) -> Any:
    if tool.kind == "mcp" and mcp is not None:
        return await mcp.call(tool, dict(args), key)
    if tool.kind in ("sql", "postgresql"):
        from planc.registry.tools import postgres_tools, sql_tools

        query = tool.query
        assert query is not None  # a SQL tool declares its query (registry/loading/config.py refuses one without)
        defaults = {param: schema["default"] for param, schema in tool.params.items() if "default" in schema}
        if tool.kind == "sql":
            path = Path(tool.address)
            return await in_thread(lambda **arguments: sql_tools.run_query(path, query, arguments), {**defaults, **args})
        return await in_thread(
            lambda **arguments: postgres_tools.run_query(tool.provider, query, arguments, timeout), {**defaults, **args}
        )
    if tool.kind == "python":
        if tool.idempotency_key is not None and key is not None:
            args = {**args, tool.idempotency_key: key}
        if executor is not None:  # the key in its arguments: every attempt of the task gets the same
            return await executor.call(tool, args)
        function = _python_function(tool.provider, registry)
        if not inspect.iscoroutinefunction(function):
            return await in_thread(function, args)
        try:
            return await function(**args)
        except (SystemExit, KeyboardInterrupt) as error:
            raise ToolExited(exited(error)) from None
    raise RunError(f"`{tool.name}` is provided by `{tool.provider or 'nothing'}`, which this run cannot call")


async def in_thread(function: Callable[..., object], args: Mapping) -> Any:
    """`function(**args)` in a daemon thread of its own; its result, or what it raised."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(value: object, error: BaseException | None) -> None:
        if not future.done():  # the run may have stopped waiting (a timeout)
            future.set_exception(error) if error is not None else future.set_result(value)

    def work() -> None:
        error: BaseException | None
        try:
            value, error = function(**args), None
        except (SystemExit, KeyboardInterrupt) as raised:
            value, error = None, ToolExited(exited(raised))
        except BaseException as raised:  # noqa: BLE001 - whatever the tool raised is the tool's error
            value, error = None, raised
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the run is over and its loop closed: nobody waits for this result
            pass

    threading.Thread(target=work, name=f"planc tool {getattr(function, '__name__', '')}", daemon=True).start()
    return await future


def exited(error: BaseException) -> str:
    return f"the tool raised {type(error).__name__}({', '.join(map(repr, error.args))})"


def _python_function(provider: str, registry: Registry | None) -> Callable[..., Any]:
    """The function `python:module:function` names, importable from the planc.toml's folder."""
    return _load(provider, registry.folder if registry is not None and registry.source is not None else None)


@functools.lru_cache(maxsize=1024)
def _load(provider: str, folder: Path | None) -> Callable[..., Any]:
    """Looked up once per provider and folder: a step pays for a dictionary lookup, not an import."""
    try:
        return import_provider(provider, folder)
    except (ImportError, AttributeError) as error:
        raise RunError(not_loaded(provider, error)) from None


def not_loaded(provider: str, error: Exception) -> str:
    """What the run says when the function `provider` names cannot be imported, here or in a worker."""
    return f"cannot load the tool `{provider}`: {error}"
