"""`planc check --format json`: one object per plan file."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planc.passes.check import CheckResult


def check_json(file: str, result: CheckResult) -> dict:
    """The CheckResult of `file` as JSON data: what `planc check --format json` prints, and `planc mcp`'s
    `check_plan` answers."""
    return {
        "file": file,
        "ok": result.ok,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        "steps": result.steps,
        "cost": result.cost.total.to_json() if result.cost else None,  # None: the plan did not parse
    }


def render_json(file: str, result: CheckResult) -> str:
    """One line of JSON for the CheckResult of `file`."""
    return json.dumps(check_json(file, result), ensure_ascii=False)
