"""What time it is, and which id a new run gets: the system's, or a fixed clock a run was made with.

The run store stamps its rows and the run's events with `now()`, and names a new run with
`new_run_id()`. Normally these are the system's clock and a fresh random id. A program that needs
two runs to write the same bytes (a test comparing runs in two worlds) runs them under
`fixed(clock)`: every stamp is then `clock.at` and the run's id `clock.run_id`. A run made so keeps
its clock in its options (`clock`, as `FixedClock.to_data` writes it), and whatever continues it
(`planc approve`, `planc.approve_async`, `planc resume`) reads the clock back from there, so the
whole record is made with one clock, from whichever door. A fixed clock never advances: it says
nothing about durations.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

import attrs


@attrs.frozen
class FixedClock:
    """A clock that reads `at` (seconds since the epoch) every time, for the run it names
    `run_id`."""

    at: float
    run_id: str

    def to_data(self) -> dict:
        return {"at": self.at, "run_id": self.run_id}

    @classmethod
    def from_data(cls, data: Mapping | None) -> FixedClock | None:
        """The clock a run's options keep (`clock`), None where they keep none."""
        if not data:
            return None
        return cls(float(data["at"]), str(data["run_id"]))


_FIXED: ContextVar[FixedClock | None] = ContextVar("planc_fixed_clock", default=None)


def current() -> FixedClock | None:
    """The fixed clock in force here, None for the system's."""
    return _FIXED.get()


@contextlib.contextmanager
def fixed(clock: FixedClock | None) -> Iterator[None]:
    """Read `clock` for what runs inside (in this context, and the tasks it starts); None changes
    nothing."""
    if clock is None:
        yield
        return
    token = _FIXED.set(clock)
    try:
        yield
    finally:
        _FIXED.reset(token)


def now() -> float:
    """Seconds since the epoch: the fixed clock's instant, else the system's."""
    clock = _FIXED.get()
    return clock.at if clock is not None else time.time()


def new_run_id() -> str:
    """A new run's or batch's id: the fixed clock's, else when it started and 8 random hex
    digits."""
    clock = _FIXED.get()
    if clock is not None:
        return clock.run_id
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]
