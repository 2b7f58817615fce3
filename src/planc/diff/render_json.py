"""A diff as data: `planc diff --format json`, and one line per change for
the corpus."""

from __future__ import annotations

import json

from planc.diff.changes import Change, Diff


def render_json(diff: Diff) -> str:
    """`{"same": bool, "changes": [{"kind", "step_a", "step_b", "tool", "args": {name: {"a", "b"}}}]}`
    on one line; each change has its `"risk"` too when the registry was asked (`risk.py`)."""
    return json.dumps({"same": diff.same, "changes": [change_data(change) for change in diff.changes]}, ensure_ascii=False)


def change_data(change: Change) -> dict:
    data: dict[str, object] = {
        "kind": change.kind,
        "step_a": change.step_a,
        "step_b": change.step_b,
        "tool": change.tool,
        "args": {name: {"a": arg.a, "b": arg.b} for name, arg in change.args.items()},
    }
    if change.risk is not None:
        data["risk"] = list(change.risk)
    return data


def change_line(change: Change) -> str:
    """`changed 3 4 search limit query`: the kind, the paths in A and B (`-` for none), the tool,
    and for a changed step the names of the changed arguments, sorted."""
    line = f"{change.kind} {change.step_a or '-'} {change.step_b or '-'} {change.tool}"
    if change.kind == "changed":
        line += "".join(f" {name}" for name in sorted(change.args))
    return line
