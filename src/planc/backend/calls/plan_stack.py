"""The declared plans being run at a point of a run: the call stack that events and hooks carry.

A declared plan (`plan__NAME`) runs inside the run that calls it; while it does, its call is on the
stack, in a context variable, so the items of a `map` running at the same time inside it see it too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from planc.backend.calls.hooks import PlanCall

_STACK: ContextVar[tuple[PlanCall, ...]] = ContextVar("planc_plan_stack", default=())


def current() -> tuple[PlanCall, ...]:
    """The declared plans being run here, outermost first; () at the plan's own top level."""
    return _STACK.get()


@contextlib.contextmanager
def calling(plan: str, step: str) -> Iterator[None]:
    """The declared plan `plan`, called at the step path `step`, on the stack inside the block."""
    token = _STACK.set((*_STACK.get(), PlanCall(plan, step)))
    try:
        yield
    finally:
        _STACK.reset(token)


def as_data(stack: tuple[PlanCall, ...]) -> list[dict]:
    """The stack as events carry it: `[{"plan": NAME, "step": PATH}, ...]`, outermost first."""
    return [{"plan": frame.plan, "step": frame.step} for frame in stack]
