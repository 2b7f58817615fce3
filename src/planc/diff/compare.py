"""Comparing two steps' arguments once some steps are matched: a reference is the same when
it points at the partner of the step the other one points at, whatever its number or label."""

from __future__ import annotations

from typing import Any

from planc.diff.plan_view import PlanView, accessor_key, reads_args
from planc.syntax import ast


class Comparison:
    """Compares values of plan A with values of plan B under the matching so far.

    `partners` (A step -> B step) and `partners_b` (B step -> A step) are the matcher's own
    dicts, so comparisons always see its latest pairs.
    """

    def __init__(self, view_a: PlanView, view_b: PlanView, partners: dict, partners_b: dict) -> None:
        self.view_a, self.view_b = view_a, view_b
        self.partners, self.partners_b = partners, partners_b

    def same_value(self, a: Any, b: Any) -> bool:  # two expressions (ast.Expr), tested for one class first
        """Whether expressions `a` (in A) and `b` (in B) mean the same. Blocks count as the same
        here: their steps are diffed as steps."""
        kind = type(a)
        if kind is not type(b):
            return False
        if kind is ast.Ref:
            return self._same_ref(a, b)
        if kind is ast.String:
            return len(a.parts) == len(b.parts) and all(
                x == y if type(x) is str else type(y) is ast.Hole and self.same_value(x.target, y.target)
                for x, y in zip(a.parts, b.parts)
            )
        if kind is ast.Literal:
            return type(a.value) is type(b.value) and a.value == b.value
        if kind is ast.Path:
            return a.head.text == b.head.text and accessor_key(a.accessors) == accessor_key(b.accessors)
        if kind is ast.ListExpr:
            return len(a.items) == len(b.items) and all(map(self.same_value, a.items, b.items))
        if kind is ast.Record:
            entries_a = sorted(a.entries, key=lambda entry: entry.key.text)
            entries_b = sorted(b.entries, key=lambda entry: entry.key.text)
            return len(entries_a) == len(entries_b) and all(
                x.key.text == y.key.text and self.same_value(x.value, y.value) for x, y in zip(entries_a, entries_b)
            )
        if kind is ast.Block:
            return True
        if kind is ast.Compare:
            return a.op == b.op and self.same_value(a.left, b.left) and self.same_value(a.right, b.right)
        if kind is ast.Not:
            return self.same_value(a.operand, b.operand)
        return len(a.operands) == len(b.operands) and all(map(self.same_value, a.operands, b.operands))

    def _same_ref(self, a: ast.Ref, b: ast.Ref) -> bool:
        if accessor_key(a.accessors) != accessor_key(b.accessors):
            return False
        target_a, target_b = self.view_a.targets.get(a), self.view_b.targets.get(b)
        if target_a is None or target_b is None:  # unresolved: compared as written
            return target_a is target_b and a.name.text == b.name.text
        if reads_args(target_a) or reads_args(target_b):
            return reads_args(target_a) and reads_args(target_b)
        return self.partners.get(target_a) is target_b

    def same_input(self, a: ast.Step, b: ast.Step) -> bool:
        """Whether `|>` passes `a` and `b` the results of partner steps. An added or removed step
        in a pipeline is looked through: the step after it reads what it would have read."""
        source_a = _upstream(a, self.view_a, self.partners)
        source_b = _upstream(b, self.view_b, self.partners_b)
        if source_a is None or source_b is None:
            return source_a is source_b
        return self.partners.get(source_a) is source_b

    def similarity(self, a: ast.Step, b: ast.Step) -> float:
        """The share of `a`'s and `b`'s arguments (and piped input) that are the same, 0 to 1."""
        args_a = {arg.name.text: arg.value for arg in a.args}
        args_b = {arg.name.text: arg.value for arg in b.args}
        same = sum(self.same_value(value, args_b[name]) for name, value in args_a.items() if name in args_b)
        total = len(args_a.keys() | args_b.keys())
        if a in self.view_a.piped_from or b in self.view_b.piped_from:
            same += self.same_input(a, b)
            total += 1
        return same / total if total else 1.0


def _upstream(step: ast.Step, view: PlanView, matched: dict) -> ast.Step | None:
    """The nearest step before `step` in its pipeline that has a partner, if any."""
    source = view.piped_from.get(step)
    while source is not None and source not in matched:
        source = view.piped_from.get(source)
    return source
