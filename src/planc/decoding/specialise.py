"""The grammar narrowed to one registry: a step calls one of its tools (or a control step), with that
tool's own parameter names, and a literal given to a parameter of a plain type has that type.

`step` becomes a choice of one rule per tool, `step_TOOL`: the generic `step` with the tool's name
in place of `NAME` and `TOOL_arg` in place of `arg`. `TOOL_arg` is the generic `arg` once per
parameter, with the parameter's name in place of `NAME` and, in place of `expr`, what that
parameter may hold:

- a block parameter (`do`, `then`): a block, `{ ... }`;
- a parameter whose JSON Schema is a plain `string`, `integer`, `number`, `boolean` or `null` (or a
  list of these), or an `enum` of scalars: a literal of that type; or what the checker types
  itself: a reference (`$1.title`, `$args.limit`), a path from a name a control step binds
  (`item.id`, `index`, `accumulator`), a template string for an enum of strings (`"{$1.state}"`);
  or one of these in parentheses. Not a condition, a list, a record or a block, which the checker
  would refuse for such a parameter (E300, E302);
- anything else (a condition, a list, an object, a union with those, no schema): any value, `expr`.

The names are those the language can write: a tool or parameter whose name is not a `NAME` (or
is a keyword) cannot be called, and is left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from planc.decoding import regex
from planc.decoding.rules import Choice, Expr, Grammar, GrammarError, Literal, Many, Seq, Symbol, replace, walk
from planc.diagnostics.span import Lines, Span
from planc.registry.registry import Registry
from planc.registry.tool import Tool
from planc.syntax import ast
from planc.syntax.printer import print_expr
from planc.syntax.templates import BINDINGS, HOLE

# The rules and terminals of grammar/plan.lark this narrows.
STEP, ARG, EXPR, PRIMARY, REF, PATH, BLOCK = "step", "arg", "expr", "primary", "ref", "path", "block"
STRING, NUMBER = "STRING", "NUMBER"
# An integer literal: a NUMBER with no fraction but zeros and no negative exponent, all of which JSON
# Schema's `integer` takes (5, 5.0, 1e2); 1.5e1 is an integer too, but no regular pattern says
# which numbers with a fraction and an exponent are, so those are left to the checker.
INTEGER_PATTERN = r"-?(0|[1-9][0-9]*)(\.0+)?([eE]\+?[0-9]+)?"
PLAIN_TYPES = ("string", "integer", "number", "boolean", "null")
_NO_SPAN = Span(0, 0, Lines(""))


def specialise(grammar: Grammar, registry: Registry) -> Grammar:
    """`grammar` with its steps narrowed to `registry`'s tools and their parameters."""
    return _Specialiser(grammar).run(registry)


