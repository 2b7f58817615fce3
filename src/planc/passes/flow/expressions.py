"""The labels of an expression's value: one walk, for the check (`flow.py`) and for a run (`backend/`).

What an expression reads decides what it carries: a reference carries the labels of the result it
reads (with the `x-labels` of the part it reads into), a bound name those of what it is bound to,
a template, list, record or condition the union of its parts; a literal carries none. Where the
labels of a result come from is the caller's to say (`Env`): the check's estimate before a run, the
values' own labels during one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from planc.registry.labels import NO_LABELS, LabelView, union
from planc.syntax import ast


class Env(Protocol):
    """Where the labels of what an expression reads come from."""

    def ref_view(self, ref: ast.Ref) -> LabelView:
        """The labels of what `ref`'s name (`$2`, `$hits`, `$args`) stands for, before its accessors."""

    def name_view(self, head: str) -> LabelView:
        """The labels of a bound name (`item`, `index`, `accumulator`, a field of a filter's item)."""


def expr_labels(expr, env: Env) -> frozenset[str]:
    """Every label `expr`'s value carries."""
    return expr_view(expr, env).whole()


def expr_view(expr, env: Env) -> LabelView:
    """The labels of `expr`'s value, with the schema of its parts where it reads a labelled result."""
    kind = type(expr)
    if kind is ast.Ref:
        return env.ref_view(expr).read(expr.accessors)
    if kind is ast.Path:
        if expr.head.text == "args":  # never bound by a block: the resolver reports it
            return LabelView()
        return env.name_view(expr.head.text).read(expr.accessors)
    labels = NO_LABELS
    for part in parts(expr):
        labels = union(labels, expr_view(part, env).whole())
    return LabelView(labels)


def parts(expr) -> tuple:
    """The expressions `expr` is made of (a block is none: its steps have their own)."""
    kind = type(expr)
    if kind is ast.String:
        return tuple(part.target for part in expr.parts if not isinstance(part, str))
    if kind is ast.ListExpr:
        return expr.items
    if kind is ast.Record:
        return tuple(entry.value for entry in expr.entries)
    if kind is ast.Compare:
        return (expr.left, expr.right)
    if kind is ast.Not:
        return (expr.operand,)
    if kind in (ast.And, ast.Or):
        return expr.operands
    return ()


def carriers(expr, env: Env) -> Iterator[tuple[object, frozenset[str]]]:
    """Each reference or bound name in `expr` that carries labels, with them: what a refusal points at."""
    kind = type(expr)
    if kind in (ast.Ref, ast.Path):
        labels = expr_labels(expr, env)
        if labels:
            yield expr, labels
        return
    for part in parts(expr):
        yield from carriers(part, env)
