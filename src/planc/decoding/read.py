"""`grammar/plan.lark` read into `Grammar`: its rules as written, its terminals as the lexer matches them.

The rules come from parsing the file with Lark's own grammar of Lark's syntax (`lark.lark`,
shipped with Lark), so they keep their EBNF shape (`x*`, `x?`, groups) rather than the expanded
BNF Lark builds its tables from. The terminals' patterns come from the parser's tables
(`planc.syntax.grammar.tables`), which are the very patterns the lexer compiles; they are then
made to mean what the parser accepts (see `regex.py`): lazy repeats rewritten; keywords cut out
of any terminal that would also match them, since the lexer reads a word spelled like a literal
of the grammar as that literal; and a string's escapes narrowed to those `syntax/templates.py`
decodes (JSON's and `\\{`), since any other is an error there although the terminal matches it.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import TYPE_CHECKING, cast

from planc.decoding import regex
from planc.decoding.rules import Choice, Expr, Grammar, GrammarError, Literal, Many, Seq, Symbol, replace
from planc.syntax.grammar import START, grammar_text, tables
from planc.syntax.templates import ESCAPE, SIMPLE_ESCAPES

if TYPE_CHECKING:
    from lark import Token, Tree


@functools.cache
def read_grammar() -> Grammar:
    """The plan language's grammar, from `grammar/plan.lark`."""
    import lark

    meta = lark.Lark.open_from_package("lark", "lark.lark", ("grammars",), parser="lalr")
    rules: dict[str, Expr] = {}
    for item in meta.parse(grammar_text()).children:
        assert isinstance(item, lark.Tree)  # a statement of the grammar, not a token
        if item.data == "rule":
            name = str(item.children[0]).lstrip("?!")
            rules[name] = _expr(cast("Tree", item.children[-1]))  # the expansion
        elif item.data not in ("token", "ignore"):  # terminals and %ignore: from the tables, below
            raise GrammarError(f"grammar/plan.lark: `{item.data}` statements cannot be exported")
    built = tables()
    literals = Grammar(START, rules, {}, ()).literals()
    terminals: dict[str, regex.Regex] = {}
    notes: dict[str, str] = {}
    for terminal in built.terminals:
        if terminal.literal is not None and terminal.literal in literals:
            continue  # an anonymous literal such as "(": it stays a Literal in the rules
        pattern = regex.greedy(_known_escapes(regex.read(terminal.regexp)))
        reserved = sorted(word for word in literals if re.fullmatch(terminal.regexp, word))
        terminals[terminal.name] = regex.without_words(pattern, reserved) if reserved else pattern
        if reserved:
            notes[terminal.name] = f"/{terminal.regexp}/ but none of the keywords: {', '.join(reserved)}"
    return Grammar(START, rules, terminals, tuple(built.ignore), notes).pruned()


def _known_escapes(pattern: regex.Regex) -> regex.Regex:
    """`pattern` with each escape it allows (a backslash, then any character) narrowed to the escapes
    `ESCAPE` decodes: `\\uXXXX` and the `SIMPLE_ESCAPES`."""
    backslash = regex.Chars.of("\\")

    def escape(node: Expr) -> Expr | None:
        if (
            isinstance(node, Seq)
            and len(node.items) == 2
            and node.items[0] == backslash
            and isinstance(node.items[1], regex.Chars)
            and node.items[1].negated
        ):
            return _decoded_escape()
        return None

    return replace(pattern, escape)


@functools.cache
def _decoded_escape() -> regex.Regex:
    """`ESCAPE` (a backslash, then `uXXXX` or any one character) with the one character one of `SIMPLE_ESCAPES`."""
    simple = regex.Chars.of("".join(SIMPLE_ESCAPES))
    return replace(regex.read(ESCAPE.pattern), lambda node: simple if isinstance(node, regex.Chars) and node.negated else None)


def _expr(tree: Tree) -> Expr:
    """One node of Lark's tree of a rule's expansion (the shapes of `lark/grammars/lark.lark`)."""
    kind = tree.data
    if kind == "expansions":
        return Choice(tuple(_expr(child) for child in tree.children))
    if kind == "alias":  # `expansion -> name`: the name only shapes the tree
        return _expr(tree.children[0])
    if kind == "expansion":
        return Seq(tuple(_expr(child) for child in tree.children))
    if kind == "maybe":
        return Many(_expr(tree.children[0]), 0, 1)
    if kind == "expr":
        return _operator(_expr(tree.children[0]), [c for c in tree.children[1:] if c is not None])
    if kind == "name":
        return Symbol(str(tree.children[0]))
    if kind == "literal":
        token = cast("Token", tree.children[0])
        if token.type != "STRING" or token.endswith("i"):
            raise GrammarError(f"grammar/plan.lark: `{token}` in a rule: name it as a terminal to export it")
        return Literal(ast.literal_eval(token))
    raise GrammarError(f"grammar/plan.lark: `{kind}` cannot be exported")


def _operator(item: Expr, operator: list) -> Expr:
    if not operator:
        return item
    if operator[0].type == "OP":
        low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[str(operator[0])]
        return Many(item, low, high)
    numbers = [int(n) for n in operator]  # `x ~ n` or `x ~ n..m`
    return Many(item, numbers[0], numbers[-1])
