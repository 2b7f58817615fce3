"""Python tool calls as Ray tasks (`planc run --executor ray`): the one place where such a call is made.

Everything around the call stays where it is, in the driver (this process), in the one dispatch:
the policy decision with the real arguments, the arguments' validation, the gate, the intent row
committed before the task is submitted and the result after it, the events and the `concurrency`
limits. The run chooses which calls come here (`Dispatch.executor_for`); this module only makes them:

- The tools' modules reach the workers through Ray's runtime environment: the folder of planc.toml
  is the job's working directory, uploaded once per connection (its `.gitignore` and `.rayignore`
  honoured, the run store left out), so a user's tools need no installation on the cluster. planc
  itself must be installed there, as Ray is.
- At most once. Ray runs a task again when its worker dies, unless told not to: a tool that is not
  idempotent (nor read-only) runs with no retry, so a worker lost during its call is a call whose
  outcome is unknown (`WorkerLost`), as a killed local run's is; an idempotent one may be run again,
  `RAY_RETRIES` times at most, and so may one that takes the call's idempotency key, which is in the
  task's arguments (`providers._call`), so every attempt gets the same key and the tool knows a call
  it has acted on. What the tool raises is its failure, never retried, as in this process.
- A call past its timeout, or a run interrupted during it, cancels its task; a task that is running
  is stopped with its worker (`force`), since a tool need not ever look for a cancellation.

Ray is imported only here, and only when a run asks for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from planc.backend.calls.providers import ToolExited, UnknownOutcome, exited, not_loaded
from planc.backend.state.values import RunError
from planc.registry.settings.declarations import RAY_RETRIES
from planc.registry.tools.python_tools import import_provider
from planc.registry.tools.tool import Tool

REACH_TIMEOUT_S = 10.0  # a cluster whose address does not answer in this time is not there


class RayUnavailable(Exception):
    """Ray is not installed, or the cluster cannot be reached: no run starts."""


class WorkerLost(UnknownOutcome):
    """The Ray worker (or node) making a call died before its result came."""


def call_in_worker(provider: str, args: Mapping) -> Any:
    """In a Ray worker, whose working directory is the folder of planc.toml: what `provider`'s function returns
    for `args`; raises as the call raises in the driver's own process (`providers._call`)."""
    try:
        function = import_provider(provider)
    except (ImportError, AttributeError) as error:
        raise RunError(not_loaded(provider, error)) from None
    try:
        if inspect.iscoroutinefunction(function):
            return asyncio.run(function(**args))
        return function(**args)
    except (SystemExit, KeyboardInterrupt) as error:
        raise ToolExited(exited(error)) from None


class RayExecutor:
    """A connection to a Ray cluster that Python tool calls are made on; `close` it when the runs are done."""

    def __init__(self, ray: ModuleType, owned: bool) -> None:
        self.ray, self.owned = ray, owned
        self.task = ray.remote(call_in_worker)

    @classmethod
    def connect(cls, address: str | None, folder: Path, store: Path | None = None) -> RayExecutor:
        """Connect to the cluster at `address` (None: $RAY_ADDRESS, else a new local cluster on this machine),
        with `folder` (that of planc.toml) as the job's working directory; RayUnavailable when it cannot.
        A process already connected (a program that called `ray.init` itself) keeps its own connection."""
        try:
            import ray
        except ImportError:
            raise RayUnavailable("the Ray executor needs Ray: install it with `pip install 'planc[ray]'`") from None
        if ray.is_initialized():
            return cls(ray, owned=False)
        if address is not None:
            reachable(address)
        import logging

        try:
            ray.init(
                address=address,
                runtime_env=runtime_env(folder, store),
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                configure_logging=False,
            )
        except Exception as error:  # noqa: BLE001 - whatever Ray says, the run cannot start: say it once
            where = f"at {address}" if address else "of this machine"
            raise RayUnavailable(f"cannot connect to the Ray cluster {where}: {type(error).__name__}: {error}") from None
        return cls(ray, owned=True)

    def close(self) -> None:
        """Disconnect (and stop a local cluster this connection started); a connection it found is left alone."""
        if self.owned:
            self.ray.shutdown()

    async def call(self, tool: Tool, args: Mapping) -> Any:
        """`tool`'s result for `args` (its idempotency key among them when it takes one), made in a Ray task;
        what the tool raised, or WorkerLost."""
        effects = tool.effects
        retries = RAY_RETRIES if effects.idempotent or effects.read_only or tool.takes_key else 0
        ref = self.task.options(max_retries=retries, retry_exceptions=False, name=tool.name).remote(tool.provider, dict(args))
        try:
            return await ref
        except asyncio.CancelledError:  # a timeout, or the run interrupted: the call must not go on without it
            with contextlib.suppress(self.ray.exceptions.RayError):
                self.ray.cancel(ref, force=True)
            raise
        except self.ray.exceptions.RayTaskError as error:  # the tool raised: its own exception
            raise error.cause from None
        except self.ray.exceptions.RayError as error:
            raise WorkerLost(
                f"the Ray worker making the call was lost ({type(error).__name__}); whether the call had its effect is unknown"
            ) from None


def runtime_env(folder: Path, store: Path | None) -> dict:
    """The job's runtime environment: `folder` as its working directory, without the run store's files.

    >>> runtime_env(Path("/p"), Path("/p/.planc/runs.sqlite"))
    {'working_dir': '/p', 'excludes': ['/.planc/runs.sqlite*']}
    """
    excludes = []
    if store is not None and store.resolve().is_relative_to(folder.resolve()):
        excludes.append(f"/{store.resolve().relative_to(folder.resolve()).as_posix()}*")  # and its -wal, -shm
    return {"working_dir": str(folder), "excludes": excludes}


def reachable(address: str) -> None:
    """RayUnavailable when nothing answers at `address` (`host:port` or `ray://host:port`): Ray itself would
    go on trying for minutes. Addresses Ray resolves itself (`auto`, `local`) pass."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as error:
        raise RayUnavailable(f"cannot connect to the Ray cluster at {address}: {error.strerror or error}") from None
