"""The grammar narrowed to one registry: a step calls one of its tools (or a control step), with that
tool's own parameters, those it requires all given, and a literal given to a parameter of a typed
schema has that type; a step after `|>` is one that takes the piped value.

`step` becomes a choice of one rule per tool, `step_TOOL`: the generic `step` with the tool's name
in place of `NAME` and, in place of its list of `arg`s, the tool's arguments. Each is the generic
`arg` with the parameter's name in place of `NAME` and, in place of `expr`, what that parameter may
hold. For a tool of up to `TRACKED` parameters the list follows which are given so far, a rule per
set of them: each parameter at most once (E105), the required ones all there (E202), exactly one of
each `one_of` group and at most one of each `at_most_one` group (E303); any order. A tool with more
takes its parameters in any number, and those are left to the checker. `pipeline`'s piped steps
become `piped_step`, a choice of `piped_TOOL` for the tools with a pipe parameter, whose arguments
leave that parameter out (E209). A parameter may hold:

- a block parameter (`do`, `then`): a block, `{ ... }`;
- a parameter whose JSON Schema is a plain `string`, `integer`, `number`, `boolean` or `null`, an
  `array` or an `object` (or a list of these), or an `enum` of scalars: a literal of that type (for
  an array any list, for an object any record); or what the checker types itself: a reference
  (`$1.title`, `$args.limit`), a path from a name a control step binds (`item.id`, `index`,
  `accumulator`), a template string for an enum of strings (`"{$1.state}"`); or one of these in
  parentheses. Not a condition, a literal of another type or a block, which the checker would
  refuse for such a parameter (E300, E302);
- anything else (a condition, a union with those, no schema): any value, `expr`.

The names are those the language can write: a tool or parameter whose name is not a `NAME` (or
is a keyword) cannot be called, and is left out; so is a tool that requires such a parameter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from planc.decoding import regex
from planc.decoding.rules import EMPTY, NOTHING, Choice, Expr, Grammar, GrammarError, Literal, Many, Seq, Symbol, replace, walk
from planc.diagnostics.span import Lines, Span
from planc.registry.loading.registry import Registry
from planc.registry.tools.tool import Tool
from planc.syntax import ast
from planc.syntax.printer import print_expr
from planc.syntax.templates import BINDINGS, HOLE

# The rules and terminals of grammar/plan.lark this narrows.
STEP, ARG, EXPR, PRIMARY, REF, PATH, BLOCK = "step", "arg", "expr", "primary", "ref", "path", "block"
PIPELINE = "pipeline"
PIPED = "piped_step"  # the rule of a step after `|>`, which this adds
# Tools with up to this many parameters have their arguments followed parameter by parameter: a rule for
# each set of parameters given so far, so 2**TRACKED rules at most per tool (and per depth of blocks).
TRACKED = 5
STRING, NUMBER = "STRING", "NUMBER"
# An integer literal: a NUMBER with no fraction but zeros and no negative exponent, all of which JSON
# Schema's `integer` takes (5, 5.0, 1e2); 1.5e1 is an integer too, but no regular pattern says
# which numbers with a fraction and an exponent are, so those are left to the checker.
INTEGER_PATTERN = r"-?(0|[1-9][0-9]*)(\.0+)?([eE]\+?[0-9]+)?"
PLAIN_TYPES = ("string", "integer", "number", "boolean", "null")
COMPOUND_TYPES = {"array": "list", "object": "record"}  # JSON Schema's type -> the rule of its literals
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
        self.taken = {name.lower() for name in [*grammar.rules, *grammar.terminals, PIPED]}
        self.name_pattern = re.compile(self._regexp_of(self._own_terminal(STEP)))
        self.keywords = grammar.literals()
        self.typed: dict[tuple, str] = {}  # what a typed position holds -> the rule that says it

    def run(self, registry: Registry) -> Grammar:
        steps: list[Symbol | None] = []
        piped: list[Symbol | None] = []
        for name in registry.names():
            tool = registry.lookup(name)
            if tool is None or not self._writable(name):
                continue
            steps.append(self._step(tool, piped=False))
            if tool.pipe is not None:
                piped.append(self._step(tool, piped=True))
        named = [step for step in steps if step is not None]
        piped_named = [step for step in piped if step is not None]
        if not named:
            raise GrammarError("the registry has no tool a plan can name")
        rules: dict[str, Expr] = {}
        for name, expr in self.grammar.rules.items():
            rules[name] = Choice(tuple(named)) if name == STEP else expr
            if name == PIPELINE:  # after `|>`, only a tool that takes the piped value, not given it again
                rules[name] = replace(
                    expr,
                    _swap(
                        {
                            Many(Seq((self._pipe_arrow(), Symbol(STEP))), 0, None): Many(
                                Seq((self._pipe_arrow(), Symbol(PIPED))), 0, None
                            )
                        }
                    ),
                )
            if name == STEP:
                rules[PIPED] = Choice(tuple(piped_named))
                rules.update(self.rules)
                rules.update(self.values)
        return Grammar(
            self.grammar.start, rules, self.terminals, self.grammar.ignore, {**self.grammar.notes, **self.notes}
        ).pruned()

    # What a step may say: its tool's own parameters, each at most once, those it needs all there.

    def _step(self, tool: Tool, piped: bool) -> Symbol | None:
        """The rule for a step calling `tool` (after `|>` when `piped`), or None when no step can call it
        (a parameter it requires has a name the language cannot write)."""
        params = [param for param in tool.params if not (piped and param == tool.pipe)]
        required = [param for param in tool.required if param in params]
        if not all(map(self._writable, required)):
            return None
        params = [param for param in params if self._writable(param)]
        rule = self._new(f"{'piped' if piped else 'step'}_{tool.name}")
        step, arguments = self.grammar.rule(STEP), self._argument_list()
        self.rules[rule] = replace(
            step,
            _swap(
                {Symbol(self._own_terminal(STEP)): Literal(tool.name), arguments: self._arguments(tool, rule, params, required)}
            ),
        )
        return Symbol(rule)

    def _arguments(self, tool: Tool, rule: str, params: list[str], required: list[str]) -> Expr:
        """The arguments of a step of `tool`, in any order. Up to `TRACKED` parameters, the grammar follows
        which are given: each at most once, the `required` ones all there, one of each `one_of` group and
        at most one of each `at_most_one` group (a rule per set of parameters given so far). With more, it
        takes any of them, any number of times, and leaves that to the checker."""
        arg, separator = self.grammar.rule(ARG), self._argument_separator()
        param_name = self._own_terminal(ARG)
        given = {
            param: replace(arg, _swap({Symbol(param_name): Literal(param), Symbol(EXPR): self._value(tool, param)}))
            for param in params
        }
        if not params:
            return EMPTY
        if len(params) > TRACKED:
            one = self._new(f"{rule}_arg")
            self.rules[one] = Choice(tuple(given.values()))
            return replace(self._argument_list(), _swap({Symbol(ARG): Symbol(one)}))
        exclusive = [set(group) for group in (*tool.one_of, *tool.at_most_one)]
        needed = [set(group) & set(params) for group in tool.one_of] + [{param} for param in required]

        def done(so_far: frozenset) -> bool:
            return all(group & so_far for group in needed)

        def open_to(so_far: frozenset) -> list[str]:
            return [
                param
                for param in params
                if param not in so_far and not any(param in group and group & so_far for group in exclusive)
            ]

        names: dict[frozenset, str] = {}

        def after(so_far: frozenset) -> Expr:
            """What may follow the arguments `so_far`."""
            if so_far in names:
                return Symbol(names[so_far])
            options = [Seq((separator, given[param], after(so_far | {param}))) for param in open_to(so_far)]
            if not options:
                return EMPTY if done(so_far) else NOTHING
            name = f"{rule}_after_{'_'.join(param for param in params if param in so_far)}"
            names[so_far] = self._new(name + "_given" if name[-1].isdigit() else name)  # `for_decoder` adds `_DEPTH`
            self.rules[names[so_far]] = Choice((*options, *([EMPTY] if done(so_far) else [])))
            return Symbol(names[so_far])

        first = Choice(tuple(Seq((given[param], after(frozenset({param})))) for param in open_to(frozenset())))
        listed = Seq((first, *self._argument_list_end()))
        return Many(listed, 0, 1) if done(frozenset()) else listed

    def _argument_list(self) -> Many:
        """The part of the generic `step` that holds its arguments: `(arg ("," arg)* ","?)?`."""
        for node in walk(self.grammar.rule(STEP)):
            if isinstance(node, Many) and node.low == 0 and node.high == 1 and Symbol(ARG) in walk(node.item):
                return node
        raise GrammarError("grammar/plan.lark's `step` has no optional list of `arg`s")

    def _argument_list_end(self) -> tuple[Expr, ...]:
        """What may follow the last argument in the generic `step`: the `","?` of `(arg ("," arg)* ","?)?`."""
        listed = self._argument_list().item
        items = listed.items if isinstance(listed, Seq) else ()
        repeats = [index for index, item in enumerate(items) if isinstance(item, Many) and Symbol(ARG) in walk(item)]
        if not repeats:
            raise GrammarError("grammar/plan.lark's `step` has no repeated `arg`")
        return items[repeats[-1] + 1 :]

    def _argument_separator(self) -> Expr:
        """What stands between two arguments in the generic `step`: the `","` of `("," arg)*`."""
        for node in walk(self._argument_list()):
            if isinstance(node, Seq) and len(node.items) == 2 and node.items[1] == Symbol(ARG):
                return node.items[0]
        raise GrammarError("grammar/plan.lark's `step` has no separator between its `arg`s")

    def _pipe_arrow(self) -> Expr:
        """What stands before a piped step in the generic `pipeline`: the `"|>"` of `("|>" step)*`."""
        for node in walk(self.grammar.rule(PIPELINE)):
            if isinstance(node, Seq) and len(node.items) == 2 and node.items[1] == Symbol(STEP):
                return node.items[0]
        raise GrammarError("grammar/plan.lark's `pipeline` has no piped step")

    # What a parameter may hold.

    def _value(self, tool: Tool, param: str) -> Expr:
        if tool.param_kind(param) == "block":
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
        if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(PLAIN_TYPES) | set(COMPOUND_TYPES):
            return None
        if "number" in kinds:
            kinds = [kind for kind in kinds if kind != "integer"]  # every integer is a number
        kinds = sorted(set(kinds), key=[*PLAIN_TYPES, *COMPOUND_TYPES].index)
        options: list[Expr] = []
        for kind in kinds:
            if kind in COMPOUND_TYPES:
                self.grammar.rule(COMPOUND_TYPES[kind])  # GrammarError when grammar/plan.lark has no such rule
                options.append(Symbol(COMPOUND_TYPES[kind]))
            elif kind == "string":
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
        return self._terminal(
            "INTEGER",
            regex.read(INTEGER_PATTERN),
            "a NUMBER whose fraction is only zeros and whose exponent is not negative: an integer",
        )

    def _template(self) -> Symbol:
        """A one-line string with at least one template hole (`syntax/templates.py`'s HOLE) in it."""
        string = self.grammar.terminals[STRING]
        for option in string.options if isinstance(string, Choice) else (string,):
            items = option.items if isinstance(option, Seq) else ()
            if (
                len(items) == 3
                and items[0] == items[2]
                and isinstance(items[1], Many)
                and items[1].low == 0
                and items[1].high is None
            ):
                body = items[1]
                return self._terminal(
                    "TEMPLATE",
                    Seq((items[0], body, regex.read(HOLE.pattern), body, items[2])),
                    "a one-line STRING with a template hole in it",
                )
        raise GrammarError('STRING has no one-line form `"..."` to build template strings from')

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


def _swap(table: Mapping[Expr, Expr]) -> Callable[[Expr], Expr | None]:
    return lambda node: table.get(node)


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, bool, int)) or isinstance(value, float) and math.isfinite(value)


def _literal_text(value: str | bool | int | float | None) -> str:
    """How planc prints the literal `value`: the one spelling a typed position takes."""
    node = ast.String((value,), _NO_SPAN) if isinstance(value, str) else ast.Literal(value, _NO_SPAN)
    return print_expr(node)
