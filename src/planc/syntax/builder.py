"""Build AST nodes from the grammar's reductions: one method per named rule.

The grammar already shapes the tree (`_rule` splices, `?rule` collapses,
`-> name` renames, anonymous punctuation is dropped), so each method receives
exactly the children that matter plus the span of everything it covers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from planc.diagnostics import Diagnostic, Lines, Span
from planc.diagnostics.build import diagnostic
from planc.syntax import ast
from planc.syntax.grammar import Rule
from planc.syntax.lexer import END, START, TEXT, TYPE
from planc.syntax.templates import decode_string

# What a reduction is given: the values of the symbols it keeps (nodes, plain token tuples, or the
# lists of spliced `_rules`), and it returns any of them.
Children = Sequence[Any]
Reducer = Callable[[Children, Span], Any]


class Builder:
    """Reduction callbacks. Collects the diagnostics found while building (E105, escapes)."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.lines: Lines | None = None  # of the source being parsed

    def name(self, token: Sequence[Any]) -> ast.Name:
        return ast.Name(token[TEXT], tuple.__new__(Span, (token[START], token[END], self.lines)))

    def start(self, children: Children, span: Span) -> ast.Plan:
        return children[0]

    def plan(self, children: Children, span: Span) -> ast.Plan:
        return ast.Plan(tuple(children), span)

    def pipeline(self, children: Children, span: Span) -> ast.Pipeline:
        return ast.Pipeline(tuple(children), span)

    def step(self, children: Children, span: Span) -> ast.Step:
        label = children[0] if isinstance(children[0], ast.Name) else None
        rest = children[1:] if label else children
        tool = self.name(rest[0])
        args = tuple(rest[1:])
        self._check_duplicate_args(args)
        return ast.Step(tool, args, label, span)

    def label(self, children: Children, span: Span) -> ast.Name:
        return self.name(children[0])

    def arg(self, children: Children, span: Span) -> ast.Arg:
        name, value = children
        return ast.Arg(self.name(name), value, span)

    def or_expr(self, children: Children, span: Span) -> ast.Or:
        return ast.Or(tuple(children), span)

    def and_expr(self, children: Children, span: Span) -> ast.And:
        return ast.And(tuple(children), span)

    def not_expr(self, children: Children, span: Span) -> ast.Not:
        return ast.Not(children[0], span)

    def compare(self, children: Children, span: Span) -> ast.Compare:
        left, op, right = children
        return ast.Compare(op, left, right, span)

    def compare_op(self, children: Children, span: Span) -> str:
        return children[0][TEXT]

    def string(self, children: Children, span: Span) -> ast.String:
        token = children[0]
        return ast.String(decode_string(token[TEXT], token[START], self.lines, self.diagnostics), span)

    def number(self, children: Children, span: Span) -> ast.Literal:
        text = children[0][TEXT]
        value = json.loads(text)
        if isinstance(value, float) and math.isinf(value):
            self.diagnostics.append(diagnostic("E100", "huge_number", span, number=text))
        return ast.Literal(value, span)

    def true(self, children: Children, span: Span) -> ast.Literal:
        return ast.Literal(True, span)

    def false(self, children: Children, span: Span) -> ast.Literal:
        return ast.Literal(False, span)

    def null(self, children: Children, span: Span) -> ast.Literal:
        return ast.Literal(None, span)

    def ref(self, children: Children, span: Span) -> ast.Ref:
        head = children[0]
        return ast.Ref(self.name(head), tuple(children[1:]), span)

    def path(self, children: Children, span: Span) -> ast.Path:
        head = children[0]
        return ast.Path(self.name(head), tuple(children[1:]), span)

    def field(self, children: Children, span: Span) -> ast.Field:
        return ast.Field(children[0][TEXT], span)

    def index(self, children: Children, span: Span) -> ast.Index:
        return ast.Index(int(children[0][TEXT]), span)

    def list(self, children: Children, span: Span) -> ast.ListExpr:
        return ast.ListExpr(tuple(children), span)

    def record(self, children: Children, span: Span) -> ast.Record:
        return ast.Record(tuple(children), span)

    def entry(self, children: Children, span: Span) -> ast.Entry:
        key, value = children
        return ast.Entry(key, value, span)

    def key(self, children: Children, span: Span) -> ast.Name:
        token = children[0]
        if token[TYPE] == "STRING":
            (text,) = decode_string(token[TEXT], token[START], self.lines, self.diagnostics, holes=False)
            return ast.Name(text, span)
        return ast.Name(token[TEXT], span)

    def block(self, children: Children, span: Span) -> ast.Block:
        return ast.Block(tuple(children), span)

    def _check_duplicate_args(self, args: tuple[ast.Arg, ...]) -> None:
        if len(args) < 2 or len({arg.name.text for arg in args}) == len(args):
            return
        seen: dict[str, ast.Arg] = {}
        for arg in args:
            first = seen.setdefault(arg.name.text, arg)
            if first is not arg:
                at = first.name.span.start
                self.diagnostics.append(
                    diagnostic(
                        "E105",
                        "twice",
                        arg.span,
                        name=arg.name.text,
                        hints=(f"the first `{arg.name.text}` is at line {at.line}, column {at.column}; keep one",),
                    )
                )


def reducers(rules: Sequence[Rule], builder: Builder) -> list[Reducer]:
    """One function per grammar rule: (children, span) -> value.

    Punctuation the grammar marks as filtered is dropped, `_rules` return
    their children as a list that the parent splices in, `?rules` with one
    child pass it through, and every other rule calls the builder method
    named after its alias or its name.
    """
    return [_reducer(rule, builder) for rule in rules]


class Spliced(list):
    """The children of an inlined `_rule`, to be spliced into its parent."""


def passes_child_up(rule: Rule) -> bool:
    """A `?rule` alternative of one kept symbol: its value and span are its child's."""
    return (
        rule.collapse
        and not rule.alias
        and len(rule.expansion) == 1
        and not (rule.expansion[0].is_terminal and rule.expansion[0].filtered)
    )


def _reducer(rule: Rule, builder: Builder) -> Reducer:
    keep = [
        index
        for index, symbol in enumerate(rule.expansion)
        if rule.keep_all_tokens or not (symbol.is_terminal and symbol.filtered)
    ]
    spliced = [not symbol.is_terminal and symbol.name.startswith("_") for symbol in rule.expansion]

    name = rule.alias or rule.origin
    if not any(spliced) and not name.startswith("_"):
        if rule.collapse and not rule.alias:
            # `?rule` alternatives without a name of their own keep exactly one child.
            (only,) = keep
            return lambda raw, span: raw[only]
        method = getattr(builder, name)
        if len(keep) == len(rule.expansion):
            return method
        if not keep:
            return lambda raw, span: method((), span)
        if len(keep) == 1:
            (only,) = keep
            return lambda raw, span: method((raw[only],), span)
        pick = itemgetter(*keep)
        return lambda raw, span: method(pick(raw), span)

    # A left-recursive `_rule` (`__args: __args "," arg`) grows its own list in
    # place, so a list of n items costs O(n), not O(n^2).
    grow = keep[0] == 0 and spliced[0]

    def children(raw: Children) -> Spliced:
        found = raw[0] if grow else Spliced()
        for index in keep[1:] if grow else keep:
            value = raw[index]
            if spliced[index]:
                found.extend(value)
            else:
                found.append(value)
        return found

    if name.startswith("_"):
        return lambda raw, span: children(raw)
    method = getattr(builder, name)
    return lambda raw, span: method(children(raw), span)
