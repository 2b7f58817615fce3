"""Loading a planc.toml: what keeping each JSON Schema check's answer (registry/settings/schema_check.py) saves.

    .venv/bin/python bench/registry_load.py           # the table (about 30 s on a quiet machine, two minutes under load)
    .venv/bin/python bench/registry_load.py --quick   # fewer rounds, for a smoke run

Loads the same planc.toml (`registry_from_text`) in one process, first with no answer kept (the
baseline: every schema checked against its metaschema, as before), then as a process loads it again
and again (the suite, the language server, a service): the answers kept. Two files: examples/incidents/planc.toml, and one of
40 tools with 4 parameters each, the same few schemas again and again. Best of the rounds, per load.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from planc.registry.loading.config import registry_from_text  # noqa: E402
from planc.registry.settings import schema_check  # noqa: E402

KINDS = (
    '{ type = "string" }',
    '{ type = "integer", minimum = 0 }',
    '{ type = "boolean" }',
    '{ type = "array", items = { type = "string" } }',
)
MANY = "".join(
    f"[tools.tool{n}]\nparams = {{ {', '.join(f'p{i} = {kind}' for i, kind in enumerate(KINDS))} }}\n"
    f'required = ["p0"]\neffects = {{ read_only = true }}\n\n'
    for n in range(40)
)
FILES = {
    "examples/incidents/planc.toml": (ROOT / "examples" / "incidents" / "planc.toml").read_text(encoding="utf-8"),
    "40 tools x 4 params": MANY,
}


KEPT = schema_check._checked_json


def per_load(text: str, keep: bool, loads: int, rounds: int) -> float:
    """Seconds per load of `text`, best of `rounds` rounds of `loads` loads."""
    schema_check._checked_json = KEPT if keep else lambda schema: schema_check._checked(json.loads(schema))
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(loads):
            registry_from_text(text, ROOT / "examples" / "incidents" / "planc.toml", locked=False)
        best = min(best, (time.perf_counter() - started) / loads)
    schema_check._checked_json = KEPT
    return best


def main() -> None:
    quick = "--quick" in sys.argv
    loads, rounds = (3, 2) if quick else (20, 5)
    print(f"{'planc.toml':30} {'each checked':>12} {'answers kept':>13} {'ratio':>7}")
    for name, text in FILES.items():
        afresh = per_load(text, False, loads, rounds)
        kept = per_load(text, True, loads, rounds)
        print(f"{name:30} {afresh * 1e3:9.2f} ms {kept * 1e3:10.2f} ms {afresh / kept:6.1f}x")


if __name__ == "__main__":
    main()
