"""Who holds a run: one process at a time records into a run, and a lease in the store says which.

`planc run` takes its run's lease as it records the run, and `planc resume` takes it before it
goes on; finishing the run gives it back. Two processes recording into one run would both add
calls and events under the same numbers, so a second resume (or a resume of a run still being
run) is refused while the holder lives. A holder that died (SIGKILL, a power cut) never gives
its lease back, so a lease whose process is gone is broken: the process is known by its pid and,
where the system says, the time it started (a pid is reused once its process is gone).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

_held: set[str] = set()  # the tokens of the leases this process holds now


class Holder:
    """This process, as a lease records it, with a token of its own for each lease it takes."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.started = _process_started(self.pid)
        self.token = uuid.uuid4().hex

    def take(self) -> None:
        _held.add(self.token)

    def give_back(self) -> None:
        _held.discard(self.token)


def holds(pid: int, started: str | None, token: str) -> bool:
    """Whether the lease taken by process `pid` (started at `started`), with `token`, is still held."""
    if pid == os.getpid():
        return token in _held  # this process: held while the run it took it for goes on
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    now = _stat(pid)
    if now is None:
        return True  # it exists, and nothing says it is another process
    state, now_started = now
    return state != "Z" and (started is None or started == now_started)  # a zombie has ended


def _process_started(pid: int) -> str | None:
    found = _stat(pid)
    return found[1] if found is not None else None


def _stat(pid: int) -> tuple[str, str] | None:
    """The state and start time (in clock ticks since boot) of process `pid`, where /proc says them."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command, which may hold spaces: from field 3
    return fields[0], fields[19]