class _Specialiser:
    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.rules: dict[str, Expr] = {}  # per tool: step_TOOL, TOOL_arg
        self.values: dict[str, Expr] = {}  # what typed positions hold, shared by the tools
        self.terminals = dict(grammar.terminals)
        self.notes: dict[str, str] = {}
        self.taken = {name.lower() for name in [*grammar.rules, *grammar.terminals]}
        self.name_pattern = re.compile(self._regexp_of(self._own_terminal(STEP)))
        self.keywords = grammar.literals()
        self.typed: dict[tuple, str] = {}  # what a typed position holds -> the rule that says it

    def run(self, registry: Registry) -> Grammar:
        step, arg = self.grammar.rule(STEP), self.grammar.rule(ARG)
        tool_name, param_name = self._own_terminal(STEP), self._own_terminal(ARG)
        steps = []
        for name in registry.names():
            tool = registry.lookup(name)
            if tool is None or not self._writable(name):
                continue
            step_rule, arg_rule = self._new(f"step_{name}"), self._new(f"{name}_arg")
            self.rules[step_rule] = replace(step, _swap({Symbol(tool_name): Literal(name),
                                                         Symbol(ARG): Symbol(arg_rule)}))
            self.rules[arg_rule] = Choice(tuple(
                replace(arg, _swap({Symbol(param_name): Literal(param), Symbol(EXPR): self._value(tool, param)}))
                for param in tool.params if self._writable(param)))
            steps.append(Symbol(step_rule))
        if not steps:
            raise GrammarError("the registry has no tool a plan can name")
        rules: dict[str, Expr] = {}
        for name, expr in self.grammar.rules.items():
            rules[name] = Choice(tuple(steps)) if name == STEP else expr
            if name == STEP:
                rules.update(self.rules)
                rules.update(self.values)
        return Grammar(self.grammar.start, rules, self.terminals, self.grammar.ignore,
                       {**self.grammar.notes, **self.notes}).pruned()

    # What a parameter may hold.

    def _value(self, tool: Tool, param: str) -> Expr:
        if tool.kind(param) == "block":
            return self._typed(("block",), Symbol(BLOCK))
        literals = self._literals(tool.params[param])
        if literals is None:
            return Symbol(EXPR)
        key, options, templates = literals
        checked = [Symbol(REF), self._bound_path()] + ([self._template()] if templates else [])
        return self._typed(key, Choice((*options, *checked)), hint=f"{tool.name}_{param}" if key[0] == "enum" else "")

    def _literals(self, schema: Mapping) -> tuple[tuple, list[Expr], bool] | None:
        """What a literal for `schema` may be (and whether templates may stand in), or None: any value."""
        if not isinstance(schema, Mapping) or "x-planc" in schema:
            return None
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values or not all(map(_scalar, values)):
                return None
            texts = [_literal_text(value) for value in values]
            return ("enum", *texts), [Literal(text) for text in texts], any(isinstance(v, str) for v in values)
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(PLAIN_TYPES):
            return None
        if "number" in kinds:
            kinds = [kind for kind in kinds if kind != "integer"]  # every integer is a number
        kinds = sorted(set(kinds), key=PLAIN_TYPES.index)
        options: list[Expr] = []
        for kind in kinds:
            if kind == "string":
                options.append(Symbol(STRING))
            elif kind == "integer":
                options.append(self._integer())
            elif kind == "number":
                options.append(Symbol(NUMBER))
            elif kind == "boolean":
                options += [self._keyword("true"), self._keyword("false")]
            else:
                options.append(self._keyword("null"))
        return tuple(kinds), options, False

    def _typed(self, key: tuple, options: Expr, hint: str = "") -> Symbol:
        """The rule for one kind of typed position: `options`, or itself in parentheses."""
        if key not in self.typed:
            name = self._new(f"{hint or '_'.join(key)}_value")
            self.typed[key] = name
            opening, closing = self._parentheses()
            self.values[name] = Choice((options, Seq((opening, Symbol(name), closing))))
        return Symbol(self.typed[key])

    # Pieces built once from the generic grammar.

    def _bound_path(self) -> Symbol:
        """A path from a name a control step binds: `item.id`, `index`, `accumulator.total`."""
        if ("bound_path",) not in self.typed:
            name = self._new("bound_path")
            self.typed[("bound_path",)] = name
            head = Choice(tuple(Literal(word) for word in BINDINGS))
            self.values[name] = replace(self.grammar.rule(PATH), _swap({Symbol(self._own_terminal(PATH)): head}))
        return Symbol(self.typed[("bound_path",)])

    def _integer(self) -> Symbol:
        return self._terminal("INTEGER", regex.read(INTEGER_PATTERN),
                              "a NUMBER whose fraction is only zeros and whose exponent is not negative: an integer")

    def _template(self) -> Symbol:
        """A one-line string with at least one template hole (`syntax/templates.py`'s HOLE) in it."""
        string = self.grammar.terminals[STRING]
        for option in string.options if isinstance(string, Choice) else (string,):
            items = option.items if isinstance(option, Seq) else ()
            if (len(items) == 3 and items[0] == items[2] and isinstance(items[1], Many)
                    and items[1].low == 0 and items[1].high is None):
                body = items[1]
                return self._terminal("TEMPLATE", Seq((items[0], body, regex.read(HOLE.pattern), body, items[2])),
                                      "a one-line STRING with a template hole in it")
        raise GrammarError("STRING has no one-line form `\"...\"` to build template strings from")

    def _terminal(self, name: str, pattern: regex.Regex, note: str) -> Symbol:
        if name not in self.terminals:
            if name.lower() in self.taken:
                raise GrammarError(f"grammar/plan.lark already has a `{name}`")
            self.taken.add(name.lower())
            self.terminals[name] = pattern
            self.notes[name] = note
        return Symbol(name)

    def _keyword(self, word: str) -> Literal:
        if word not in self.keywords:
            raise GrammarError(f"grammar/plan.lark has no keyword `{word}`")
        return Literal(word)

    def _parentheses(self) -> tuple[Expr, Expr]:
        """The brackets around `expr` in `primary`'s `"(" expr ")"`."""
        for node in walk(self.grammar.rule(PRIMARY)):
            if isinstance(node, Seq) and len(node.items) == 3 and node.items[1] == Symbol(EXPR):
                return node.items[0], node.items[2]
        raise GrammarError("grammar/plan.lark's `primary` has no parenthesised expression")

    def _own_terminal(self, rule: str) -> str:
        """The one terminal a rule names directly: the tool's name in `step`, the parameter's in `arg`."""
        found = {node.name for node in walk(self.grammar.rule(rule)) if isinstance(node, Symbol) and node.terminal}
        if len(found) != 1:
            raise GrammarError(f"grammar/plan.lark's `{rule}` should name exactly one terminal, not {sorted(found)}")
        return found.pop()

    def _regexp_of(self, terminal: str) -> str:
        return regex.to_python(self.grammar.terminals[terminal])

    def _writable(self, name: str) -> bool:
        return bool(self.name_pattern.fullmatch(name)) and name not in self.keywords

    def _new(self, base: str) -> str:
        """A rule name of its own, as Lark spells rule names: lower case, digits and `_`."""
        name = re.sub(r"[^a-z0-9_]", "_", base.lower()).strip("_") or "rule"
        if not name[0].isalpha():
            name = "r_" + name
        unique, number = name, 1
        while unique in self.taken:
            number += 1
            unique = f"{name}_{number}"
        self.taken.add(unique)
        return unique


def _swap(table: Mapping[Expr, Expr]):
    return lambda node: table.get(node)


def _scalar(value) -> bool:
    return value is None or isinstance(value, (str, bool, int)) or isinstance(value, float) and math.isfinite(value)


def _literal_text(value) -> str:
    """How planc prints the literal `value`: the one spelling a typed position takes."""
    node = ast.String((value,), _NO_SPAN) if isinstance(value, str) else ast.Literal(value, _NO_SPAN)
    return print_expr(node)

