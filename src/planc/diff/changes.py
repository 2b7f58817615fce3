"""The change list of a diff: what was added, removed, changed and moved, given the matching.

- A step of B with no partner is `added`, a step of A with no partner `removed`. The steps
  inside an added or removed step are part of it, not changes of their own; so are the steps
  of a block that only one of two matched steps has (that argument is a change).
- Matched steps whose arguments differ are `changed`, with each differing argument's text in
  A and in B (`None` where the step has no such argument). Labels are names, never changes.
  A changed piped input (`|>`) is the argument `|>`, its value the step it comes from.
- A matched step is `moved` when it is not in the longest run of matched steps that keep
  their order in its frame, so one step inserted or moved is one change, not a cascade.

Changes come in the order of plan B, removed steps where they were.
"""

from __future__ import annotations

import attrs

from planc.diff.match import Matching
from planc.diff.plan_view import PlanView
from planc.diff.sequence import longest_increasing
from planc.syntax import ast
from planc.syntax.printer import print_expr, print_step

PIPE = "|>"
KINDS = ("moved", "changed", "added", "removed")  # and the order of changes to one place


@attrs.frozen
class ArgChange:
    a: str | None  # the argument's canonical text in A; None where it is absent
    b: str | None


@attrs.frozen
class Change:
    kind: str  # one of KINDS
    step_a: str | None  # the step's path in A; None for an added step
    step_b: str | None  # the step's path in B; None for a removed step
    tool: str
    args: dict  # argument name -> ArgChange: the changed ones, or all of an added or removed step
    text_a: str | None  # the step in A, in canonical form
    text_b: str | None
    # What the steps it touches may do, once a registry was asked (`risk.py`): some of `risk.RISKS`,
    # none for a change of steps that are read-only and closed-world; None when no registry was asked.
    risk: tuple[str, ...] | None = None


@attrs.frozen
class Diff:
    changes: tuple[Change, ...]

    @property
    def same(self) -> bool:
        return not self.changes


def list_changes(view_a: PlanView, view_b: PlanView, matching: Matching) -> Diff:
    """The changes from plan A to plan B, in the order of B."""
    partners, partners_b = matching.partners, matching.partners_b
    found: list[tuple[tuple, Change]] = []
    removed_places = _removed_places(view_a, view_b, partners)

    def at_b(b: ast.Step, kind: str, change: Change) -> None:
        found.append(((view_b.order[b], KINDS.index(kind), 0), change))

    for steps_a, steps_b in matching.frames:
        where_b = {b: j for j, b in enumerate(steps_b)}
        pairs = [(a, partners[a]) for a in steps_a if a in partners]
        in_order = {pairs[n][0] for n in longest_increasing([where_b[b] for _, b in pairs])}
        for a, b in pairs:
            if a not in in_order:
                at_b(b, "moved", _change("moved", a, b, {}, view_a, view_b))
            args = _changed_args(a, b, view_a, view_b, matching)
            if args:
                at_b(b, "changed", _change("changed", a, b, args, view_a, view_b))
        for b in steps_b:
            if b not in partners_b:
                at_b(b, "added", _change("added", None, b, _all_args(b, "b"), view_a, view_b))
        found += [
            (removed_places[a], _change("removed", a, None, _all_args(a, "a"), view_a, view_b))
            for a in steps_a
            if a not in partners
        ]
    found.sort(key=lambda entry: entry[0])
    return Diff(tuple(change for _, change in found))


def _change(kind: str, a: ast.Step | None, b: ast.Step | None, args: dict, view_a: PlanView, view_b: PlanView) -> Change:
    step = a if b is None else b
    assert step is not None  # a change has a step on one side at least
    return Change(
        kind,
        view_a.paths[a] if a is not None else None,
        view_b.paths[b] if b is not None else None,
        step.tool.text,
        args,
        print_step(a) if a is not None else None,
        print_step(b) if b is not None else None,
    )


def _removed_places(view_a: PlanView, view_b: PlanView, partners: dict) -> dict:
    """Where each step of A without a partner sorts: just after the partner of the nearest
    matched step before it in A."""
    places, place = {}, -1
    for step, number in view_a.order.items():  # text order
        if step in partners:
            place = view_b.order[partners[step]]
        else:
            places[step] = (place + 0.5, KINDS.index("removed"), number)
    return places


def _changed_args(a: ast.Step, b: ast.Step, view_a: PlanView, view_b: PlanView, matching: Matching) -> dict:
    args_a = {arg.name.text: arg.value for arg in a.args}
    args_b = {arg.name.text: arg.value for arg in b.args}
    same = matching.comparison.same_value
    changed = {}
    for name in list(args_a) + [name for name in args_b if name not in args_a]:
        value_a, value_b = args_a.get(name), args_b.get(name)
        if value_a is None or value_b is None or not same(value_a, value_b):
            changed[name] = ArgChange(_text(value_a), _text(value_b))
    piped = a in view_a.piped_from or b in view_b.piped_from
    if piped and not matching.comparison.same_input(a, b):
        changed[PIPE] = ArgChange(_source(a, view_a), _source(b, view_b))
    return changed


def _all_args(step: ast.Step, side: str) -> dict:
    texts = {arg.name.text: print_expr(arg.value) for arg in step.args}
    return {name: ArgChange(None, text) if side == "b" else ArgChange(text, None) for name, text in texts.items()}


def _text(value: ast.Expr | None) -> str | None:
    return print_expr(value) if value is not None else None


def _source(step: ast.Step, view: PlanView) -> str | None:
    source = view.piped_from.get(step)
    return f"step {view.paths[source]}" if source is not None else None
