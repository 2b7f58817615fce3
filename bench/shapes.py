"""What learning a shape adds to recording a call's result in the run store.

    .venv/bin/python bench/shapes.py           # the table (about 20 s)
    .venv/bin/python bench/shapes.py --quick   # fewer calls, for a smoke run

Records the same calls into a real SQLite store (a temporary file, `synchronous=FULL` as every run
has it) twice in each round: `call_started` then `call_ended` as a plain recorded call (the baseline), and
as a call of a trusted tool without `returns`, whose `call_ended` also widens the tool's learned shape in
the same transaction. Three results: a small record, a list of 20 records, and a list of 500 records.
Prints the time per call of each, best of the rounds, and the ratio to the baseline.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from planc.store.run_store import RunStore  # noqa: E402

RESULTS = {
    "one record": {"id": "INC-1", "title": "Disk full", "status": "open", "tags": ["disk", "db"]},
    "20 records": [{"id": f"INC-{i}", "title": f"Incident {i}", "score": i / 3, "tags": ["a"] * (i % 4)} for i in range(20)],
    "500 records": [{"id": f"INC-{i}", "title": f"Incident {i}", "score": i / 3, "tags": ["a"] * (i % 4)} for i in range(500)],
}


def per_call(store: RunStore, run_id: str, first: int, calls: int, result, learn: str | None) -> float:
    started = time.perf_counter()
    for sequence in range(first, first + calls):
        store.call_started(run_id, sequence, "1", "lookup", {"id": "x"})
        store.call_ended(run_id, sequence, "ok", result, learn=learn)
    return (time.perf_counter() - started) / calls


def main() -> None:
    quick = "--quick" in sys.argv
    calls, rounds = (20, 2) if quick else (100, 5)
    print(f"{calls} recorded calls per sample, best of {rounds} rounds")
    print(f"{'result':<14} {'recorded':>12} {'and learned':>12} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(Path(folder) / "runs.sqlite")
        run_id = store.start_run({"plan": "bench"}, {})
        sequence = 1
        for name, result in RESULTS.items():
            plain, learned = [], []
            for _ in range(rounds):
                plain.append(per_call(store, run_id, sequence, calls, result, None))
                sequence += calls
                learned.append(per_call(store, run_id, sequence, calls, result, "lookup"))
                sequence += calls
            base, taught = min(plain), min(learned)
            print(f"{name:<14} {base * 1e3:>9.3f} ms {taught * 1e3:>9.3f} ms {taught / base:>6.2f}x")
        store.close()


if __name__ == "__main__":
    main()
