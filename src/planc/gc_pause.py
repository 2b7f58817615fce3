"""Keep Python's cyclic garbage collector away from a big acyclic structure being built.

Parsing and checking allocate hundreds of thousands of small objects (tokens,
nodes, spans, dicts keyed by node) and none of them form reference cycles.
Left alone, the collector traverses them over and over while they are built,
and once more, all of them, in the first young collection afterwards: for a
10,000-step plan that last pass alone costs a fifth of the whole check.

So the collector is paused while the structure is built, and what was built
is then moved straight to the oldest generation (`gc.freeze()` followed by
`gc.unfreeze()` moves every tracked object there without traversing any), as
the collector would have done after a few passes anyway. The move is skipped
when the program has frozen objects of its own, which unfreezing would release.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
