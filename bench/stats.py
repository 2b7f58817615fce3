"""How long `planc stats` takes on a store of a few hundred runs, and of a few thousand.

    .venv/bin/python bench/stats.py              # 300 and 3,000 runs
    .venv/bin/python bench/stats.py --runs 300   # one size

Each store is recorded by the real recorder (`RecordedRun`, Python tools, a policy), as the
tests' store is: a plan of three top-level steps with a `map`, every tenth run failing at its
first call, and a second plan the policy stops at run time. Then, for each store, whole processes,
interleaved, median of 10 after a warm-up: `planc stats --format json` against the baseline
`planc runs --format json` (which reads every run's row), and `planc stats --sql` of one view, with
`python -c pass` to show what starting a process costs on the machine at the time; and
the same reads in one process, without its start: `stats()` against `RunStore.runs()`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

RUNS = 10

TOOLS = """
def search(query, limit=2):
    if query == "boom":
        raise ValueError("search is down")
    return [{"id": f"I{i}"} for i in range(limit)]

def get(id):
    return {"id": id}

def notify(channel, text):
    return {"sent": True}
"""

TOML = """
[tools.search]
provider = "python:benchstatstools:search"
params = { query = { type = "string" }, limit = { type = "integer", minimum = 1, maximum = 10, default = 2 } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
returns_at_most = "limit"
effects = { read_only = true }
cost = { usd = 0.01, latency_ms = 20 }

[tools.get]
provider = "python:benchstatstools:get"
params = { id = { type = "string" } }
required = ["id"]
effects = { read_only = true }

[tools.notify]
provider = "python:benchstatstools:notify"
params = { channel = { type = "string" }, text = { type = "string" } }
required = ["channel", "text"]
"""

PLANS = {
    'search(query: $args.q, limit: 2)\n  |> map(do: { get(id: item.id) })\nnotify(channel: "#ops", text: "{$2.length}")\n': lambda n: {
        "q": "boom" if n % 10 == 1 else "disk"
    },
    'get(id: "I1")\nnotify(channel: $args.channel, text: "hi")\n': lambda n: {"channel": "#secret"},
}
POLICY = (
    'permit(principal, action, resource);\nforbid(principal, action, resource == Tool::"notify") when '
    '{ context.args has channel && context.args.channel == "#secret" };\n'
)


def build(folder: Path, runs: int) -> Path:
    """A store of `runs` runs in `folder`: four in five of the first plan, one in five of the second."""
    import attrs

    import planc
    from planc.backend.run.recorded_run import RecordedRun
    from planc.backend.run.spec import RunSpec
    from planc.backend.state.values import RunError
    from planc.passes.policy.load import load_policy
    from planc.registry import load_registry
    from planc.store.run_store import RunStore

    (folder / "benchstatstools.py").write_text(TOOLS, encoding="utf-8")
    (folder / "planc.toml").write_text(textwrap.dedent(TOML), encoding="utf-8")
    (folder / "policy.cedar").write_text(POLICY, encoding="utf-8")
    sys.path.insert(0, str(folder))
    registry, policy = load_registry(folder / "planc.toml"), load_policy(folder / "policy.cedar")
    store = RunStore(folder / "runs.sqlite")
    store.db.execute("PRAGMA synchronous = OFF")  # the bench's own store: the same rows, sooner
    checked = [(planc.check(text, registry=registry, policy=policy), given) for text, given in PLANS.items()]
    spec = RunSpec(config=str(folder / "planc.toml"), policy=str(folder / "policy.cedar"))  # as `planc run` has it
    for n in range(runs):
        plan, given = checked[0] if n % 5 else checked[1]
        recorded = RecordedRun.record(store, plan, attrs.evolve(spec, arguments=given(n)), registry=registry, policy=policy)
        try:
            recorded.execute()
        except RunError:
            pass
    store.close()
    return folder / "runs.sqlite"


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(store: Path) -> dict[str, list[float]]:
    planc = [sys.executable, "-c", "import sys; from planc.cli import main; sys.exit(main())"]
    commands = {
        "planc runs --format json (baseline)": [*planc, "runs", "--store", str(store), "--format", "json"],
        "python -c pass (the interpreter's start)": [sys.executable, "-c", "pass"],
        "planc stats --format json": [*planc, "stats", "--store", str(store), "--format", "json"],
        "planc stats --sql (one view)": [
            *planc,
            "stats",
            "--store",
            str(store),
            "--sql",
            "SELECT tool, COUNT(*), AVG(ms) FROM call_times GROUP BY tool",
        ],
    }
    for command in commands.values():
        timed(command)  # warm-up: bytecode, the page cache
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, command in commands.items():
            times[name].append(timed(command))
    return times


def in_process(store: Path) -> dict[str, list[float]]:
    """The same two reads inside one process, without its start: `stats()` against `RunStore.runs()`."""
    from planc.store.run_store import RunStore
    from planc.store.stats import stats

    def runs() -> None:
        opened = RunStore(store, read_only=True)
        opened.runs()
        opened.close()

    reads = {"RunStore.runs() (baseline)": runs, "stats()": lambda: stats(store)}
    times: dict[str, list[float]] = {name: [] for name in reads}
    for _ in range(RUNS):
        for name, read in reads.items():
            start = time.perf_counter()
            read()
            times[name].append(time.perf_counter() - start)
    return times


def report(times: dict[str, list[float]]) -> None:
    baseline = statistics.median(next(iter(times.values())))
    print(f"{'':40} median ms  min ms  max ms  / baseline")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:40} {1000 * median:9.0f} {1000 * min(samples):7.0f} {1000 * max(samples):7.0f}  {median / baseline:9.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, action="append", help="store sizes (default: 300 and 3000)")
    sizes = parser.parse_args().runs or [300, 3000]
    for size in sizes:
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            store = build(Path(folder), size)
            print(f"{size} runs recorded in {time.perf_counter() - started:.1f} s; store {store.stat().st_size / 1e6:.1f} MB")
            report(measure(store))
            report(in_process(store))
            print()


if __name__ == "__main__":
    main()
