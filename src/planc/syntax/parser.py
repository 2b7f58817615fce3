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
from typing import NamedTuple

from planc.diagnostics import Diagnostic, Position, Span, sort_key
from planc.syntax.ast import Plan
from planc.syntax.builder import Builder, reducers
from planc.syntax.errors import CLOSERS, ParseFailure, explain
from planc.syntax.grammar import tables
from planc.syntax.lexer import ERROR, Token, tokenize

# Deeper than this the tree could not be walked without Python's recursion
# limit: a plan is refused with a diagnostic instead.
MAX_DEPTH = 200
END = "$END"


class ParseResult(NamedTuple):
    plan: Plan | None  # None when there are syntax errors
    diagnostics: list[Diagnostic]
    comments: list[Token]
    source: str

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
    lexed = tokenize(source)
    diagnostics = list(lexed.diagnostics)
    if not lexed.tokens:
        if not diagnostics:
            start = Position(0, 1, 1)
            diagnostics.append(Diagnostic("E104", "the plan is empty: there is no step to run", Span(start, start),
                                          hints=("a plan is at least one step, like `search(query: \"x\")`",)))
        return ParseResult(None, diagnostics, lexed.comments, source)
    automaton = _automaton()
    automaton.builder.diagnostics = diagnostics
    plan = automaton.run(lexed.tokens, source)
    diagnostics.sort(key=sort_key)
    if any(d.is_error for d in diagnostics):
        plan = None
    return ParseResult(plan, diagnostics, lexed.comments, source)


class _Automaton:
    """The parse table in a form the loop reads fast, bound to one Builder."""

    def __init__(self) -> None:
        grammar = tables()
        self.builder = Builder()
        reduce = reducers(grammar.rules, self.builder)
        rules = [(len(rule.expansion), rule.origin, reduce[number]) for number, rule in enumerate(grammar.rules)]
        self.start_state = grammar.start_state
        self.end_state = grammar.end_state
        self.states = {
            state: {symbol: (True, target) if shift else (False, rules[target])
                    for symbol, (shift, target) in actions.items()}
            for state, actions in grammar.states.items()
        }
        self.literals = {t.name: t.literal for t in grammar.terminals if t.literal is not None}

    def run(self, tokens: list[Token], source: str):
        """The Plan for `tokens`, or None after reporting why it could not be parsed."""
        diagnostics = self.builder.diagnostics
        states = self.states
        end_state = self.end_state
        stack = [self.start_state]
        values: list = []
        starts: list[Position] = []
        ends: list[Position] = []
        plans: list[Plan] = []
        failed = False
        count = len(tokens)
        index = segment = 0
        repaired_at = -1
        last = tokens[-1]
        end_token = Token(END, "", last.end, last.end)
        while True:
            token = tokens[index] if index < count else end_token
            kind = token.type
            actions = states[stack[-1]]
            action = actions.get(kind)
            if action is None and kind == "NUMBER" and "INT" in actions and token.text.isdigit():
                action = actions["INT"]
            if action is None:
                if kind in CLOSERS and not values and index > segment:
                    index += 1  # a closer whose opener was skipped by recovery
                    continue
                if kind != ERROR:
                    expected = frozenset(name for name in actions if name.isupper())
                    failure = ParseFailure(tokens, index, segment, expected, self.literals, source)
                    explanation = explain(failure)
                    diagnostics.append(explanation.diagnostic)
                    repair = explanation.repair
                    if repair is not None and repaired_at != index:
                        repaired_at = index
                        tokens = _repaired(tokens, index, repair)
                        count = len(tokens)
                        failed = True
                        continue
                failed = True
                index = _next_step(tokens, index, segment)
                if index is None:
                    break
                segment = index
                stack, values, starts, ends = [self.start_state], [], [], []
                continue
            shift, target = action
            if shift:
                stack.append(target)
                values.append(token)
                starts.append(token.start)
                ends.append(token.end)
                index += 1
                if len(stack) > MAX_DEPTH:
                    diagnostics.append(Diagnostic(
                        "E100", f"this nests too deeply: planc reads plans nested at most {MAX_DEPTH} levels",
                        token.span, hints=("split the nested part into separate steps joined by references",)))
                    return None
                continue
            size, origin, reduce = target
            span = Span(starts[-size], ends[-1])
            value = reduce(values[-size:], span)
            del stack[-size:], values[-size:], starts[-size:], ends[-size:]
            stack.append(states[stack[-1]][origin][1])
            values.append(value)
            starts.append(span.start)
            ends.append(span.end)
            if kind == END and stack[-1] == end_state:
                plans.append(value)
                break
        if failed or not plans:
            return None
        return plans[0]


def _repaired(tokens: list[Token], index: int, repair) -> list[Token]:
    """`tokens` with the repair applied at `index`."""
    found = tokens[index] if index < len(tokens) else None
    if repair.kind == "replace":
        return tokens[:index] + [found._replace(type=repair.token_type)] + tokens[index + 1 :]
    at = tokens[index - 1].end
    return tokens[:index] + [Token(repair.token_type, "", at, at)] + tokens[index:]


def _next_step(tokens: list[Token], index: int, segment: int) -> int | None:
    """The first token after `index` that starts a line and a step, where parsing can restart."""
    first = index if index > segment else index + 1
    for position in range(max(first, segment + 1), len(tokens)):
        token = tokens[position]
        if token.type != "NAME" or tokens[position - 1].end.line == token.start.line:
            continue
        following = tokens[position + 1 : position + 4]
        kinds = [t.type for t in following]
        if kinds[:1] == ["LPAR"] or kinds == ["EQUAL", "NAME", "LPAR"]:
            return position
    return None


_local = threading.local()


def _automaton() -> _Automaton:
    automaton = getattr(_local, "automaton", None)
    if automaton is None:
        automaton = _local.automaton = _Automaton()
    return automaton
