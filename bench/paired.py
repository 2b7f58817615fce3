"""Two functions timed side by side, for rows whose difference is smaller than a shared machine's noise.

In each round the two run right beside each other (which one first alternates), each after a
collection, in this process's CPU time; a busy moment of the machine then falls on both, and the
median of the rounds' ratios says how they compare. Each one's best round is kept too, for the
per-item columns, though the load moves those more than the ratio.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import statistics
import subprocess
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
    return (
        min(base for base, _ in samples),
        min(seconds for _, seconds in samples),
        statistics.median(seconds / base for base, seconds in samples),
    )


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


def instructions(command: list[str], calls: int = 8) -> float | None:
    """Machine instructions one call executes (valgrind's cachegrind, its `I refs`), or None where valgrind
    is missing. `command` (a Python script and its arguments) makes the function and calls it as many times
    as the argument appended says (`call_repeatedly`); it is run with `calls` and with 0, and the difference
    is divided by `calls`. Like `bytecodes`, no other process changes the count (it moves by about 0.2%
    between runs); unlike them, it counts the C each bytecode runs. Each command takes about a minute."""
    if shutil.which("valgrind") is None:
        return None

    def refs(times: int) -> int:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                "--cachegrind-out-file=/dev/null",
                sys.executable,
                *command,
                str(times),
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        return int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", ""))

    return (refs(calls) - refs(0)) / calls


def call_repeatedly(function: Callable[[], object], times: int) -> None:
    """The child side of `instructions`: `function` called `times` times, each after a collection as when
    timed, with the interpreter's thread switch requests (every 5 ms of wall time, and valgrind runs the
    program tens of times slower) put off so that they do not add to the count."""
    sys.setswitchinterval(100)
    for _ in range(times):
        gc.collect()
        function()


def print_rows(rows, count: int, unit: str) -> None:
    """The table of `rows` (control, pure, control seconds, pure seconds, ratio, control bytecodes, pure
    bytecodes, and, where measured, control instructions and pure instructions), each per `unit` of `count`,
    and whether the costliest pure step is within budget: in time (the median ratio, within the noise of a
    measurement) and, where measured, in instructions (no more than its control step's)."""
    counted = all(len(row) > 7 and row[7] is not None for row in rows)
    extra = f" {'instr':>8}" if counted else ""
    print(
        f"{'control step':26} {'us/' + unit:>8} {'codes':>6}{extra} | {'pure step':24} {'us/' + unit:>8} {'codes':>6}"
        f"{extra} {'pure / control':>15}"
    )
    print("-" * (103 + 2 * len(extra)))
    for control, pure, control_s, pure_s, ratio, control_codes, pure_codes, *measured in rows:
        control_instr, pure_instr = (f" {measured[0] / count:8.0f}", f" {measured[1] / count:8.0f}") if counted else ("", "")
        print(
            f"{control:26} {control_s / count * 1e6:8.1f} {control_codes / count:6.0f}{control_instr} | {pure:24} "
            f"{pure_s / count * 1e6:8.1f} {pure_codes / count:6.0f}{pure_instr} {ratio:14.2f}x"
        )
    worst = max(row[4] for row in rows)
    print(
        f"the costliest pure step / its control step (median of the rounds): {worst:.2f}x (budget <= {BUDGET}x, "
        f"the noise of a measurement): {'PASS' if worst <= BUDGET else 'FAIL'}"
    )
    if counted:
        most = max(row[8] / row[7] for row in rows)
        print(
            f"in instructions (cachegrind, which the load does not move): {most:.3f}x (budget <= 1x): "
            f"{'PASS' if most <= 1 else 'FAIL'}"
        )
