"""The plan tree: one frozen attrs class per node, every node with a span.

Nodes compare and hash by identity, so a pass can key what it learns about a
node (what a reference points at, a type, a cost) by the node itself, and two
equal-looking `$1` in different places stay distinct. Structural equality is
`planc.syntax.data.to_data(a, spans=False) == to_data(b, spans=False)`.
"""

from __future__ import annotations

from typing import Union

import attrs

from planc.diagnostics.span import Span


@attrs.frozen(eq=False)
class Name:
    """An identifier as written: a tool name, a label, an argument name, a key."""

    text: str
    span: Span


@attrs.frozen(eq=False)
class Field:
    """`.name` in a reference or path."""

    name: str
    span: Span


@attrs.frozen(eq=False)
class Index:
    """`[3]` in a reference or path."""

    value: int
    span: Span


Accessor = Union[Field, Index]


@attrs.frozen(eq=False)
class Ref:
    """`$3.issues[0]`, `$hits.title` or `$args.limit`: a step result or a run argument."""

    name: Name
    accessors: tuple[Accessor, ...]
    span: Span

    @property
    def target(self) -> int | str:
        """The step number for `$3`, the label (or `args`) for `$hits`."""
        text = self.name.text
        return int(text) if text.isdigit() else text

    @property
    def head_span(self) -> Span:
        """The span of `$3` without the accessors."""
        return Span(self.span.start, self.name.span.end)


@attrs.frozen(eq=False)
class Path:
    """A bare `item.title` or `severity`: meaningful only in a condition or a block."""

    head: Name
    accessors: tuple[Accessor, ...]
    span: Span


@attrs.frozen(eq=False)
class Hole:
    """`{$1.title}` or `{item.id}` inside a string."""

    target: Union[Ref, Path]
    span: Span


@attrs.frozen(eq=False)
class String:
    """A string literal; holes make it a template rendered at run time."""

    parts: tuple[Union[str, Hole], ...]
    span: Span

    @property
    def holes(self) -> tuple[Hole, ...]:
        return tuple(part for part in self.parts if isinstance(part, Hole))

    @property
    def text(self) -> str | None:
        """The value of a string without holes, else None."""
        if self.holes:
            return None
        return "".join(self.parts)  # type: ignore[arg-type]


@attrs.frozen(eq=False)
class Literal:
    """A number, `true`, `false` or `null`."""

    value: Union[bool, int, float, None]
    span: Span


@attrs.frozen(eq=False)
class ListExpr:
    items: tuple["Expr", ...]
    span: Span


@attrs.frozen(eq=False)
class Entry:
    key: Name
    value: "Expr"
    span: Span


@attrs.frozen(eq=False)
class Record:
    entries: tuple[Entry, ...]
    span: Span


@attrs.frozen(eq=False)
class Block:
    """`{ step |> step; step }`: a sub-plan whose result is its last step's."""

    pipelines: tuple["Pipeline", ...]
    span: Span


@attrs.frozen(eq=False)
class Compare:
    op: str
    left: "Expr"
    right: "Expr"
    span: Span


@attrs.frozen(eq=False)
class Not:
    operand: "Expr"
    span: Span


@attrs.frozen(eq=False)
class And:
    operands: tuple["Expr", ...]
    span: Span


@attrs.frozen(eq=False)
class Or:
    operands: tuple["Expr", ...]
    span: Span


Expr = Union[String, Literal, Ref, Path, ListExpr, Record, Block, Compare, Not, And, Or]
CONDITIONS = (Compare, Not, And, Or)


@attrs.frozen(eq=False)
class Arg:
    name: Name
    value: Expr
    span: Span


@attrs.frozen(eq=False)
class Step:
    """`label = tool(name: value, ...)`."""

    tool: Name
    args: tuple[Arg, ...]
    label: Name | None
    span: Span

    def arg(self, name: str) -> Arg | None:
        for arg in self.args:
            if arg.name.text == name:
                return arg
        return None


@attrs.frozen(eq=False)
class Pipeline:
    """`a(...) |> b(...)`: each step's result goes to the next step's pipe parameter."""

    steps: tuple[Step, ...]
    span: Span


@attrs.frozen(eq=False)
class Plan:
    pipelines: tuple[Pipeline, ...]
    span: Span
