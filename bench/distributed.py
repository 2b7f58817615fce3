"""`map` over a CPU-bound Python tool: the local executor against Ray's, on this machine.

    .venv/bin/python bench/distributed.py           # both tables (about 3 minutes on 2 cores)
    .venv/bin/python bench/distributed.py --quick   # 40 items, one sample: a smoke run

Writes a tools module and a planc.toml into a temporary folder, starts a local Ray cluster (as
`planc run --executor ray` does with no address: all of this machine's CPUs), and times only
`run_plan` (a fresh event loop per run, as `planc run` has one).

(1) Throughput. `map` over ITEMS items, concurrency 8, of `burn(x)`: a pure-Python loop
    calibrated at start to take about 50 ms, holding the GIL throughout. Against the baseline
    measured in the same run, the same calls made one after the other in this process: the local
    executor runs each call in a thread of the run's process, so the GIL lets one run at a time
    (about 1x); the Ray executor runs them in worker processes, one per CPU (ideal: the CPU count).

(2) Per-call overhead. `map` over ITEMS items of `echo(x)` (returns its argument), at
    concurrency 1 (each call waits for the one before: the round trip to a worker) and 8, local
    and Ray; the overhead per call is the difference in wall time over ITEMS.

Times are the best of 3 rounds, each round running every variant once in turn, so that a change in
the machine's load (other processes share its CPUs) falls on all of them alike; a warm-up run
first, so Ray's workers are up and have imported the tools; `gc.collect()` before each.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import os
import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import planc
from planc.backend.calls.ray_executor import RayExecutor
from planc.backend.run.interpreter import run_plan
from planc.registry import load_registry

ITEMS = 200
CONCURRENCY = 8
TARGET_S = 0.05  # one `burn` call
MODULE = "planc_bench_distributed_tools"

TOOLS = """
LOOPS = {loops}


def burn(x: int) -> int:
    total = 0
    for i in range(LOOPS):
        total += i * i % 7
    return x


def echo(x: int) -> int:
    return x


def numbers(n: int) -> list:
    return list(range(n))
"""

TOML = """
[tools.burn]
provider = "python:{module}:burn"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true, deterministic = true, idempotent = true, destructive = false, open_world = false }}

[tools.echo]
provider = "python:{module}:echo"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true, deterministic = true, idempotent = true, destructive = false, open_world = false }}

[tools.numbers]
provider = "python:{module}:numbers"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
returns = {{ type = "array", items = {{ type = "integer" }} }}
effects = {{ read_only = true }}
"""


def calibrated_loops() -> int:
    """How many turns of `burn`'s loop take TARGET_S here (best of three timings of a trial)."""
    trial = 200_000

    def once() -> float:
        start = time.perf_counter()
        total = 0
        for i in range(trial):
            total += i * i % 7
        return time.perf_counter() - start

    return int(trial * TARGET_S / min(once() for _ in range(3)))


def plan(tool: str, items: int, concurrency: int) -> str:
    return f"numbers(n: {items})\n  |> map(concurrency: {concurrency}, do: {{ {tool}(x: item) }})\n"


def best(functions: dict, repeat: int) -> dict:
    """Seconds per call of each of `functions` (name -> function): the best of `repeat` rounds, each round
    calling every function once in turn, so that a change in the machine's load falls on all of them."""
    results: dict = {name: [] for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            gc.collect()
            start = time.perf_counter()
            function()
            results[name].append(time.perf_counter() - start)
    return {name: min(times) for name, times in results.items()}


class Bench:
    def __init__(self, folder: Path, items: int) -> None:
        self.items = items
        (folder / f"{MODULE}.py").write_text(TOOLS.format(loops=calibrated_loops()), encoding="utf-8")
        (folder / "planc.toml").write_text(textwrap.dedent(TOML.format(module=MODULE)), encoding="utf-8")
        self.registry = load_registry(folder / "planc.toml")
        sys.path.insert(0, str(folder))
        self.tools = importlib.import_module(MODULE)
        self.ray = RayExecutor.connect(None, folder)

    def runner(self, tool: str, concurrency: int, executor):
        checked = planc.check(plan(tool, self.items, concurrency), registry=self.registry)
        assert checked.ok, [d.message for d in checked.diagnostics]

        def run():
            value = asyncio.run(run_plan(checked, registry=self.registry, executor=executor)).value
            assert value == list(range(self.items)), str(value)[:200]

        run()  # warm-up: Ray's workers started, the tools imported
        return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 items, one sample")
    options = parser.parse_args()
    items, repeat = (40, 1) if options.quick else (ITEMS, 3)
    with tempfile.TemporaryDirectory() as folder:
        bench = Bench(Path(folder), items)
        try:
            tables(bench, items, repeat)
        finally:
            bench.ray.close()


def tables(bench: Bench, items: int, repeat: int) -> None:
    cpus = os.cpu_count()
    print(
        f"Python {platform.python_version()}, {cpus} CPUs; Ray {bench.ray.ray.__version__}; {items} items, "
        f"best of {repeat}; load average {os.getloadavg()[0]:.1f} (other processes share the CPUs)"
    )
    times = best(
        {
            "direct": lambda: [bench.tools.burn(x) for x in range(items)],
            "local": bench.runner("burn", CONCURRENCY, None),
            "ray": bench.runner("burn", CONCURRENCY, bench.ray),
        },
        repeat,
    )
    direct, local, on_ray = times["direct"], times["local"], times["ray"]
    print(f"\nmap over {items} items of a CPU-bound Python tool (~{TARGET_S * 1000:.0f} ms each), concurrency {CONCURRENCY}")
    print(f"{'':34}{'wall s':>8}{'ms/item':>9}{'speedup':>9}{'ideal':>7}")
    print("-" * 67)
    for what, seconds, ideal in (
        ("one after the other (baseline)", direct, 1),
        ("planc run (local executor)", local, 1),
        ("planc run --executor ray", on_ray, cpus),
    ):
        print(f"{what:34}{seconds:8.2f}{seconds / items * 1000:9.1f}{direct / seconds:8.2f}x{ideal:6}x")

    print(f"\nper-call overhead: map over {items} items of echo(x) (returns x)")
    print(f"{'':14}{'local ms':>10}{'ray ms':>9}{'ray us/call':>13}{'extra us/call':>15}")
    print("-" * 61)
    for concurrency in (1, CONCURRENCY):
        times = best(
            {"local": bench.runner("echo", concurrency, None), "ray": bench.runner("echo", concurrency, bench.ray)}, repeat
        )
        local, on_ray = times["local"], times["ray"]
        print(
            f"{f'concurrency {concurrency}':14}{local * 1000:10.1f}{on_ray * 1000:9.1f}"
            f"{on_ray / items * 1e6:13.0f}{(on_ray - local) / items * 1e6:15.0f}"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
