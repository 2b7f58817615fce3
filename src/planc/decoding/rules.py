"""The grammar as a decoder needs it: rules over literals, terminals and other rules, in EBNF.

The same nodes make a terminal's pattern, an EBNF over characters (`regex.Chars` as its leaves).

`read.py` builds it from `grammar/plan.lark`, `specialise.py` narrows it to a registry's tools,
and `lark_format.py` and `gbnf_format.py` write it out. Only the language matters here, not the
shape of a tree: Lark's `?rule`, `!rule` and `-> alias` are gone, and so is the difference
between `x?` and `[x]`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Union

import attrs

if TYPE_CHECKING:
    from planc.decoding.regex import Chars


class GrammarError(Exception):
    """A grammar that cannot be written for a decoder."""


@attrs.frozen
class Literal:
    """Exactly this text: one lexeme."""

    text: str


@attrs.frozen
class Symbol:
    """A rule (lower case) or a terminal (upper case), by name."""

    name: str

    @property
    def terminal(self) -> bool:
        return self.name.lstrip("_")[:1].isupper()


@attrs.frozen
class Seq:
    items: tuple[Expr, ...]


@attrs.frozen
class Choice:
    options: tuple[Expr, ...]


@attrs.frozen
class Many:
    """`item` from `low` to `high` times (None: no upper bound); `lazy` only in a pattern read from Python."""

    item: Expr
    low: int
    high: int | None
    lazy: bool = False


# A node: a rule's leaves are literals and symbols, a terminal's pattern's (regex.py) character classes.
Expr = Union[Literal, Symbol, Seq, Choice, Many, "Chars"]

EMPTY = Seq(())  # the empty text
NOTHING = Choice(())  # no text at all: what a tool without parameters offers as an argument


@attrs.frozen
class Grammar:
    start: str
    rules: Mapping[str, Expr]  # name -> expansion, in the order they are written
    terminals: Mapping[str, Expr]  # name -> pattern over characters, with the lexer's meaning (see regex.py)
    ignore: tuple[str, ...]  # the terminals that may stand between any two lexemes
    notes: Mapping[str, str] = attrs.field(factory=dict)  # terminal -> what it is, where its pattern says it poorly

    def rule(self, name: str) -> Expr:
        if name not in self.rules:
            raise GrammarError(f"grammar/plan.lark has no rule `{name}`")
        return self.rules[name]

    def literals(self) -> set[str]:
        return {node.text for expr in self.rules.values() for node in walk(expr) if isinstance(node, Literal)}

    def pruned(self) -> Grammar:
        """Without the rules and terminals the start rule cannot reach, its expansions simplified."""
        rules = {name: simplify(expr) for name, expr in self.rules.items()}
        # A rule that matches nothing (the arguments of a tool without parameters) goes, and what
        # uses it matches nothing there: `tool()` is all that is left of the tool's arguments.
        while empty := {Symbol(name) for name, expr in rules.items() if expr == NOTHING}:
            rules = {
                name: simplify(replace(expr, lambda node: NOTHING if node in empty else None))
                for name, expr in rules.items()
                if Symbol(name) not in empty
            }
        if self.start not in rules:
            raise GrammarError("the start rule matches nothing")
        reached: set[str] = set()
        pending = [self.start, *self.ignore]
        while pending:
            name = pending.pop()
            if name in reached:
                continue
            reached.add(name)
            if name in rules:
                pending += [node.name for node in walk(rules[name]) if isinstance(node, Symbol)]
        return Grammar(
            self.start,
            {n: e for n, e in rules.items() if n in reached},
            {n: t for n, t in self.terminals.items() if n in reached},
            self.ignore,
            {n: note for n, note in self.notes.items() if n in reached},
        )


def walk(expr: Expr) -> Iterator[Expr]:
    """`expr` and every node inside it."""
    pending = [expr]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, Seq):
            pending += node.items
        elif isinstance(node, Choice):
            pending += node.options
        elif isinstance(node, Many):
            pending.append(node.item)


def replace(expr: Expr, change: Callable[[Expr], Expr | None]) -> Expr:
    """`expr` with every node for which `change` gives something other than None replaced by that."""
    changed = change(expr)
    if changed is not None:
        return changed
    if isinstance(expr, Seq):
        return Seq(tuple(replace(item, change) for item in expr.items))
    if isinstance(expr, Choice):
        return Choice(tuple(replace(option, change) for option in expr.options))
    if isinstance(expr, Many):
        return attrs.evolve(expr, item=replace(expr.item, change))
    return expr


def simplify(expr: Expr) -> Expr:
    """The same language in fewer nodes: nested sequences and choices flattened, NOTHING propagated.

    >>> simplify(Seq((Literal("a"), Many(NOTHING, 0, None), Seq((Literal("b"),)))))
    Seq(items=(Literal(text='a'), Literal(text='b')))
    >>> simplify(Seq((Literal("a"), Choice((NOTHING,)))))
    Choice(options=())
    """
    if isinstance(expr, Seq):
        items: list[Expr] = []
        for item in map(simplify, expr.items):
            if item == NOTHING:
                return NOTHING
            items += item.items if isinstance(item, Seq) else [item]
        return items[0] if len(items) == 1 else Seq(tuple(items))
    if isinstance(expr, Choice):
        options: list[Expr] = []
        for option in map(simplify, expr.options):
            for one in option.options if isinstance(option, Choice) else (option,):
                if one not in options:
                    options.append(one)
        if EMPTY in options and len(options) > 1:  # (| x) is x?
            return simplify(Many(Choice(tuple(o for o in options if o != EMPTY)), 0, 1))
        return _factored(options)
    if isinstance(expr, Many):
        item = simplify(expr.item)
        if item == NOTHING or item == EMPTY:
            return EMPTY if expr.low == 0 or item == EMPTY else NOTHING
        if (expr.low, expr.high) == (0, 1) and isinstance(item, Many) and item.low == 1:
            return attrs.evolve(item, low=0)  # (x+)? is x*
        return attrs.evolve(expr, item=item)
    return expr


def write(expr: Expr, leaf: Callable[[object], str], grouped: bool | str = False) -> str:
    """`expr` in the EBNF notation Lark and GBNF share (`a b`, `a | b`, `(...)`, `x?`, `x*`, `x+`,
    `x{m,n}`); `leaf` writes everything else (a literal, a symbol, a character class). `grouped`:
    inside a sequence or under a repeat, where a choice (or, under a repeat, a sequence) needs
    parentheses."""
    if isinstance(expr, Choice):
        if not expr.options:
            raise GrammarError("a rule that matches nothing cannot be written")
        text = " | ".join(write(option, leaf) for option in expr.options)
        return f"({text})" if grouped else text
    if isinstance(expr, Seq):
        if not expr.items:
            return '""'
        text = " ".join(write(item, leaf, grouped=True) for item in expr.items)
        return f"({text})" if grouped == "repeat" and len(expr.items) > 1 else text
    if isinstance(expr, Many):
        inner = write(expr.item, leaf, grouped="repeat")
        suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((expr.low, expr.high))
        if suffix is None:
            suffix = "{%d}" % expr.low if expr.low == expr.high else "{%d,%s}" % (expr.low, expr.high or "")
        return inner + suffix
    return leaf(expr)


def _factored(options: list[Expr]) -> Expr:
    """A choice whose options begin alike, `a | a ("or" a)+`, as `a ("or" a)*`.

    Same language; but an engine that follows every option at once, as llama.cpp does, would
    otherwise follow both options of each such rule at every level of nesting.
    """
    firsts: dict[Expr, list[Expr]] = {}
    for option in options:
        items = option.items if isinstance(option, Seq) else (option,)
        if items:
            firsts.setdefault(items[0], []).append(Seq(items[1:]))
        else:
            firsts.setdefault(EMPTY, []).append(EMPTY)
    if len(firsts) == len(options):
        return options[0] if len(options) == 1 else Choice(tuple(options))
    merged: list[Expr] = []
    for first, rests in firsts.items():
        if len(rests) == 1:
            merged.append(simplify(Seq((first, rests[0]))))
            continue
        tails = [rest for rest in rests if rest != EMPTY]
        tail = simplify(Choice(tuple(tails)))
        merged.append(simplify(Seq((first, Many(tail, 0, 1) if len(tails) < len(rests) else tail))))
    return merged[0] if len(merged) == 1 else Choice(tuple(merged))
