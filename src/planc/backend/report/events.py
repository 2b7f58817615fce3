"""A run's events: one stream of what happens in a run, stamped once and handed to every consumer.

The interpreter sends an event as the run, each step, each tool call and each model inference
starts and ends (`hooks.events`; docs/cli.md lists them). A recorded run stamps each event with
its run's id (`run`), its number in the run (`seq`: 1, 2, 3 with no gap, continuing after the
events a resumed run had recorded) and when it happened (`time`, RFC 3339 in UTC); then the run
store, `--events`, the progress on stderr and the traces each take the same stamped event.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from planc import clock

STAMP = ("time", "run", "seq")  # the fields a stamp adds to an event


def fan_out(*sinks: Callable[[dict], None] | None) -> Callable[[dict], None] | None:
    """One event sink that hands every event to each of `sinks` (None ones left out)."""
    live = [sink for sink in sinks if sink is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0]

    def sink(event: dict) -> None:
        for each in live:
            each(event)

    return sink


class Stamp:
    """An event sink that stamps each event of run `run_id` and hands it to `sink`; `after` is the number
    of the run's last event already recorded (0 for a new run)."""

    def __init__(self, run_id: str, after: int, sink: Callable[[dict], None]) -> None:
        self.run_id, self.seq, self.sink = run_id, after, sink

    def __call__(self, event: dict) -> None:
        self.seq += 1
        self.sink({"time": rfc3339(clock.now()), "run": self.run_id, "seq": self.seq, **event})


def rfc3339(seconds: float) -> str:
    """`seconds` since the epoch as an RFC 3339 timestamp in UTC, to the microsecond.

    >>> rfc3339(0.5)
    '1970-01-01T00:00:00.500000Z'
    """
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def seconds(stamp: str) -> float:
    """An event's `time` back as seconds since the epoch.

    >>> seconds(rfc3339(1767225600.25))
    1767225600.25
    """
    return datetime.datetime.fromisoformat(stamp).timestamp()
