"""Costs in words, for `planc check` and `planc show`: `3-53 calls, 0-1 inferences, $0.00-$0.10, 55-2,100 ms`.

A range whose least and most are equal is one number; a most with no bound
is written `3+`.
"""

from __future__ import annotations

from collections.abc import Callable

from planc.passes.cost.cost_range import CostRange, Range


def cost_line(cost: CostRange) -> str:
    """Every part of a cost; the critical path only where it is shorter than the sequential sum.

    >>> from planc.passes.cost.cost_range import UNBOUNDED
    >>> cost_line(CostRange(calls=Range(3, 53), usd=Range(0, 0.1), sequential_ms=Range(55, 2100),
    ...                     critical_ms=Range(55, 900)))
    '3-53 calls, 0 inferences, $0.00-$0.10, 55-2,100 ms (critical path 55-900 ms)'
    >>> cost_line(CostRange(calls=Range(1, UNBOUNDED)))
    '1+ calls, 0 inferences, $0.00, 0 ms'
    """
    text = (
        f"{_count(cost.calls, 'call')}, {_count(cost.inferences, 'inference')}, "
        f"{_range(cost.usd, dollars)}, {_range(cost.sequential_ms, _ms)} ms"
    )
    if cost.critical_ms != cost.sequential_ms:
        text += f" (critical path {_range(cost.critical_ms, _ms)} ms)"
    return text


def step_note(cost: CostRange) -> str:
    """The parts of a step's cost that are not nothing, or `free`.

    >>> step_note(CostRange(calls=Range(1, 1), sequential_ms=Range(40, 40), critical_ms=Range(40, 40)))
    '1 call, 40 ms'
    """
    parts = []
    if cost.calls.high:
        parts.append(_count(cost.calls, "call"))
    if cost.inferences.high:
        parts.append(_count(cost.inferences, "inference"))
    if cost.usd.high:
        parts.append(_range(cost.usd, dollars))
    if cost.sequential_ms.high:
        parts.append(f"{_range(cost.sequential_ms, _ms)} ms")
    return ", ".join(parts) or "free"


def dollars(value: float) -> str:
    """`$0.10`, `$12.50`, `$0.002`: cents, or the digits a smaller amount needs.

    >>> dollars(0.1), dollars(0.002), dollars(1234.5), dollars(0)
    ('$0.10', '$0.002', '$1,234.50', '$0.00')
    """
    text = f"{value:,.6f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"${whole}.{fraction.ljust(2, '0')}"


def _count(value: Range, noun: str) -> str:
    plural = "" if value.low == value.high == 1 else "s"
    return f"{_range(value, lambda n: f'{n:,.0f}')} {noun}{plural}"


def _ms(value: float) -> str:
    return f"{value:,.0f}"


def _range(value: Range, number: Callable[[float], str]) -> str:
    if not value.bounded:
        return f"{number(value.low)}+"
    if value.low == value.high:
        return number(value.low)
    return f"{number(value.low)}-{number(value.high)}"
