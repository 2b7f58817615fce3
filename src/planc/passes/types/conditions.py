"""Conditions in the types pass: E302 for a value where a condition is expected, and comparisons.

`<`, `<=`, `>`, `>=` need two numbers or two strings and `contains` a string or
a list on its left (E300); `==`/`!=` with a literal outside the other side's
`enum` is W503.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from planc.analysis.literals import NOT_LITERAL, literal_value, meant_fix
from planc.analysis.schema_words import describe, describe_value
from planc.diagnostics import Diagnostic
from planc.diagnostics.build import diagnostic
from planc.registry.tools.schemas import BOOLEAN, NULL, compatible, enum_of, json_equal, kinds
from planc.syntax import ast

ORDERING = ("<", "<=", ">", ">=")
ORDERED = frozenset({"integer", "number", "string"})
# How a value of each type becomes a condition, for E302's hint.
COMPARABLE = {"array": ".length > 0", "string": ' != ""', "integer": " > 0", "number": " > 0"}


class Conditions:
    """The condition checks of the types pass's walker, which provides `value_type(expr, env)`,
    `types`, `text(node)`, `words(expr, type)`, `diagnostics` and `path` (the step being checked)."""

    if TYPE_CHECKING:  # what the walker provides
        types: dict
        diagnostics: list[Diagnostic]
        path: str | None

        def value_type(self, expr: ast.Expr, env: dict) -> Any: ...
        def text(self, node: ast.Expr) -> str: ...
        def words(self, expr: ast.Expr, found: object) -> str: ...

    def check_condition(self, expr: ast.Expr, env: dict) -> None:
        """E302 for a value where a condition is expected; comparisons checked."""
        if isinstance(expr, ast.Compare):
            self.check_compare(expr, env)
        elif isinstance(expr, ast.Not):
            self.check_condition(expr.operand, env)
        elif isinstance(expr, (ast.And, ast.Or)):
            for operand in expr.operands:
                self.check_condition(operand, env)
        else:
            found = self.value_type(expr, env)
            if isinstance(expr, (ast.String, ast.ListExpr, ast.Record, ast.Block)) or not compatible(found, BOOLEAN):
                if isinstance(expr, ast.String):
                    hint = 'to ask the judge model a yes/no question, use `infer: "..."` instead'
                elif isinstance(expr, (ast.Ref, ast.Path)) and _comparison(kinds(found)):
                    hint = f"compare it, like `{self.text(expr)}{_comparison(kinds(found))}`"
                else:
                    hint = "write a comparison, like `$1.count > 0`, or a reference to a boolean"
                self.diagnostics.append(
                    diagnostic("E302", "not_condition", expr.span, step=self.path, hints=[hint], found=self.words(expr, found))
                )
        self.types[expr] = BOOLEAN

    def check_compare(self, compare: ast.Compare, env: dict) -> None:
        left, right = self.value_type(compare.left, env), self.value_type(compare.right, env)
        op = compare.op
        if op in ORDERING:
            left_kinds, right_kinds = kinds(left), kinds(right)
            if left_kinds is None or right_kinds is None or left_kinds & right_kinds & ORDERED:
                return
            have = (left_kinds, right_kinds)
            wrong = next((side for side, found in zip((compare.left, compare.right), have) if not found & ORDERED), compare)
            hints = ["`.length` is the length of a list or a string"] if any("array" in found for found in have) else []
            self.diagnostics.append(
                diagnostic(
                    "E300", "ordering", wrong.span, step=self.path, hints=hints, op=op, left=describe(left), right=describe(right)
                )
            )
        elif op == "contains":
            found = kinds(left)
            if found is not None and not found & {"string", "array"}:
                self.diagnostics.append(
                    diagnostic(
                        "E300",
                        "contains",
                        compare.left.span,
                        step=self.path,
                        left=describe(left),
                        hints=["`a contains b` is substring for strings and membership for lists"],
                    )
                )
        else:
            self.check_enum(compare, compare.left, compare.right)
            self.check_enum(compare, compare.right, compare.left)

    def check_enum(self, compare: ast.Compare, typed: ast.Expr, other: ast.Expr) -> None:
        """W503 when `typed` has an `enum` and `other` is a literal outside it."""
        allowed = enum_of(self.types.get(typed))
        if allowed is None or type(other) not in (ast.Literal, ast.String):
            return
        value = literal_value(other)
        if value is NOT_LITERAL or value is None or any(json_equal(value, option) for option in allowed):
            return
        values = ", ".join(json.dumps(option, ensure_ascii=False) for option in allowed)
        fix, hints = meant_fix(allowed, value, other)
        hints.append(f"`{self.text(typed)}` is one of {values}")
        words = {"value": describe_value(value), "typed": self.text(typed)}
        if compare.op == "==":
            self.diagnostics.append(diagnostic("W503", "never_equal", other.span, step=self.path, hints=hints, fix=fix, **words))
        else:
            self.diagnostics.append(
                diagnostic("W503", "always_unequal", other.span, step=self.path, hints=hints, fix=fix, **words)
            )


def _comparison(found: frozenset | None) -> str | None:
    """How a value of the types `found` becomes a condition (`.length > 0` for a list), if one way fits all."""
    ways = {COMPARABLE.get(kind) for kind in (found or NULL) - NULL}
    return ways.pop() if len(ways) == 1 else None
