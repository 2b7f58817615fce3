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
from planc.syntax.steps import children


class Env(Protocol):
    """Where the labels of what an expression reads come from."""

    def ref_view(self, ref: ast.Ref) -> LabelView:
        """The labels of what `ref`'s name (`$2`, `$hits`, `$args`) stands for, before its accessors."""

    def name_view(self, head: str) -> LabelView:
        """The labels of a bound name (`item`, `index`, `accumulator`, a field of a filter's item)."""


def expr_labels(expr, env: Env) -> frozenset[str]:
    """Every label `expr`'s value carries."""
    if type(expr) is ast.Literal:  # most arguments: nothing to read
        return NO_LABELS
    return expr_view(expr, env).whole()


def expr_view(expr, env: Env) -> LabelView:
    """The labels of `expr`'s value, with the schema of its parts where it reads a labelled result."""
    kind = type(expr)
    if kind is ast.Ref:
        return env.ref_view(expr).read(expr.accessors)
    if kind is ast.Path:
        return env.name_view(expr.head.text).read(expr.accessors)
    labels = NO_LABELS
    for part in children(expr):
        labels = union(labels, expr_labels(part, env))
    return LabelView(labels)


def carriers(expr, env: Env) -> Iterator[tuple[object, frozenset[str]]]:
    """Each reference or bound name in `expr` that carries labels, with them: what a refusal points at."""
    kind = type(expr)
    if kind in (ast.Ref, ast.Path):
        labels = expr_labels(expr, env)
        if labels:
            yield expr, labels
        return
    for part in children(expr):
        yield from carriers(part, env)
