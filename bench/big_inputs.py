"""Big inputs stay linear: a plan with a huge string, and a plan with 20,000 diagnostics.

    .venv/bin/python bench/big_inputs.py

1. **A huge string.** Plans of one step whose argument is a string of 1 MB and of 10 MB, in two
   kinds: plain letters, and text with an escape and literal braces every few words (what a
   pasted document looks like). Times `planc.parse` alone (the baseline) and `planc.check`,
   prints check / parse and each size's parse time per MB against the 1 MB row of its kind.
2. **20,000 diagnostics.** A plan of 20,000 steps `summarize(style: bullets)` (each E206, with a
   fix) is checked once; then what `planc check` prints is timed, written to memory as it would
   be to a file or a pipe: `--format line` (the baseline), the default text format (the first
   100 diagnostics and a line counting the rest) and `--max-diagnostics 0` (all of them); then
   the same three as whole `planc check` processes writing to /dev/null (median of 5).

Best of 3 samples, garbage collector on. Compare the ratios, not the times: they are measured in
the same run, on the same machine.
"""

from __future__ import annotations

import contextlib
import gc
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import planc
from planc.cli.printing import print_checked
from planc.diagnostics.render_line import render_line

MB = 1_000_000
PLANC = str(Path(sys.executable).with_name("planc"))
KINDS = {"plain": "x" * 40, "text": 'word \\"quoted\\" {literal} braces \\n and '}


def best(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def string_plan(kind: str, size: int) -> str:
    unit = KINDS[kind]
    return 'note(text: "' + unit * (size // len(unit)) + '")\n'


def huge_strings() -> None:
    print("a plan with one huge string: parse alone vs the whole check")
    print(f"{'kind':6} {'size':>6} {'parse ms':>9} {'check ms':>9} {'check/parse':>12} {'parse/MB vs 1 MB':>17}")
    for kind in KINDS:
        first = None
        for size in (MB, 10 * MB):
            text = string_plan(kind, size)
            result = planc.check(text)
            if not result.ok or result.diagnostics:
                raise SystemExit(f"the {kind} plan should check clean: {result.diagnostics[:3]}")
            parse = best(lambda text=text: planc.parse(text))
            check = best(lambda text=text: planc.check(text))
            per_mb = parse / (size / MB)
            first = first or per_mb
            print(
                f"{kind:6} {size // MB:>4}MB {parse * 1e3:9.1f} {check * 1e3:9.1f} {check / parse:11.2f}x {per_mb / first:16.2f}x"
            )


def many_diagnostics(count: int = 20_000) -> None:
    result = planc.check("summarize(style: bullets)\n" * count)
    results = [("plan.plan", result)]

    def line() -> None:
        out = io.StringIO()
        for diagnostic in result.diagnostics:
            out.write(render_line(diagnostic, "plan.plan") + "\n")

    def text(limit: int):
        def printed() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                print_checked(results, limit=limit)

        return printed

    baseline = best(line)
    print(f"\n{len(result.diagnostics):,} diagnostics printed to memory (no terminal), as `planc check` prints them")
    print(f"{'format':34} {'ms':>9} {'vs line':>8}")
    for name, function in (
        ("--format line (baseline)", line),
        ("text (default: 100 and a count)", text(100)),
        ("text --max-diagnostics 0 (all)", text(0)),
    ):
        took = baseline if function is line else best(function)
        print(f"{name:34} {took * 1e3:9.1f} {took / baseline:7.2f}x")
    with tempfile.TemporaryDirectory() as folder:
        plan = Path(folder) / "plan.plan"
        plan.write_text("summarize(style: bullets)\n" * count, encoding="utf-8")
        commands = {
            "--format line (baseline)": ["--format", "line"],
            "text (default)": [],
            "text --max-diagnostics 0": ["--max-diagnostics", "0"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(5):  # interleaved, so that the load of the machine falls on each alike
            for name, options in commands.items():
                start = time.perf_counter()
                subprocess.run([PLANC, "check", *options, str(plan)], stdout=subprocess.DEVNULL, check=False)
                times[name].append(time.perf_counter() - start)
        print("\nthe same plan through `planc check` to /dev/null, whole process, median of 5")
        print(f"{'command':34} {'ms':>9} {'vs line':>8}")
        line_ms = statistics.median(times["--format line (baseline)"])
        for name, taken in times.items():
            print(f"{name:34} {statistics.median(taken) * 1e3:9.1f} {statistics.median(taken) / line_ms:7.2f}x")


if __name__ == "__main__":
    huge_strings()
    many_diagnostics()
