"""Ctrl-C (SIGINT) and SIGTERM during a run: the run stops, and its record says it was interrupted.

Python's default would raise KeyboardInterrupt wherever the run happens to be (in the middle of a
store write, say), and SIGTERM would end the process on the spot, leaving the run `running` with
its calls in flight unrecorded. While `Interrupts` is in force, either signal instead cancels
the run's task: it stops at its next await, every call in flight records its outcome as unknown
on the way out (the dispatch does), nothing new starts, and `run` raises Interrupted, which the
run's record turns into the status `interrupted`.

A question on the terminal (`--approve`, `ask`) blocks the task, so a signal then also stops waiting
for the answer; the question is not answered. The answer is read by `TerminalLine`, not `input()`:
`input()` misses a signal that comes just before it starts to read, and then waits for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

from planc.backend.state.values import RunError

T = TypeVar("T")

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_asking = 0  # questions on the terminal being asked now (the main thread's)
_signalled: str | None = None  # the signal that came while `Interrupts` was in force: no question waits now


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
        global _signalled
        self._entered += 1
        if self._entered == 1:
            _signalled = None
        if self._entered == 1 and threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exception: object) -> None:
        global _signalled
        self._entered -= 1
        if self._entered == 0:
            _signalled = None
            for number, handler in self._previous.items():
                signal.signal(number, handler)
            self._previous = {}

    def _handle(self, number: int, frame: FrameType | None) -> None:
        global _signalled
        if self.received is None:
            self.received = number
        _signalled = self.name
        task = self._task
        if task is not None and not task.done():
            task.cancel()  # takes effect at the task's next await, never inside a store write
            task.get_loop().call_soon_threadsafe(lambda: None)  # wakes the loop if it is waiting
        if _asking:
            raise KeyboardInterrupt  # out of the question's blocking read

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """`coroutine`'s result, run as asyncio.run runs it; Interrupted if a signal came before it ended."""
        refuse_inside_a_loop(coroutine)

        async def main() -> T:
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


def refuse_inside_a_loop(coroutine: Coroutine[Any, Any, object]) -> None:
    """A RuntimeError that names the async function of `coroutine` (`run_async`) when this thread runs an event
    loop already, inside which `asyncio.run` cannot start another: the program awaits that function instead.
    The coroutine is closed first, so nothing warns that it was never awaited."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    name = getattr(coroutine, "__name__", "run")  # an async function's coroutine has its name
    coroutine.close()
    raise RuntimeError(
        f"planc.{name.removesuffix('_async')}() starts an event loop of its own, and this thread is "
        f"running one: inside it, `await planc.{name}(...)`, which takes the same arguments"
    )


def cancelled_by() -> str:
    """Why a run's task was cancelled, as its record says it: a signal `Interrupts` caught, or (a run awaited
    inside a program's own event loop, `planc.run_async`) the program cancelled the task awaiting it."""
    return f"interrupted by {_signalled}" if _signalled else "interrupted: the task awaiting the run was cancelled"


@contextlib.contextmanager
def asking() -> Iterator[None]:
    """While a question waits for its answer on the terminal, a signal raises KeyboardInterrupt in it; and
    one that came already raises it at once."""
    global _asking
    _asking += 1
    try:
        if _signalled:
            raise KeyboardInterrupt
        yield
    finally:
        _asking -= 1


class TerminalLine:
    """Standard input read a line at a time, as `input()` reads it (without the newline; EOFError at the
    end), for rich's prompts (`stream=`), but with every signal waking the wait: Python's handler of a
    signal runs between two bytecodes, so one that comes as `input()` starts its read is handled only
    once the read returns, and a question would wait for ever. Here the signal also writes to a pipe the
    wait watches (`signal.set_wakeup_fd`); KeyboardInterrupt (`asking`) ends the wait.
    """

    def readline(self) -> str:
        terminal = sys.stdin.fileno()
        woken, wake = os.pipe()
        os.set_blocking(wake, False)
        previous = signal.set_wakeup_fd(wake) if threading.current_thread() is threading.main_thread() else None
        try:
            with asking():
                line = b""
                while not line.endswith(b"\n"):
                    if terminal in select.select([terminal, woken], [], [])[0]:
                        try:
                            chunk = os.read(terminal, 4096)
                        except OSError:  # the terminal has gone: the end of input
                            chunk = b""
                        if not chunk:
                            break
                        line += chunk
                    else:  # a signal: its handler raises in a moment; read what it wrote meanwhile
                        os.read(woken, 512)
        finally:
            if previous is not None:
                signal.set_wakeup_fd(previous)
            os.close(woken)
            os.close(wake)
        if not line:
            raise EOFError
        return line.decode("utf-8", errors="replace").rstrip("\r\n")
