"""`planc check --format json`: one object per plan file."""

from __future__ import annotations

import json


def render_json(file: str, result) -> str:
    """One line of JSON for the CheckResult of `file`."""
    return json.dumps({
        "file": file,
        "ok": result.ok,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        "steps": result.steps,
        "cost": result.cost.total.to_json() if result.cost else None,  # None: the plan did not parse
    }, ensure_ascii=False)
