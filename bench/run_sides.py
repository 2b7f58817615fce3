"""One side of a paired comparison of run costs: this checkout's against another's, alternated.

    .venv/bin/python bench/run_sides.py BENCH_FOLDER

prints, as one JSON line, the best of 7 samples (5 for the recorded run) in process time of: run_plan
on 1,000 steps `aecho(x: N)` and on a `map` of 1,000 `reshape(value: item)`, per step; and
`planc.run` (every door's launcher) on the 1,000 steps unrecorded, and on 50 steps recorded into an
SQLite store in /dev/shm. BENCH_FOLDER is the `bench/` whose run.py sets up the tools (its checkout's
planc is the one imported: PYTHONPATH=OTHER/src for another checkout's). docs/performance.md gives the
loop that alternates two checkouts.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    import run as bench  # that checkout's bench/run.py

    import planc

    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="planc-sides-", dir=shm) as folder:
        made = bench.Bench(Path(folder))
        out = {}
        steps = bench.steps_plan("aecho")
        timed = made.runner(steps, bench.STEPS - 1)
        out["run_plan aecho us/step"] = bench.best(timed, 7, clock=time.process_time) * 1e6 / bench.STEPS
        timed = made.runner(bench.map_plan("reshape(value: item)", 1000), list(range(1000)))
        out["run_plan map reshape us/item"] = bench.best(timed, 7, clock=time.process_time) * 1e3
        checked = made.checked(steps)
        out["planc.run aecho us/step"] = (
            bench.best(lambda: planc.run(checked, registry=made.registry), 7, clock=time.process_time) * 1e6 / bench.STEPS
        )
        short, store = made.checked(bench.steps_plan("aecho", 50)), Path(folder) / "runs.sqlite"
        out["planc.run recorded us/step"] = (
            bench.best(lambda: planc.run(short, registry=made.registry, store=store), 5, clock=time.process_time) * 1e6 / 50
        )
    print(json.dumps({name: round(value, 2) for name, value in out.items()}))


if __name__ == "__main__":
    main()
