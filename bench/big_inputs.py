"""Big inputs stay linear: a plan with a huge string.

    .venv/bin/python bench/big_inputs.py

1. **A huge string.** Plans of one step whose argument is a string of 1 MB and of 10 MB, in two
   kinds: plain letters, and text with an escape and literal braces every few words (what a
   pasted document looks like). Times `planc.parse` alone (the baseline) and `planc.check`,
   prints check / parse and each size's parse time per MB against the 1 MB row of its kind.

Best of 3 samples, garbage collector on. Compare the ratios, not the times: they are measured in
the same run, on the same machine.
"""

from __future__ import annotations

import gc
import time

import planc

MB = 1_000_000
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
            parse = best(lambda: planc.parse(text))
            check = best(lambda: planc.check(text))
            per_mb = parse / (size / MB)
            first = first or per_mb
            print(f"{kind:6} {size // MB:>4}MB {parse * 1e3:9.1f} {check * 1e3:9.1f} {check / parse:11.2f}x "
                  f"{per_mb / first:16.2f}x")


if __name__ == "__main__":
    huge_strings()
