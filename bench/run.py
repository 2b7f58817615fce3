"""What the interpreter costs per step, and how well `map` overlaps slow tools.

    .venv/bin/python bench/run.py             # the six tables (about 60 s)
    .venv/bin/python bench/run.py --profile   # cProfile of the 1,000-step async plan (with --labelled: of laecho's)
    .venv/bin/python bench/run.py --quick     # fewer samples, for a smoke run
    .venv/bin/python bench/run.py --pure      # table (5) alone
    .venv/bin/python bench/run.py --labelled  # the labelled plans alone, CPU time per step
    .venv/bin/python bench/run.py --pure --instructions   # and each plan's machine instructions (valgrind)

Writes a tools module and a planc.toml into a temporary folder, loads the registry, checks each
plan once, and times only `run_plan` (a fresh event loop per sample, as `planc run` has one).

(1) Per-step overhead. A plan of 1,000 steps, each `echo(x: N)` with a trivial tool
    (`def echo(x: int) -> int: return x`, declared with an integer parameter and an integer
    `returns`), as a sync tool (run in a thread by `asyncio.to_thread`) and as an async tool
    (awaited), against the baselines measured in the same run: calling the function directly
    1,000 times in a loop, and awaiting the async function 1,000 times inside one event loop.
    Also `map` over 1,000 items whose block is trivial: `reshape(value: item)` (no tool at all)
    and `echo(x: item)` (sync and async); and 1,000 steps of `laecho`, the async tool declared with
    labels, each given the result before it, so that every argument and result carries labels.
(2) `map` over 100 items with a 10 ms tool (async `await asyncio.sleep(0.01)`, and sync
    `time.sleep(0.01)` run in threads) at concurrency 1, 10 and 50: wall time, speedup over
    concurrency 1, and the ideal speedup, 100 / ceil(100 / c) where c is the concurrency, bounded
    for sync tools by the worker count of asyncio's default thread pool (min(32, cpus + 4)).

(3) The optimizer's schedule, LLMCompiler-style: 8 independent calls of `search` (async, 50 ms,
    declared read-only and deterministic) joined by a final `reshape`, run one step after the
    other and as `planc run --optimize` runs it (`optimize`, then `run_plan` with its schedule).
    The ideal speedup is the cost pass's sequential latency over its critical path (8x here).
(4) What a run's events cost: the 1,000-step async plan of (1) with no events sink (the baseline),
    with each event stamped (`planc.backend.report.events.Stamp`) and kept in a list, and with the stamped
    events also made into OpenTelemetry spans (`planc.backend.report.traces.RunSpans`, the SDK's batch
    processor, an exporter that drops them: the SDK's cost, not a network's). Skipped without the
    `otel` extra.
(5) A pure step against a control step: `map` over 1,000 items doing a pure step (`round(value:
    item)`, `upper(text: "{item}")`, `add(a: item, b: 1)`) or the control step `reshape` with the same
    argument (`reshape(value: item)`, `reshape(value: "{item}")`, `reshape(value: [item, 1])`), each
    pure plan run right beside its control plan in each of 63 rounds (27 with --quick), which first
    alternating; the ratio is the median of the rounds' ratios, timed in the process's CPU time
    (`time.process_time`: nothing in them waits, and the machine may be shared). Beside each, the
    Python bytecodes one run executes an item (`sys.settrace`), a count no other process changes; with
    --instructions, the machine instructions too (valgrind's cachegrind, each plan run in a process of
    its own: bench/paired.py `instructions`), which no other process changes either and which count
    the C a bytecode runs.
(6) What recording a run costs each call, in the run store on SQLite and on PostgreSQL side by side:
    50 steps `aecho(x: N)` run by `planc.run` without a store (the baseline), and recorded, each run
    opening its store as `planc run` does: into an SQLite file and into PostgreSQL (a throwaway
    server of tests/postgres_server.py on a Unix socket), on disk with every commit fsynced (both
    under /tmp), and without the disk (SQLite's file in /dev/shm, PostgreSQL with fsync off): what
    the commits cost, and what the backend's own work and round trips cost. Skipped, saying why,
    without PostgreSQL or psycopg.

Times are the best of N samples (each sample loops at least 50 ms for the fast rows), garbage
collector on, gc.collect() before each sample.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import math
import os
import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from paired import bytecodes, call_repeatedly, instructions, paired, print_rows  # bench/, beside this script

import planc
from planc.backend.calls.hooks import Hooks
from planc.backend.report.events import Stamp
from planc.backend.run.interpreter import run_plan
from planc.registry import load_registry

recorded_run = planc.run  # the API's run: recorded when given a store, as `planc run` records one

STEPS = 1_000
RECORDED_STEPS = 50
SEARCHES = 8
ITEMS = 1_000
SLOW_ITEMS = 100
CONCURRENCY = (1, 10, 50)
MODULE = "planc_bench_run_tools"

TOOLS = """
import asyncio
import time


