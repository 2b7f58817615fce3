"""A parse failure and what the tokens around it say: the facts `errors.py` reasons with."""

from __future__ import annotations

from typing import NamedTuple

from planc.diagnostics import Lines, Span
from planc.syntax.lexer import Token

OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
CLOSERS = {closer: opener for opener, closer in OPENERS.items()}
VALUE_STARTS = {"STRING", "NUMBER", "TRUE", "FALSE", "NULL", "DOLLAR", "LSQB", "LBRACE", "LPAR", "NOT"}
KEYWORDS = {"TRUE", "FALSE", "NULL", "AND", "OR", "NOT", "CONTAINS"}
NAMED_TERMINALS = {
    "NAME": "a name", "STRING": "a string", "NUMBER": "a number", "INT": "a whole number",
    "$END": "the end of the plan",
}


class ParseFailure(NamedTuple):
    tokens: list[Token]
    index: int          # the token the parser could not take (len(tokens) at the end)
    segment_start: int  # where parsing (re)started
    expected: frozenset[str]  # the terminals the parser could have taken
    literals: dict[str, str]  # terminal name -> its literal text
    lines: Lines

    def token(self, index: int) -> Token | None:
        return self.tokens[index] if 0 <= index < len(self.tokens) else None

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
        end = self.tokens[-1].end
        return self.token_span(token) if token else self.span(end, end)

    def text(self, first: Token, last: Token) -> str:
        return clip(self.lines.source[first.start : last.end])

    def describe(self, token: Token | None) -> str:
        if token is None:
            return "the end of the plan"
        if token.type == "STRING":
            return f"the string {clip(token.text)}"
        return f"`{clip(token.text)}`"

    def words(self, terminals) -> str:
        """`terminals` in words: "`,` or `)`", "a value", "a name"."""
        names = set(terminals)
        brackets = self.open_brackets()
        innermost = OPENERS[brackets[-1].type] if brackets else None
        names = {name for name in names if name not in CLOSERS or name == innermost}
        words = []
        if VALUE_STARTS <= names:
            words.append("a value")
            names -= VALUE_STARTS | {"NAME"}
        for name in sorted(names, key=lambda name: (name in NAMED_TERMINALS, name)):
            words.append(NAMED_TERMINALS.get(name) or f"`{self.literals.get(name, name)}`")
        if len(words) > 5:
            words = words[:5] + ["..."]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]

    def open_brackets(self) -> list[Token]:
        """The brackets opened in this segment and not closed before the failure."""
        stack: list[Token] = []
        for token in self.tokens[self.segment_start : self.index]:
            if token.type in OPENERS:
                stack.append(token)
            elif token.type in CLOSERS and stack and stack[-1].type == CLOSERS[token.type]:
                stack.pop()
        return stack

    def starts_step(self, index: int) -> bool:
        kinds = [self.kind(index + k) for k in range(4)]
        return kinds[0] == "NAME" and (kinds[1] == "LPAR" or kinds[1:] == ["EQUAL", "NAME", "LPAR"])

    def starts_line(self, index: int) -> bool:
        before, token = self.token(index - 1), self.token(index)
        return token is not None and (before is None or "\n" in self.lines.source[before.end : token.start])

    def same_line(self, first: Token, second: Token) -> bool:
        return "\n" not in self.lines.source[first.end : second.start]

    def line_start(self, index: int) -> int:
        """The index of the first token on the line of token `index`."""
        index = min(index, len(self.tokens) - 1)
        while index > 0 and not self.starts_line(index):
            index -= 1
        return index

    def line_end(self, index: int) -> Token:
        """The last token on the line of token `index`."""
        last = self.tokens[index]
        for token in self.tokens[index + 1 :]:
            if not self.same_line(last, token):
                break
            last = token
        return last

    def matching(self, index: int) -> int:
        """The index of the bracket closing the one at `index` (the last token if none)."""
        depth = 0
        for position in range(index, len(self.tokens)):
            kind = self.tokens[position].type
            if kind in OPENERS:
                depth += 1
            elif kind in CLOSERS:
                depth -= 1
                if depth == 0:
                    return position
        return len(self.tokens) - 1

    def value_end(self, index: int) -> int:
        """The index of the last token of the value starting at `index` (up to `,` or the closer)."""
        depth = 0
        last = index
        for position in range(index, len(self.tokens)):
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
        opener = self.tokens.index(brackets[-1], self.segment_start)
        if self.kind(opener - 1) != "NAME":
            return None
        start = opener + 1
        depth = 0
        for index in range(opener + 1, self.index):
            kind = self.tokens[index].type
            if kind in OPENERS:
                depth += 1
            elif kind in CLOSERS:
                depth -= 1
            elif kind == "COMMA" and depth == 0:
                start = index + 1
        if start >= self.index:
            return None
        return self.text(self.tokens[start], self.tokens[self.index - 1])


def clip(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
