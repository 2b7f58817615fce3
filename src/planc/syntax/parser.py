"""Parse plan text into a Plan: the LALR automaton Lark builds from the grammar,
driven over the fast lexer's tokens, with error recovery.

The loop below is Lark's LALR driver (`lark.parsers.lalr_parser_state`) made
tight for this grammar: Lark's parse table and rules (`planc.syntax.grammar`),
our token list, one reduction function per rule from `planc.syntax.builder`. On an error it asks
`planc.syntax.errors` for a diagnostic; where the intent is certain (a missing
comma, `=` for `:`) it repairs and goes on, otherwise it skips to the next
line that starts a step and parses from there, so independent mistakes are
all reported in one run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, NamedTuple

from planc.diagnostics import Diagnostic, Lines, Span, sort_key
from planc.diagnostics.build import diagnostic
from planc.gc_pause import gc_paused
from planc.syntax.ast import Plan
from planc.syntax.builder import Builder, passes_child_up, reducers
from planc.syntax.failure import CLOSERS, ParseFailure, open_brackets
from planc.syntax.grammar import tables
from planc.syntax.lexer import END, ERROR, START, TEXT, TYPE, Token, tokenize

# Deeper than this the tree could not be walked without Python's recursion
# limit: a plan is refused with a diagnostic instead.
MAX_DEPTH = 200
END_OF_PLAN = "$END"


class ParseResult(NamedTuple):
    plan: Plan | None  # None when there are syntax errors
    diagnostics: list[Diagnostic]
    comments: list[Token]
    lines: Lines  # the source, and where its lines start

    @property
    def source(self) -> str:
        return self.lines.source

    @property
    def ok(self) -> bool:
        return self.plan is not None


def parse(source: str) -> ParseResult:
    """Parse `source`; syntax errors come back as diagnostics, never as exceptions.

    >>> result = parse('search(query: "x") |> summarize()')
    >>> [step.tool.text for step in result.plan.pipelines[0].steps]
    ['search', 'summarize']
    >>> parse('search("x")').diagnostics[0].code
    'E102'
    """
    with gc_paused():
        return _parse(source)


def _parse(source: str) -> ParseResult:
    lexed = tokenize(source)
    diagnostics = list(lexed.diagnostics)
    if not lexed.tokens:
        if not diagnostics:
            diagnostics.append(
                diagnostic(
                    "E104", "empty", Span(0, 0, lexed.lines), hints=('a plan is at least one step, like `search(query: "x")`',)
                )
            )
        return ParseResult(None, diagnostics, lexed.comments, lexed.lines)
    automaton = _automaton()
    automaton.builder.diagnostics = diagnostics
    automaton.builder.lines = lexed.lines
    plan = automaton.run(lexed.tokens, lexed.lines)
    if automaton.skipped:
        # A mistake in text that recovery skipped is most likely part of the same
        # garbage (prose, shell, YAML); only the first report about it is kept.
        noise = {id(d) for d in lexed.diagnostics if any(start < d.span.start_offset < end for start, end in automaton.skipped)}
        diagnostics[:] = [d for d in diagnostics if id(d) not in noise]
    diagnostics.sort(key=sort_key)
    if any(d.is_error for d in diagnostics):
        plan = None
    return ParseResult(plan, diagnostics, lexed.comments, lexed.lines)


SHIFT, UNIT, REDUCE = 0, 1, 2


class _Automaton:
    """The parse table in a form the loop reads fast, bound to one Builder.

    Actions are `(SHIFT, next state)`, `(REDUCE, (size, rule name, build))`, or
    `(UNIT, rule name)` for the chain rules (`?expr: and_expr`) that only pass
    their one child up: more than half of all reductions, reduced to a goto.
    """

    def __init__(self) -> None:
        grammar = tables()
        self.builder = Builder()
        build = reducers(grammar.rules, self.builder)
        rules = [
            (UNIT, rule.origin) if passes_child_up(rule) else (REDUCE, (len(rule.expansion), rule.origin, build[number]))
            for number, rule in enumerate(grammar.rules)
        ]
        self.start_state = grammar.start_state
        self.end_state = grammar.end_state
        # Lists indexed by state number: Lark numbers its states 0..n-1.
        count = max(grammar.states) + 1
        # symbol -> (SHIFT, state), (REDUCE, (length, rule name, reducer)) or (UNIT, rule name)
        self.states: list[dict[str, tuple[int, Any]]] = [{} for _ in range(count)]
        self.gotos: list[dict[str, int]] = [{} for _ in range(count)]
        for state, actions in grammar.states.items():
            for symbol, (shift, target) in actions.items():
                self.states[state][symbol] = (SHIFT, target) if shift else rules[target]
                if shift:
                    self.gotos[state][symbol] = target
        self.literals = {t.name: t.literal for t in grammar.terminals if t.literal is not None}
        self.skipped: list[tuple[int, int]] = []  # text the last run skipped to recover

    def run(self, tokens: list[Any], lines: Lines) -> Plan | None:
        """The Plan for `tokens`, or None after reporting why it could not be parsed."""
        states, gotos, end_state = self.states, self.gotos, self.end_state
        new = tuple.__new__
        self.skipped = []
        end = tokens[-1][END]
        tokens = tokens + [(end, end, END_OF_PLAN, "")]
        state = self.start_state
        stack = [state]
        values: list = []
        bounds: list = []  # per value, a Token or a Span: [0] is where it starts, [1] where it ends
        index = segment = 0
        failed = False
        repaired_at = -1
        token = tokens[0]
        kind = token[TYPE]
        while True:
            action = states[state].get(kind)
            if action is None:
                actions = states[state]
                if kind == "NUMBER" and "INT" in actions and token[TEXT].isdigit():
                    action = actions["INT"]
                else:
                    if not failed:  # explaining a failure reads tokens by name
                        tokens[:] = [Token._make(each) for each in tokens]
                        token = tokens[index]
                    failed = True
                    if kind in CLOSERS and segment > 0 and not open_brackets(values):
                        index += 1  # a closer whose opener was in the text recovery skipped
                    elif (
                        kind != ERROR
                        and repaired_at != index
                        and self._repair(ParseFailure(tokens, index, segment, _expected(actions), self.literals, lines, values))
                    ):
                        repaired_at = index
                    else:
                        resume = _resume_at(tokens, index, segment, lines)
                        self.skipped.append((token.start, tokens[resume].start if resume else tokens[-1].end))
                        if resume is None:
                            return None
                        index = segment = resume
                        state = self.start_state
                        stack, values, bounds = [state], [], []
                    token = tokens[index]
                    kind = token[TYPE]
                    continue
            what, target = action
            if what == SHIFT:
                state = target
                stack.append(state)
                values.append(token)
                bounds.append(token)
                if len(stack) > MAX_DEPTH:
                    self.builder.diagnostics.append(
                        diagnostic(
                            "E100",
                            "too_deep",
                            Span(token[START], token[END], lines),
                            hints=("split the nested part into separate steps joined by references",),
                            most=MAX_DEPTH,
                        )
                    )
                    return None
                index += 1
                token = tokens[index]
                kind = token[TYPE]
            elif what == UNIT:
                # Follow the whole chain of unit rules here: they all go from the same state below.
                below = gotos[stack[-2]]
                state = below[target]
                action = states[state].get(kind)
                while action is not None and action[0] == UNIT:
                    state = below[action[1]]
                    action = states[state].get(kind)
                stack[-1] = state
            else:
                size, origin, build = target
                span = new(Span, (bounds[-size][0], bounds[-1][1], lines))
                value = build(values[-size:], span)
                del stack[-size:], values[-size:], bounds[-size:]
                state = gotos[stack[-1]][origin]
                stack.append(state)
                values.append(value)
                bounds.append(span)
                if state == end_state:
                    return None if failed else value

    def _repair(self, failure: ParseFailure) -> bool:
        """Report `failure`; apply its repair to the token list in place if there is one."""
        from planc.syntax.errors import (
            explain,  # only a plan with a syntax error pays for it
        )

        tokens, index = failure.tokens, failure.index
        explanation = explain(failure)
        self.builder.diagnostics.append(explanation.diagnostic)
        repair = explanation.repair
        if repair is None:
            return False
        found = tokens[index]
        if repair.kind == "replace":
            tokens[index] = found._replace(type=repair.token_type)
        else:
            at = tokens[index - 1].end
            tokens.insert(index, Token(at, at, repair.token_type, self.literals.get(repair.token_type, "")))
        return True


def _expected(actions: Iterable[str]) -> frozenset[str]:
    """The terminals a state has an action for."""
    return frozenset(name for name in actions if name.isupper())


def _resume_at(tokens: list[Token], index: int, segment: int, lines: Lines) -> int | None:
    """Where parsing restarts after the failure at `index`: the next line that starts a step.

    Lines in between are skipped unread: after a failure they are most often more of
    the same (prose, code, the rest of a broken step), and reporting each would bury
    the first error.
    """
    first = index if index > segment else index + 1
    for position in range(max(first, segment + 1), len(tokens) - 1):
        token = tokens[position]
        if token.type != "NAME" or "\n" not in lines.source[tokens[position - 1].end : token.start]:
            continue
        kinds = [t.type for t in tokens[position + 1 : position + 4]]
        if kinds[:1] == ["LPAR"] or kinds == ["EQUAL", "NAME", "LPAR"]:
            return position
    return None


_local = threading.local()


def _automaton() -> _Automaton:
    automaton = getattr(_local, "automaton", None)
    if automaton is None:
        automaton = _local.automaton = _Automaton()
    return automaton