def echo(x: int) -> int:
    return x


async def aecho(x: int) -> int:
    return x


def numbers(n: int) -> list:
    return list(range(n))


def slow(x: int) -> int:
    time.sleep(0.01)
    return x


async def aslow(x: int) -> int:
    await asyncio.sleep(0.01)
    return x


async def search(query: str) -> list:
    await asyncio.sleep(0.05)
    return [query]
"""

TOML = """
[tools.echo]
provider = "python:{module}:echo"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true }}

[tools.aecho]
provider = "python:{module}:aecho"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true }}

[tools.laecho]
provider = "python:{module}:aecho"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true }}
labels = ["untrusted", "private"]

[tools.numbers]
provider = "python:{module}:numbers"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
returns = {{ type = "array", items = {{ type = "integer" }} }}
effects = {{ read_only = true }}

[tools.lnumbers]
provider = "python:{module}:numbers"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
returns = {{ type = "array", items = {{ type = "integer" }} }}
effects = {{ read_only = true }}
labels = ["untrusted", "private"]

[tools.slow]
provider = "python:{module}:slow"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true }}

[tools.aslow]
provider = "python:{module}:aslow"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
returns = {{ type = "integer" }}
effects = {{ read_only = true }}

[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }} }}
required = ["query"]
returns = {{ type = "array", items = {{ type = "string" }} }}
effects = {{ read_only = true, deterministic = true }}
cost = {{ latency_ms = 50 }}
"""


def steps_plan(tool: str, steps: int = STEPS) -> str:
    return "".join(f"{tool}(x: {n})\n" for n in range(steps))


def labelled_plan() -> str:
    """1,000 steps of a tool whose results are labelled, each given the result before it: every argument
    carries labels, and every result the union of its tool's and its argument's."""
    return "laecho(x: 0)\n" + "".join(f"laecho(x: ${n})\n" for n in range(1, STEPS))


def map_plan(block: str, items: int, concurrency: int = 1) -> str:
    return f"numbers(n: {items})\n  |> map(concurrency: {concurrency}, do: {{ {block} }})\n"


def best(function, repeat: int, sample: float = 0.05, clock=time.perf_counter) -> float:
    """Seconds per call of `function()`: best of `repeat` samples, each looping >= `sample` s of `clock`."""

    def once(loops: int) -> float:
        start = clock()
        for _ in range(loops):
            function()
        return (clock() - start) / loops

    loops = max(1, math.ceil(sample / max(once(1), 1e-9)))
    results = []
    for _ in range(repeat):
        gc.collect()
        results.append(once(loops))
    return min(results)


class Bench:
    def __init__(self, folder: Path) -> None:
        (folder / f"{MODULE}.py").write_text(TOOLS, encoding="utf-8")
        (folder / "planc.toml").write_text(textwrap.dedent(TOML.format(module=MODULE)), encoding="utf-8")
        self.registry = load_registry(folder / "planc.toml")
        sys.path.insert(0, str(folder))
        self.tools = importlib.import_module(MODULE)

    def checked(self, text: str):
        result = planc.check(text, registry=self.registry)
        errors = [d for d in result.diagnostics if d.is_error]
        if errors:
            sys.exit(f"a generated plan should check clean: {[(d.code, d.message) for d in errors[:3]]}")
        return result

    def runner(self, text: str, expected, optimized: bool = False, hooks=Hooks):
        """A function that runs the checked `text` once (as `--optimize` does, if `optimized`; with the
        hooks `hooks()` makes); its result is checked against `expected` first."""
        checked, schedule = self.checked(text), None
        if optimized:
            from planc.optimize.optimize import optimize

            result = optimize(checked)
            checked, schedule = result.checked, result.schedule

        def run():
            return asyncio.run(run_plan(checked, registry=self.registry, schedule=schedule, hooks=hooks()))

        value = run().value
        if value != expected:
            sys.exit(f"unexpected result: {str(value)[:200]}")
        return run


def overhead_rows(bench: Bench, repeat: int) -> list[tuple[str, int, float]]:
    """(what, steps, seconds per run) for the per-step table."""
    echo, aecho = bench.tools.echo, bench.tools.aecho

    def direct():
        for n in range(STEPS):
            echo(n)

    async def awaits():
        for n in range(STEPS):
            await aecho(n)

    def awaited():
        asyncio.run(awaits())

    async def threads():
        for n in range(STEPS):
            await asyncio.to_thread(echo, n)

    def to_thread():
        asyncio.run(threads())

    rows = [
        ("direct call echo(n) in a loop (baseline)", STEPS, best(direct, repeat)),
        ("await aecho(n) in one event loop", STEPS, best(awaited, repeat)),
        ("await asyncio.to_thread(echo, n)", STEPS, best(to_thread, repeat)),
    ]
    last = STEPS - 1
    plans = [
        ("run_plan: 1,000 steps echo(x: n), sync", steps_plan("echo"), STEPS, last),
        ("run_plan: 1,000 steps aecho(x: n), async", steps_plan("aecho"), STEPS, last),
        ("run_plan: map 1,000 items, do: reshape(item)", map_plan("reshape(value: item)", ITEMS), ITEMS, list(range(ITEMS))),
        ("run_plan: map 1,000 items, do: echo(item)", map_plan("echo(x: item)", ITEMS), ITEMS, list(range(ITEMS))),
        ("run_plan: map 1,000 items, do: aecho(item)", map_plan("aecho(x: item)", ITEMS), ITEMS, list(range(ITEMS))),
        ("run_plan: 1,000 steps laecho(x: $prev), labelled", labelled_plan(), STEPS, 0),
    ]
    for what, text, steps, expected in plans:
        rows.append((what, steps, best(bench.runner(text, expected), repeat)))
    return rows


def pure_pairs() -> list[tuple[str, list, str, list]]:
    """(control block, its result, pure block, its result) for table (5): each pure step beside `reshape`
    given the same argument, so both evaluate the same values."""
    strings = [str(n) for n in range(ITEMS)]
    return [
        ("reshape(value: item)", list(range(ITEMS)), "round(value: item)", list(range(ITEMS))),
        ('reshape(value: "{item}")', strings, 'upper(text: "{item}")', strings),
        ("reshape(value: [item, 1])", [[n, 1] for n in range(ITEMS)], "add(a: item, b: 1)", list(range(1, ITEMS + 1))),
    ]


def pure_rows(bench: Bench, repeat: int, counted: bool = False) -> list[tuple]:
    """(control block, pure block, seconds, seconds, ratio, bytecodes, bytecodes[, instructions, instructions])
    for `map` over 1,000 items: each pair timed side by side (`paired`: the median of the rounds' ratios, in
    CPU time, as these runs make no call that waits); with `counted`, each plan's instructions too, run in
    a process of its own under valgrind (`--count-plan`)."""
    pairs = pure_pairs()
    runs = [
        (bench.runner(map_plan(control, ITEMS), first), bench.runner(map_plan(pure, ITEMS), second))
        for control, first, pure, second in pairs
    ]
    rows = []
    for index, ((control, _, pure, _), (control_run, pure_run)) in enumerate(zip(pairs, runs)):
        rows.append((control, pure, *paired(control_run, pure_run, repeat), bytecodes(control_run), bytecodes(pure_run)))
        if counted:
            rows[-1] += tuple(instructions([__file__, "--count-plan", f"{index}:{side}"]) for side in (0, 2))
    return rows


def count_plan(which: str, times: int) -> None:
    """The child of `instructions`: the plan of `pure_pairs()[pair][side]` ("PAIR:SIDE", side 0 for the
    control block, 2 for the pure one), checked, then run `times` times."""
    pair, side = (int(part) for part in which.split(":"))
    block, expected = pure_pairs()[pair][side : side + 2]
    with tempfile.TemporaryDirectory(prefix="planc-bench-run-") as folder:
        call_repeatedly(Bench(Path(folder)).runner(map_plan(block, ITEMS), expected), times)


def map_rows(bench: Bench, repeat: int) -> list[tuple[str, int, float, float, float]]:
    """(tool, concurrency, seconds, speedup, ideal) for the map table."""
    workers = min(32, (os.cpu_count() or 1) + 4)  # asyncio's default executor (ThreadPoolExecutor)
    expected = list(range(SLOW_ITEMS))
    rows = []
    for tool, bound in (("aslow", None), ("slow", workers)):
        base = None
        for concurrency in CONCURRENCY:
            run = bench.runner(map_plan(f"{tool}(x: item)", SLOW_ITEMS, concurrency), expected)
            seconds = best(run, repeat if concurrency > 1 else max(2, repeat // 2), sample=0)
            base = base or seconds
            parallel = min(concurrency, SLOW_ITEMS, bound or SLOW_ITEMS)
            ideal = SLOW_ITEMS / math.ceil(SLOW_ITEMS / parallel)
            rows.append((tool, concurrency, seconds, base / seconds, ideal))
    return rows


def optimize_row(bench: Bench, repeat: int) -> tuple[float, float, float]:
    """(sequential seconds, optimized seconds, ideal speedup) for the LLMCompiler-style plan."""
    text = "".join(f's{n} = search(query: "topic {n}")\n' for n in range(SEARCHES))
    text += "reshape(value: [" + ", ".join(f"$s{n}" for n in range(SEARCHES)) + "])\n"
    expected = [[f"topic {n}"] for n in range(SEARCHES)]
    sequential = best(bench.runner(text, expected), repeat, sample=0)
    optimized = best(bench.runner(text, expected, optimized=True), repeat, sample=0)
    total = bench.checked(text).cost.total
    return sequential, optimized, total.sequential_ms.high / total.critical_ms.high


def events_rows(bench: Bench, repeat: int) -> list[tuple[str, float]]:
    """(what, seconds per run) for the 1,000-step async plan: no events sink, events stamped, and spans."""
    text, expected = steps_plan("aecho"), STEPS - 1
    kept: list = []

    def stamped():
        kept.clear()
        return Hooks(events=Stamp("bench", 0, kept.append))

    rows = [
        ("no events sink (baseline)", best(bench.runner(text, expected), repeat)),
        ("events stamped, kept in a list", best(bench.runner(text, expected, hooks=stamped), repeat)),
    ]
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        from planc.backend.report.events import fan_out
        from planc.backend.report.traces import RunSpans
    except ImportError:
        return rows

    class Dropped(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    tracer = provider.get_tracer("bench")

    def traced():
        kept.clear()
        return Hooks(events=Stamp("bench", 0, fan_out(kept.append, RunSpans(tracer, "bench"))))

    rows.append(("events stamped, kept, and made into spans", best(bench.runner(text, expected, hooks=traced), repeat)))
    provider.shutdown()
    return rows


def store_rows(bench: Bench, folder: Path, repeat: int) -> tuple[float, dict[str, dict[str, float]]] | str:
    """Seconds per run of RECORDED_STEPS async calls with no store, and by backend ("SQLite", "PostgreSQL")
    and place ("disk": every commit fsynced; "memory": SQLite's file in /dev/shm, PostgreSQL's fsync off);
    or why PostgreSQL cannot be measured here."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from postgres_server import PostgresServer, programs, skip_reason

    reason = skip_reason()
    if reason is not None:
        return f"skipped: {reason}"
    checked, expected = bench.checked(steps_plan("aecho", RECORDED_STEPS)), RECORDED_STEPS - 1

    def timed(store) -> float:
        def run():
            result = recorded_run(checked, registry=bench.registry, store=store)
            if result.value != expected:
                sys.exit(f"unexpected result: {str(result.value)[:200]}")

        return best(run, repeat, sample=0)

    memory = Path(tempfile.mkdtemp(prefix="planc-bench-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    found = {"SQLite": {"disk": timed(folder / "runs.sqlite"), "memory": timed(memory / "runs.sqlite")}, "PostgreSQL": {}}
    for place, durable in (("disk", True), ("memory", False)):
        server = PostgresServer(programs(), durable=durable)
        try:
            os.environ["PLANC_BENCH_STORE"] = server.database()
            found["PostgreSQL"][place] = timed("postgresql:$PLANC_BENCH_STORE")
        finally:
            server.stop()
    return timed(None), found


def labelled_rows(bench: Bench, repeat: int) -> list[tuple[str, float]]:
    """(what, CPU seconds per step) of the plans whose every value carries labels, best of `repeat`
    samples: what `--labelled` prints, run once with each of two checkouts' `src` (PYTHONPATH) in turn
    to compare them."""
    plans = [
        ("1,000 steps laecho(x: $prev)", labelled_plan(), STEPS, 0),
        (
            "map over 1,000 labelled items, do: laecho(x: index)",
            "lnumbers(n: 1000)\n  |> map(do: { laecho(x: index) })\n",
            ITEMS,
            list(range(ITEMS)),
        ),
    ]
    return [
        (what, best(bench.runner(text, expected), repeat, clock=time.process_time) / steps)
        for what, text, steps, expected in plans
    ]


def profile(bench: Bench) -> None:
    import cProfile
    import pstats

    labelled = "--labelled" in sys.argv
    run = bench.runner(labelled_plan() if labelled else steps_plan("aecho"), 0 if labelled else STEPS - 1)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        run()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pure", action="store_true", help="only table (5), a pure step against a control step")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="table (5) counts each plan's machine instructions too (valgrind; about 6 minutes more)",
    )
    parser.add_argument("--labelled", action="store_true", help="only the plans whose values carry labels, CPU time per step")
    parser.add_argument("--count-plan", nargs=2, metavar=("PAIR:SIDE", "TIMES"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.count_plan:
        count_plan(options.count_plan[0], int(options.count_plan[1]))
        return
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="planc-bench-run-") as folder:
        bench = Bench(Path(folder))
        if options.profile:
            profile(bench)
            return
        repeat = 3 if options.quick else 7
        rounds = 9 * repeat  # the rows are close: the median of many paired rounds (63; 27 with --quick)
        if options.pure:
            print_pure(pure_rows(bench, rounds, options.instructions), rounds)
            return
        if options.labelled:
            for what, seconds in labelled_rows(bench, repeat):
                print(f"{what:52} {seconds * 1e6:8.2f} us/step (CPU)")
            return
        overhead = overhead_rows(bench, repeat)
        slow = map_rows(bench, 2 if options.quick else 5)
        fan_out = optimize_row(bench, 3 if options.quick else 7)
        events = events_rows(bench, repeat)
        pure_steps = pure_rows(bench, rounds, options.instructions)
        stores = store_rows(bench, Path(folder), 3 if options.quick else 5)

    workers = min(32, (os.cpu_count() or 1) + 4)
    print(
        f"planc run benchmark: Python {platform.python_version()} ({platform.machine()}), "
        f"{os.cpu_count()} CPUs, asyncio default thread pool {workers} workers"
    )
    print("run_plan timed alone (checked once), a fresh event loop per run; best of samples, gc on\n")
    base = overhead[0][2] / overhead[0][1]
    print(f"{'':46} {'ms/run':>8} {'us/step':>8} {'vs direct':>10}")
    print("-" * 75)
    for what, steps, seconds in overhead:
        per = seconds / steps
        print(f"{what:46} {seconds * 1e3:8.2f} {per * 1e6:8.2f} {per / base:9.0f}x")
    per_await = overhead[1][2] / STEPS
    print(
        f"interpreter alone (run_plan minus the call it wraps): sync {(overhead[3][2] - overhead[2][2]) / STEPS * 1e6:.1f}"
        f" us/step, async {(overhead[4][2] / STEPS - per_await) * 1e6:.1f} us/step, async with labelled values "
        f"{(overhead[8][2] / STEPS - per_await) * 1e6:.1f} us/step (goal: at most 20)"
    )
    print(f"\nmap over {SLOW_ITEMS} items with a 10 ms tool (slow = time.sleep in a thread, aslow = await asyncio.sleep)")
    print(f"{'tool':>6} {'concurrency':>11} {'wall ms':>8} {'speedup':>8} {'ideal':>6} {'of ideal':>9}  bound by")
    print("-" * 75)
    for tool, concurrency, seconds, speedup, ideal in slow:
        if tool == "slow" and concurrency > workers:
            bound = f"thread pool ({workers} workers)"
        else:
            bound = "concurrency" if concurrency < SLOW_ITEMS else "items"
        print(f"{tool:>6} {concurrency:>11} {seconds * 1e3:8.1f} {speedup:7.2f}x {ideal:5.1f}x {speedup / ideal:8.0%}  {bound}")
    print(
        f"(ideal = {SLOW_ITEMS} / ceil({SLOW_ITEMS} / c), c = min(concurrency, {SLOW_ITEMS}, "
        f"and for sync tools the thread pool's {workers} workers))"
    )
    print(
        f"\n{SEARCHES} independent read-only searches (async, 50 ms each) joined by one reshape: one step after "
        f"the other vs the optimizer's schedule"
    )
    print(f"{'':28} {'sequential ms':>13} {'optimized ms':>12} {'speedup':>8} {'ideal':>6} {'of ideal':>9}")
    print("-" * 81)
    sequential, optimized, ideal = fan_out
    speedup = sequential / optimized
    print(
        f"{'LLMCompiler-style fan-out':28} {sequential * 1e3:13.1f} {optimized * 1e3:12.1f} {speedup:7.2f}x "
        f"{ideal:5.1f}x {speedup / ideal:8.0%}"
    )
    print("(ideal = the cost pass's sequential latency / its critical path under the schedule)")
    print(f"\nwhat the events cost: {STEPS:,} steps aecho(x: n), each with 4 events (step and tool, started and finished)")
    print(f"{'':46} {'ms/run':>8} {'us/step':>8} {'vs none':>10}")
    print("-" * 75)
    for what, seconds in events:
        print(f"{what:46} {seconds * 1e3:8.2f} {seconds / STEPS * 1e6:8.2f} {seconds / events[0][1]:9.2f}x")
    print_pure(pure_steps, rounds)
    print_stores(stores)
    print(f"(run took {time.perf_counter() - wall:.0f} s)")


def print_pure(pure_steps, repeat: int) -> None:
    print(
        f"\na pure step against the control step reshape with the same argument: map over {ITEMS:,} items, "
        f"each pair side by side in each of {repeat} rounds, CPU time; and Python bytecodes an item"
    )
    print_rows(pure_steps, ITEMS, "item")


def print_stores(stores) -> None:
    print(
        f"\nwhat recording costs a call, SQLite and PostgreSQL side by side: {RECORDED_STEPS} steps aecho(x: n) "
        "run by planc.run, each run opening its store as `planc run` does; best of samples"
    )
    if isinstance(stores, str):
        print(stores)
    else:
        none, found = stores
        print(f"no store (the baseline): {none / RECORDED_STEPS * 1e6:.1f} us/call")
        print(f"{'store us/call (over the baseline)':36} {'on disk, fsync':>16} {'in memory / fsync off':>22}")
        print("-" * 76)
        per = {
            name: {place: (seconds - none) / RECORDED_STEPS for place, seconds in places.items()}
            for name, places in found.items()
        }
        for name, places in per.items():
            print(f"{name:36} {places['disk'] * 1e6:16.1f} {places['memory'] * 1e6:22.1f}")
        print(
            f"{'PostgreSQL / SQLite':36} {per['PostgreSQL']['disk'] / per['SQLite']['disk']:15.2f}x "
            f"{per['PostgreSQL']['memory'] / per['SQLite']['memory']:21.2f}x"
        )
        print("(each call: its intent and outcome rows and its four events, each committed on its own)")


if __name__ == "__main__":
    main()
