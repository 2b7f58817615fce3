"""A diff for people, like a code review: one line per change, the step in canonical form,
each changed argument on a line of its own with its old and new value (colour only on a
terminal).

    --- a.plan
    +++ b.plan
    + step 1          web(query: "x")
    ~ step 3 (was 2)  search(query: "x", limit: 100)
                        limit: 50 -> 100
    2 changes: 1 added, 1 changed

When the registry was asked what the changed steps may do (`risk.py`), the risky changes come
first, each marked `!` with a line `risk: ...`, and the summary counts them:

    --- a.plan
    +++ b.plan
    ! + step 2  notify(channel: "#ops", text: "x")
                  risk: effectful, open-world
      ~ step 1  search(query: "x", limit: 100)
                  limit: 50 -> 100
    2 changes: 1 added, 1 changed; 1 risky
"""

from __future__ import annotations

from rich.text import Text

from planc.diff.changes import Change, Diff

MARKS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow"), "moved": (">", "cyan")}
RISKY, NOT_RISKY = "! ", "  "  # before the mark of each change, when its risk is known


def render_text(diff: Diff, name_a: str, name_b: str) -> Text:
    out = Text()
    out.append(f"--- {name_a}\n", "bold red")
    out.append(f"+++ {name_b}\n", "bold green")
    assessed = any(change.risk is not None for change in diff.changes)
    changes = sorted(diff.changes, key=lambda change: not change.risk) if assessed else diff.changes  # stable
    gutter = len(RISKY) if assessed else 0
    places = [_place(change) for change in changes]
    width = max(map(len, places), default=0) + 2
    for change, place in zip(changes, places):
        mark, style = MARKS[change.kind]
        if assessed:
            out.append(RISKY if change.risk else NOT_RISKY, "bold red")
        out.append(f"{mark} ", f"bold {style}")
        out.append(place.ljust(width), "dim")
        _append_step(out, change, " " * (gutter + width + 2), style)
        if change.risk:
            out.append(" " * (gutter + width + 4))
            out.append(f"risk: {', '.join(change.risk)}\n", "bold red")
        if change.kind == "changed":
            _append_args(out, change, " " * (gutter + width + 4))
    out.append(_summary(diff, assessed), "bold" if diff.same else "")
    return out


def _place(change: Change) -> str:
    if change.kind == "removed":
        return f"step {change.step_a}"
    moved = change.kind == "moved" or change.step_a != change.step_b
    return f"step {change.step_b}" + (f" (was {change.step_a})" if moved and change.step_a else "")


def _append_step(out: Text, change: Change, indent: str, style: str) -> None:
    text = change.text_a if change.kind == "removed" else change.text_b
    assert text is not None  # a removed step is in A, any other in B
    lines = text.split("\n")
    if change.kind in ("changed", "moved") and len(lines) > 1:
        lines = [lines[0] + " ..."]  # its blocks' steps are diffed as steps of their own
    out.append(("\n" + indent).join(lines), style if change.kind in ("added", "removed") else "")
    out.append("  moved\n" if change.kind == "moved" else "\n", "cyan")


def _append_args(out: Text, change: Change, indent: str) -> None:
    for name, arg in change.args.items():
        out.append(indent)
        out.append(f"{name}: ", "bold")
        out.append(arg.a if arg.a is not None else "(none)", "red" if arg.a is not None else "dim")
        out.append(" -> ")
        out.append(arg.b if arg.b is not None else "(none)", "green" if arg.b is not None else "dim")
        if arg.a == arg.b:
            out.append("  (the same text, now another step)", "dim")
        out.append("\n")


def _summary(diff: Diff, assessed: bool) -> str:
    if diff.same:
        return "same: no step was added, removed, changed or moved\n"
    counts = {kind: sum(change.kind == kind for change in diff.changes) for kind in MARKS}
    listed = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    if assessed:
        listed += f"; {sum(bool(change.risk) for change in diff.changes)} risky"
    total = len(diff.changes)
    return f"{total} change{'s' if total != 1 else ''}: {listed}\n"
