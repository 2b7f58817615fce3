"""Nothing starts after a failure: once a step or an item of a plan fails or exits, no new step or call starts.

Each plan being run (the plan itself, and each declared plan it calls) has a `Stop`; the
one in force is in a context variable, so the items of a `map` running at the same time
share their plan's. A declared plan's Stop also stops when its caller's does; its own
failure reaches the caller as the failure of the call, which the caller's step turns into
its own (unless an `agent` takes it as a tool's error and goes on).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from planc.backend.state.values import RunError


class Stopped(RunError):
    """A step or call that did not start, because its plan had already failed or exited."""


class Stop:
    """Whether a plan being run has failed or exited, and with what."""

    def __init__(self, parent: Stop | None = None) -> None:
        self.parent = parent
        self.reason: BaseException | None = None  # the first failure or exit

    def set(self, reason: BaseException) -> None:
        if self.reason is None and not isinstance(reason, Stopped):
            self.reason = reason

    @property
    def stopped(self) -> bool:
        return self.reason is not None or (self.parent is not None and self.parent.stopped)

    def check(self, path: str, node: object = None) -> None:
        """Raise Stopped when the plan has failed or exited: what would start at `path` does not."""
        if self.stopped:
            raise Stopped(f"step {path} did not start: the run had already stopped", node)


_CURRENT: ContextVar[Stop] = ContextVar("planc_stop")


def current() -> Stop:
    """The Stop of the plan being run; outside any run (a finish's report), one that never stops."""
    found = _CURRENT.get(None)
    return found if found is not None else Stop()


@contextlib.contextmanager
def plan_stop(nested: bool) -> Iterator[Stop]:
    """A new Stop for a plan being run, in force inside the block (a nested one stops with its caller's)."""
    stop = Stop(current() if nested else None)
    token = _CURRENT.set(stop)
    try:
        yield stop
    finally:
        _CURRENT.reset(token)


def first_failure(errors: list[BaseException]) -> BaseException:
    """Of the errors of steps or items in their order, the first that is not a mere Stopped: the one the
    run reports, as it would running them one after the other."""
    return next((error for error in errors if not isinstance(error, Stopped)), errors[0])


async def settle(tasks: list[asyncio.Task]) -> None:
    """Wait until every one of `tasks` (steps or items of one plan, in their order) has finished, then raise
    the first failure among them, if any. Cancelled from outside, they are cancelled too."""
    if not tasks:
        return
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    errors = [error for task in tasks if not task.cancelled() and (error := task.exception()) is not None]
    if errors:
        raise first_failure(errors)
