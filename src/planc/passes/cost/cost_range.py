"""What a step or a plan may cost: ranges [least, most] of calls, inferences, dollars and milliseconds.

The most is `math.inf` when it has no known bound (JSON: `"unbounded"`). A
range is what a run may cost when no tool fails: the least is what every such
run costs, the most is what no run can exceed.
"""

from __future__ import annotations

import math

import attrs

UNBOUNDED = math.inf


def _times(count: float, each: float) -> float:
    """`count * each`, where no iterations or a free iteration cost nothing, even unboundedly many."""
    return 0 if count == 0 or each == 0 else count * each


@attrs.frozen
class Range:
    """[low, high]: the least and the most; `high` may be UNBOUNDED."""

    low: float = 0
    high: float = 0

    def __add__(self, other: Range) -> Range:
        return Range(self.low + other.low, self.high + other.high)

    def times(self, count: Range) -> Range:
        """The range of `count` runs of something whose one run costs `self`."""
        return Range(_times(count.low, self.low), _times(count.high, self.high))

    def either(self, other: Range) -> Range:
        """One of two alternatives: the lesser least and the greater most."""
        return Range(min(self.low, other.low), max(self.high, other.high))

    @property
    def bounded(self) -> bool:
        return self.high != UNBOUNDED

    def to_json(self, digits: int = 0) -> list:
        """`[low, high]`, numbers rounded to `digits` decimals (whole numbers for 0); `"unbounded"` for no bound."""

        def number(value: float) -> float:
            return round(float(value), digits) if digits else round(value)

        return [number(self.low), number(self.high) if self.bounded else "unbounded"]


ZERO = Range()


@attrs.frozen
class CostRange:
    """The cost of one run of a step, a block or a plan.

    `sequential_ms` adds up every call's latency as if each ran after the
    other; `critical_ms` is the longest chain of calls that must wait for each
    other (a result they read, an effect they must follow, a `map` wave).

    >>> one = CostRange(calls=Range(1, 1), usd=Range(0.01, 0.01))
    >>> (one + one).to_json()["calls"], one.times(Range(0, 50)).to_json()["usd"]
    ([2, 2], [0.0, 0.5])
    """

    calls: Range = ZERO
    inferences: Range = ZERO
    usd: Range = ZERO
    sequential_ms: Range = ZERO
    critical_ms: Range = ZERO

    def __add__(self, other: CostRange) -> CostRange:
        """This, then `other`, one waiting for the other."""
        return CostRange(*(a + b for a, b in zip(self._fields(), other._fields())))

    @staticmethod
    def total(costs: list[CostRange]) -> CostRange:
        """These costs, one after the other (their critical paths added too)."""
        columns = zip(*(cost._fields() for cost in costs))
        return CostRange(*(Range(sum(r.low for r in column), sum(r.high for r in column)) for column in columns))

    def times(self, count: Range, waves: Range | None = None) -> CostRange:
        """`count` runs of this; `waves` (default: `count`) of them one after the other."""
        calls, inferences, usd, sequential, critical = self._fields()
        return CostRange(
            calls.times(count), inferences.times(count), usd.times(count), sequential.times(count), critical.times(waves or count)
        )

    def either(self, other: CostRange) -> CostRange:
        """One of two alternatives (the branches of a `decide`)."""
        return CostRange(*(a.either(b) for a, b in zip(self._fields(), other._fields())))

    def most_only(self) -> CostRange:
        """This cost where a run may stop before it (after an `exit`): its least is nothing."""
        return CostRange(*(Range(0, field.high) for field in self._fields()))

    def with_critical(self, critical: Range) -> CostRange:
        return attrs.evolve(self, critical_ms=critical)

    @property
    def bounded(self) -> bool:
        return all(field.bounded for field in self._fields())

    @property
    def free(self) -> bool:
        """Whether no run of this calls a tool or a model."""
        return self.calls.high == 0 and self.inferences.high == 0

    def to_json(self) -> dict:
        return {
            "calls": self.calls.to_json(),
            "inferences": self.inferences.to_json(),
            "usd": self.usd.to_json(digits=9),
            "latency_ms": {"sequential": self.sequential_ms.to_json(), "critical_path": self.critical_ms.to_json()},
        }

    def _fields(self) -> tuple[Range, ...]:
        return (self.calls, self.inferences, self.usd, self.sequential_ms, self.critical_ms)
