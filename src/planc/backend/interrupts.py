"""Ctrl-C (SIGINT) and SIGTERM during a run: the run stops, and its record says it was interrupted.

Python's default would raise KeyboardInterrupt wherever the run happens to be (in the middle of a
store write, say), and SIGTERM would end the process on the spot, leaving the run `running` with
its calls in flight unrecorded. While `Interrupts` is in force, either signal instead cancels
the run's task: it stops at its next await, every call in flight records its outcome as unknown
on the way out (the dispatch does), nothing new starts, and `run` raises Interrupted, which the
run's record turns into the status `interrupted`.

A question on the terminal (`--approve`) blocks the task, so a signal then also stops waiting for
the answer (`asking`); the question is not answered no.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Coroutine, Iterator

from planc.backend.values import RunError

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_asking = 0  # questions on the terminal being asked now (the main thread's)


class Interrupted(RunError):
    """The run was stopped by SIGINT or SIGTERM."""


class Interrupts:
    """SIGINT and SIGTERM while a run is recorded (`with Interrupts() as interrupts: interrupts.run(...)`).

    Outside the main thread signals cannot be caught, and they keep Python's default.
    """

    def __init__(self) -> None:
        self.received: int | None = None  # the first signal
        self._task: asyncio.Task | None = None
        self._previous: dict = {}
        self._entered = 0  # `with` it again inside itself changes nothing

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""

    def __enter__(self) -> Interrupts:
        self._entered += 1
        if self._entered == 1 and threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exception) -> None:
        self._entered -= 1
        if self._entered == 0:
            for number, handler in self._previous.items():
                signal.signal(number, handler)
            self._previous = {}

    def _handle(self, number: int, frame) -> None:
        if self.received is None:
            self.received = number
        task = self._task
        if task is not None and not task.done():
            task.cancel()  # takes effect at the task's next await, never inside a store write
            task.get_loop().call_soon_threadsafe(lambda: None)  # wakes the loop if it is waiting
        if _asking:
            raise KeyboardInterrupt  # out of the question's blocking read

    def run(self, coroutine: Coroutine):
        """`coroutine`'s result, run as asyncio.run runs it; Interrupted if a signal came before it ended."""
        async def main():
            self._task = asyncio.current_task()
            if self.received is not None:  # it came before there was a task to cancel
                coroutine.close()
                raise asyncio.CancelledError
            return await coroutine

        try:
            return asyncio.run(main())
        except asyncio.CancelledError:
            if self.received is None:
                raise
            raise Interrupted(f"interrupted by {self.name}") from None
        finally:
            self._task = None


@contextlib.contextmanager
def asking() -> Iterator[None]:
    """While a question waits for its answer on the terminal, a signal raises KeyboardInterrupt in it."""
    global _asking
    _asking += 1
    try:
        yield
    finally:
        _asking -= 1
