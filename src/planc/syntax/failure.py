"""A parse failure and what the tokens around it say: the facts `errors.py` reasons with."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import NamedTuple

from planc.diagnostics import Lines, Span
from planc.syntax.lexer import TYPE, Token

OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
TOKENS = (tuple, Token)  # a token on the parser's stack: plain as lexed, or a Token once a failure was explained
CLOSERS = {closer: opener for opener, closer in OPENERS.items()}
VALUE_STARTS = {"STRING", "NUMBER", "TRUE", "FALSE", "NULL", "DOLLAR", "LSQB", "LBRACE", "LPAR", "NOT"}
KEYWORDS = {"TRUE", "FALSE", "NULL", "AND", "OR", "NOT", "CONTAINS"}
OPERATORS = {"==", "!=", "<", "<=", ">", ">=", "contains", "and", "or"}
# Punctuation that ends or separates comes first in "expected ..." lists: it is what a
# person most likely left out.
FIRST_WORDS = ("COMMA", "RPAR", "RSQB", "RBRACE", "COLON", "EQUAL", "LPAR", "__ANON_0", "SEMICOLON")
NAMED_TERMINALS = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "INT": "a whole number",
    "$END": "the end of the plan",
}


def open_brackets(stack: list) -> list[Token]:
    """The brackets on the parser's value stack that are not closed yet, innermost last.

    The stack holds what is open, not the whole text read, so this costs as much
    as the nesting is deep, however long the plan.
    """
    opened: list[Token] = []
    for value in stack:
        if type(value) in TOKENS:
            kind = value[TYPE]
            if kind in OPENERS:
                opened.append(Token._make(value))
            elif kind in CLOSERS and opened and opened[-1].type == CLOSERS[kind]:
                opened.pop()
    return opened


class ParseFailure(NamedTuple):
    tokens: list[Token]  # the parser's tokens; the last is the end-of-plan sentinel
    index: int  # type: ignore[assignment]  # the token the parser could not take (hides tuple.index)
    segment_start: int  # where parsing (re)started
    expected: frozenset[str]  # the terminals the parser could have taken
    literals: dict[str, str]  # terminal name -> its literal text
    lines: Lines
    stack: list  # the parser's values: tokens and the nodes built so far

    @property
    def last(self) -> int:
        """The index of the last real token."""
        return len(self.tokens) - 2

    def token(self, index: int) -> Token | None:
        return self.tokens[index] if 0 <= index <= self.last else None

    @property
    def found(self) -> Token | None:
        return self.token(self.index)

    @property
    def previous(self) -> Token | None:
        return self.token(self.index - 1)

    def kind(self, index: int) -> str | None:
        token = self.token(index)
        return token.type if token else None

    def span(self, start: int, end: int) -> Span:
        return Span(start, end, self.lines)

    def token_span(self, token: Token) -> Span:
        return Span(token.start, token.end, self.lines)

    def found_span(self) -> Span:
        token = self.found
        end = self.tokens[self.last].end
        return self.token_span(token) if token else self.span(end, end)

    def text(self, first: Token, last: Token) -> str:
        return clip(self.lines.source[first.start : last.end])

    def describe(self, token: Token | None) -> str:
        if token is None:
            return "the end of the plan"
        if token.type == "STRING":
            return f"the string {clip(token.text)}"
        return f"`{clip(token.text)}`"

    def words(self, terminals: Iterable[str]) -> str:
        """`terminals` in words, what most likely belongs here first: "`,` or `)`", "a value"."""
        names = set(terminals)
        brackets = self.open_brackets()
        innermost = OPENERS[brackets[-1].type] if brackets else None
        names = {name for name in names if name not in CLOSERS or name == innermost}
        words = []
        if VALUE_STARTS <= names:
            words.append("a value")
            names -= VALUE_STARTS | {"NAME"}
        operators = {name for name in names if self.literals.get(name) in OPERATORS}
        names -= operators
        words += [self._word(name) for name in sorted(names, key=_word_order)]
        if operators:
            words.append("an operator such as `==` or `and`")
        if len(words) > 5:
            words = words[:5] + ["..."]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]

    def _word(self, name: str) -> str:
        return NAMED_TERMINALS.get(name) or f"`{self.literals.get(name, name)}`"

    def open_brackets(self) -> list[Token]:
        """The brackets opened in this segment and not closed before the failure."""
        return open_brackets(self.stack)

    def position(self, token: Token) -> int:
        """The index of `token` in `tokens`."""
        return bisect_left(self.tokens, (token.start, token.end), 0, self.last + 1)

    def starts_step(self, index: int) -> bool:
        kinds = [self.kind(index + k) for k in range(4)]
        return kinds[0] == "NAME" and (kinds[1] == "LPAR" or kinds[1:] == ["EQUAL", "NAME", "LPAR"])

    def starts_line(self, index: int) -> bool:
        before, token = self.token(index - 1), self.token(index)
        return token is not None and (before is None or "\n" in self.lines.source[before.end : token.start])

    def same_line(self, first: Token, second: Token) -> bool:
        return "\n" not in self.lines.source[first.end : second.start]

    def line_start_near(self, index: int, within: int) -> int | None:
        """The index of the first token on the line of token `index`, if it is at most `within` before it."""
        index = min(index, self.last)
        for candidate in range(index, max(index - within, 0) - 1, -1):
            if candidate == 0 or self.starts_line(candidate):
                return candidate
        return None

    def line_end(self, index: int) -> Token:
        """The last token on the line of token `index`."""
        last = self.tokens[index]
        for token in self.tokens[index + 1 : self.last + 1]:
            if not self.same_line(last, token):
                break
            last = token
        return last

    def matching(self, index: int) -> int:
        """The index of the bracket closing the one at `index` (the last token if none)."""
        depth = 0
        for position in range(index, self.last + 1):
            kind = self.tokens[position].type
            if kind in OPENERS:
                depth += 1
            elif kind in CLOSERS:
                depth -= 1
                if depth == 0:
                    return position
        return self.last

    def value_end(self, index: int) -> int:
        """The index of the last token of the value starting at `index` (up to `,` or the closer)."""
        depth = 0
        last = index
        for position in range(index, self.last + 1):
            kind = self.tokens[position].type
            if kind in OPENERS:
                depth += 1
            elif kind in CLOSERS:
                if depth == 0:
                    break
                depth -= 1
            elif kind == "COMMA" and depth == 0:
                break
            last = position
            if depth == 0 and self.starts_line(position + 1):
                break
        return last

    def current_argument(self) -> str | None:
        """`limit: 5` when the failure follows an argument's value inside a step's parentheses."""
        brackets = self.open_brackets()
        if not brackets or brackets[-1].type != "LPAR":
            return None
        opener = self.position(brackets[-1])
        if self.kind(opener - 1) != "NAME":
            return None
        depth = 0
        start = self.index
        while start - 1 > opener:  # back to the `,` or `(` before this argument
            kind = self.tokens[start - 1].type
            if kind in CLOSERS:
                depth += 1
            elif kind in OPENERS:
                depth -= 1
            elif kind == "COMMA" and depth == 0:
                break
            start -= 1
        if start >= self.index:
            return None
        return self.text(self.tokens[start], self.tokens[self.index - 1])


def _word_order(name: str) -> tuple:
    return (FIRST_WORDS.index(name) if name in FIRST_WORDS else len(FIRST_WORDS), name in NAMED_TERMINALS, name)


def clip(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
