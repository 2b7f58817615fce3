"""Two functions timed side by side, for rows whose difference is smaller than a shared machine's noise.

In each round the two run right beside each other (which one first alternates), each after a
collection, in this process's CPU time; a busy moment of the machine then falls on both, and the
median of the rounds' ratios says how they compare. Each one's best round is kept too, for the
per-item columns, though the load moves those more than the ratio.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable

BUDGET = 1.02  # pure / control: the noise of a measurement


def paired(baseline: Callable[[], object], candidate: Callable[[], object], rounds: int) -> tuple[float, float, float]:
    """(baseline's best seconds, candidate's best seconds, median of candidate / baseline) over `rounds`."""
    samples = []
    for round_ in range(rounds):
        if round_ % 2:
            first = _seconds(baseline)
            samples.append((first, _seconds(candidate)))
        else:
            second = _seconds(candidate)
            samples.append((_seconds(baseline), second))
    return (min(base for base, _ in samples), min(seconds for _, seconds in samples),
            statistics.median(seconds / base for base, seconds in samples))


def _seconds(function: Callable[[], object]) -> float:
    gc.collect()  # a collection the last run left due does not fall on this one
    start = time.process_time()
    function()
    return time.process_time() - start


def bytecodes(function: Callable[[], object]) -> int:
    """How many Python bytecodes one call of `function` executes (`sys.settrace`'s opcode events, this
    thread): a count no other process changes, though it does not see what a bytecode costs in C."""
    count = 0

    def trace(frame, event, _):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        function()
    finally:
        sys.settrace(None)
    return count


def print_rows(rows, count: int, unit: str) -> None:
    """The table of `rows` (control, pure, control seconds, pure seconds, ratio, control bytecodes, pure
    bytecodes), each per `unit` of `count`, and whether the costliest pure step is within budget."""
    print(f"{'control step':26} {'us/' + unit:>8} {'codes':>6} | {'pure step':24} {'us/' + unit:>8} {'codes':>6} "
          f"{'pure / control':>15}")
    print("-" * 103)
    for control, pure, control_s, pure_s, ratio, control_codes, pure_codes in rows:
        print(f"{control:26} {control_s / count * 1e6:8.1f} {control_codes / count:6.0f} | {pure:24} "
              f"{pure_s / count * 1e6:8.1f} {pure_codes / count:6.0f} {ratio:14.2f}x")
    worst = max(row[4] for row in rows)
    print(f"the costliest pure step / its control step (median of the rounds): {worst:.2f}x (budget <= {BUDGET}x, "
          f"the noise of a measurement): {'PASS' if worst <= BUDGET else 'FAIL'}")
