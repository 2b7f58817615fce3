"""The labels of an expression's value: one walk, for the check (the flow pass) and for a run (`backend/`).

What an expression reads decides what it carries: a reference carries the labels of the result it
reads (with the `x-labels` of the part it reads into), a bound name those of what it is bound to,
a record each field its own, a template, list or condition the union of its parts and of what the plan writes itself.
What the plan writes (a literal, a template's text) carries the labels of whoever wrote the plan
(`Env.written`): none for a plan file, those `planc mcp` gives a client's. Where the labels of a
result come from is the caller's to say (`Env`): the check's estimate before a run, the values' own
labels during one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from planc.registry.provenance.labels import NO_LABELS, LabelView, record_view, union, union_all
from planc.syntax import ast
from planc.syntax.steps import children


class View(Protocol):
    """The labels of a value, read into its parts: a LabelView, or the check's view of `$args`."""

    def read(self, accessors: Sequence[ast.Accessor]) -> LabelView: ...


class Env(Protocol):
    """Where the labels of what an expression reads come from."""

    @property
    def written(self) -> frozenset[str]:
        """What the plan's own text carries: the labels of whoever wrote it."""

    def ref_view(self, ref: ast.Ref) -> View:
        """The labels of what `ref`'s name (`$2`, `$hits`, `$args`) stands for, before its accessors."""

    def name_view(self, head: str) -> LabelView:
        """The labels of a bound name (`item`, `index`, `accumulator`, a field of a filter's item)."""


def expr_labels(expr: ast.Expr, env: Env) -> frozenset[str]:
    """Every label `expr`'s value carries."""
    if type(expr) is ast.Literal:  # most arguments: nothing to read
        return env.written
    return expr_view(expr, env).whole()


def expr_view(expr: ast.Expr, env: Env) -> LabelView:
    """The labels of `expr`'s value, with the schema of its parts where it reads a labelled result."""
    if isinstance(expr, ast.Ref):
        return env.ref_view(expr).read(expr.accessors)
    if isinstance(expr, ast.Path):
        return env.name_view(expr.head.text).read(expr.accessors)
    if isinstance(expr, ast.Record):  # each field carries what it was built from, apart from the others
        return record_view(NO_LABELS, {entry.key.text: expr_view(entry.value, env) for entry in expr.entries})
    labels = env.written if writes_text(expr) else NO_LABELS
    for part in children(expr):
        labels = union(labels, expr_labels(part, env))
    return LabelView(labels)


def writes_text(expr: ast.Expr) -> bool:
    """Whether `expr` is, or holds, text or a value the plan writes itself (a literal, a template's text),
    rather than only what it reads."""
    if isinstance(expr, ast.String):
        return not expr.parts or any(type(part) is str for part in expr.parts)
    return isinstance(expr, ast.Literal)


def carriers(expr: ast.Expr, env: Env) -> Iterator[tuple[ast.Expr, frozenset[str]]]:
    """Each reference or bound name in `expr` that carries labels, and each value the plan writes when its
    author's labels are not none, with them: what a refusal points at."""
    if env.written and writes_text(expr):
        yield expr, env.written
    if isinstance(expr, (ast.Ref, ast.Path)):
        labels = expr_labels(expr, env)
        if labels:
            yield expr, labels
        return
    for part in children(expr):
        yield from carriers(part, env)


class ArgsView:
    """The labels of `$args`: each run argument's own; `rest`, those of any argument not in `views`."""

    def __init__(self, views: Mapping[str, LabelView], rest: frozenset[str] = NO_LABELS) -> None:
        self.views, self.rest = views, rest

    def field(self, name: str) -> LabelView:
        return self.views.get(name) or LabelView(self.rest)

    def item(self) -> LabelView:
        return LabelView(self.whole())

    def whole(self) -> frozenset[str]:
        return union(self.rest, union_all(view.whole() for view in self.views.values()))

    def read(self, accessors: Sequence[ast.Accessor]) -> LabelView:
        if not accessors:
            return LabelView(self.whole())
        first = accessors[0]
        return (self.field(first.name) if hasattr(first, "name") else self.item()).read(accessors[1:])
