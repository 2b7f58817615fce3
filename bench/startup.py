"""Whole-process start-up cost of `planc check --format json small.plan`.

    .venv/bin/python bench/startup.py

Times the console script against `python -c pass` on the same interpreter (median of
20 runs each, interleaved, after warm-up runs), prints the ratio, then the 15 imports
with the largest cumulative time under `python -X importtime`, to show what to make lazy.
The `planc` group imports a command's module with `importlib.import_module`, which
`-X importtime` does not time: that module is missing from the list, and what it imports
shows at depth 0.

Bytecode: if PYTHONDONTWRITEBYTECODE is set (as in some sandboxes), every run would
recompile planc from source, which no installed user pays. The runs therefore drop it
and keep the bytecode in a temporary PYTHONPYCACHEPREFIX (nothing is written to src/).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 20
WARMUP = 3

SMALL_PLAN = """\
# Triage: find recent severe incidents that are still open, and summarise them.
search(query: "outage OR degraded", limit: 50)
  |> filter(where: severity >= 2 and status != "resolved")
  |> map(concurrency: 4, do: { get_incident(id: item.id) })
  |> summarize(style: "bullets", title: "Open sev2+ incidents")

decide(when: $2.length > 10, then: {
  notify(channel: "#incidents", text: "{$2.length} open incidents: {$4.text}")
})
"""


def run(command: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def check_command(plan: Path, env: dict) -> tuple[list[str], str]:
    """The console script if it works, else the CLI through the interpreter."""
    script = Path(sys.executable).parent / "planc"
    candidates = [
        ([str(script)], f"console script {script}"),
        # `python -m planc.cli` runs nothing (the module has no __main__ block), hence -c.
        (
            [sys.executable, "-c", "import sys; from planc.cli import main; sys.exit(main())"],
            f"{sys.executable} -c 'from planc.cli import main; main()'",
        ),
    ]
    for prefix, label in candidates:
        if prefix[0] == str(script) and not script.exists():
            continue
        command = prefix + ["check", "--format", "json", str(plan)]
        _, done = run(command, env)
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            continue
        if done.returncode == 0 and report.get("ok") is True:
            return command, label
    raise SystemExit("planc check did not run: neither the console script nor the -c form worked")


def importtime(command: list[str], env: dict, top: int = 15, runs: int = 5) -> None:
    """Print the `top` imports by cumulative time for `command` (median per module over `runs`)."""
    if command[0] != sys.executable:  # a console script: run its file with the interpreter
        command = [sys.executable] + command
    samples: dict[str, list] = {}
    order: dict[str, int] = {}
    for _ in range(runs):
        done = subprocess.run([command[0], "-X", "importtime", *command[1:]], env=env, capture_output=True, text=True)
        for line in done.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
            if match:
                self_us, cumulative_us, indent, name = match.groups()
                samples.setdefault(name, []).append((int(cumulative_us), int(self_us)))
                order.setdefault(name, len(indent) // 2)
    rows = [
        (statistics.median(c for c, _ in values), statistics.median(s for _, s in values), order[name], name)
        for name, values in samples.items()
    ]
    total = sum(cumulative for cumulative, _, depth, _ in rows if depth == 0)
    print(
        f"\n`python -X importtime` for the check (median per module of {runs} runs): {len(rows)} modules, "
        f"{total / 1000:.1f} ms at top level"
    )
    print(f"top {top} by cumulative time (depth = nesting under the import that pulled it in):")
    print(f"{'cumul ms':>9} {'self ms':>8} {'depth':>5}  module")
    for cumulative, self_us, depth, name in sorted(rows, reverse=True)[:top]:
        print(f"{cumulative / 1000:9.1f} {self_us / 1000:8.2f} {depth:>5}  {'  ' * depth}{name}")
    notable = [
        name
        for name in (
            "lark",
            "rich",
            "jsonschema",
            "yaml",
            "click",
            "attrs",
            "typing",
            "dataclasses",
            "json",
            "re",
            "importlib.metadata",
            "importlib.resources",
            "hashlib",
            "marshal",
            "threading",
            "bisect",
            "difflib",
        )
        if name in samples
    ]
    print("of note, loaded: " + ", ".join(notable))
    if "lark" in samples:
        print(
            "warning: the check imported Lark, so it built the grammar's tables: their cache "
            "($XDG_CACHE_HOME or ~/.cache, planc/grammar-*.marshal) is missing or cannot be written, "
            "and every process pays for the analysis"
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="planc-startup-") as scratch:
        env = dict(os.environ)
        dont_write = env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pycache")
        plan = Path(scratch) / "small.plan"
        plan.write_text(SMALL_PLAN, encoding="utf-8")
        command, label = check_command(plan, env)
        baseline = [sys.executable, "-c", "pass"]
        for _ in range(WARMUP):  # fills the bytecode and grammar caches, warms the OS
            run(command, env)
            run(baseline, env)
        planc_times, python_times = [], []
        for _ in range(RUNS):  # interleaved, so drift in machine load hits both alike
            planc_times.append(run(command, env)[0])
            python_times.append(run(baseline, env)[0])
        planc_ms = statistics.median(planc_times) * 1000
        python_ms = statistics.median(python_times) * 1000
        ratio = planc_ms / python_ms
        print(
            f"planc start-up: {sys.executable} (Python {sys.version.split()[0]}), "
            f"median of {RUNS} runs each after {WARMUP} warm-up runs"
        )
        print(f"  check command: {label} check --format json small.plan")
        if dont_write is not None:
            print("  (PYTHONDONTWRITEBYTECODE was set; runs use a temporary PYTHONPYCACHEPREFIX instead)")
        print(f"{'':28} {'median ms':>9} {'min ms':>7} {'max ms':>7}")
        print(f"{'python -c pass':28} {python_ms:9.1f} {min(python_times) * 1000:7.1f} {max(python_times) * 1000:7.1f}")
        print(f"{'planc check --format json':28} {planc_ms:9.1f} {min(planc_times) * 1000:7.1f} {max(planc_times) * 1000:7.1f}")
        print(f"ratio planc / python: {ratio:.1f}x (target <= 10x): {'PASS' if ratio <= 10 else 'FAIL'}")
        importtime(command, env)


if __name__ == "__main__":
    main()
