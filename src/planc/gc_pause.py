"""Pause Python's cyclic garbage collector while a big acyclic structure is built.

Parsing and checking allocate hundreds of thousands of small objects (tokens,
nodes, spans, dicts keyed by node) and none of them form reference cycles, so
the collector's repeated traversals of them are pure cost: without the pause a
10,000-step plan takes twice as long per step as a 1,000-step one.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
