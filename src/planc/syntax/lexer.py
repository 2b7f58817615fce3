"""Turn plan text into tokens with one regular expression.

The token patterns come from the grammar's terminals; what this module adds is
speed (one `finditer` over the text, positions computed as it goes) and the
mistakes models make at the character level, each reported once with a fix
and replaced by the token that was meant, so parsing goes on after them.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from planc.diagnostics import Diagnostic, Fix, Position, Span
from planc.syntax.grammar import tables

ERROR = "ERROR"  # a token the lexer already reported; the parser only recovers


class Token(NamedTuple):
    type: str
    text: str
    start: Position
    end: Position

    @property
    def span(self) -> Span:
        return Span(self.start, self.end)


class Lexed(NamedTuple):
    tokens: list[Token]
    comments: list[Token]
    diagnostics: list[Diagnostic]


# Character-level mistakes, tried after every terminal of the grammar.
# Each maps to (terminal meant or ERROR, code, message, fix text or None).
_MISTAKES = {
    "E_TRIPLE": r'"""(?:(?!""")[\s\S])*\Z',
    "E_UNTERMINATED": r'"(?:\\.|[^"\\\n])*',
    "E_SINGLE": r"'(?:\\.|[^'\\\n])*'?",
    "E_FENCE": r"```[^\n]*",
    "E_PIPE": r"\|\|?",
    "E_AMP": r"&&?",
    "E_BANG": r"!",
    "E_CHAR": r".",
}


class _Lexer:
    def __init__(self) -> None:
        grammar = tables()
        ignore = set(grammar.ignore)
        self.keywords: dict[str, str] = {}
        self.literal_types: dict[str, str] = {}
        patterns: dict[str, str] = {}
        literals = []
        for terminal in grammar.terminals:
            if terminal.name == "INT":
                continue  # digits lex as NUMBER; the parser retypes them where INT is expected
            if terminal.literal is not None:
                value = terminal.literal
                self.literal_types[value] = terminal.name
                if re.fullmatch(r"[A-Za-z_]\w*", value):
                    self.keywords[value] = terminal.name
                else:
                    literals.append((value, terminal.name))
            else:
                patterns[terminal.name] = terminal.regexp
        self.ignored = ignore
        groups = [f"(?P<{name}>{regexp})" for name, regexp in patterns.items() if name in ignore]
        groups.append(f"(?P<E_TRIPLE>{_MISTAKES['E_TRIPLE']})")
        groups += [f"(?P<{name}>{regexp})" for name, regexp in patterns.items() if name not in ignore]
        for value, name in sorted(literals, key=lambda item: -len(item[0])):
            groups.append(f"(?P<{name}>{re.escape(value)})")
        groups += [f"(?P<{name}>{regexp})" for name, regexp in _MISTAKES.items() if name != "E_TRIPLE"]
        self.scanner = re.compile("|".join(groups), re.DOTALL)

    def tokenize(self, text: str) -> Lexed:
        tokens: list[Token] = []
        comments: list[Token] = []
        diagnostics: list[Diagnostic] = []
        keywords = self.keywords
        ignored = self.ignored
        append = tokens.append
        line, line_start = 1, 0
        for match in self.scanner.finditer(text):
            kind = match.lastgroup
            value = match.group()
            offset = match.start()
            start = Position(offset, line, offset - line_start + 1)
            newlines = value.count("\n")
            if newlines:
                line += newlines
                line_start = offset + value.rfind("\n") + 1
            end_offset = offset + len(value)
            end = Position(end_offset, line, end_offset - line_start + 1)
            if kind == "NAME":
                append(Token(keywords.get(value, "NAME"), value, start, end))
            elif kind in ignored:
                if kind != "WHITESPACE":
                    comments.append(Token(kind, value, start, end))
            elif kind.startswith("E_"):
                token = self._mistake(kind, value, Span(start, end), diagnostics, text)
                if token is not None:
                    append(token)
            else:
                append(Token(kind, value, start, end))
        return Lexed(tokens, comments, diagnostics)

    def _mistake(self, kind, value, span, diagnostics, text):
        """Report a character-level mistake; return the token that was meant, if any."""
        def report(code, message, replacement=None, hints=()):
            fix = Fix(span, replacement) if replacement is not None else None
            diagnostics.append(Diagnostic(code, message, span, hints=tuple(hints), fix=fix))

        meant = None
        if kind in ("E_TRIPLE", "E_UNTERMINATED"):
            report("E101", "unterminated string: this string has no closing `\"`",
                   hints=["close the string with `\"` on the same line, or use `\"\"\"` for text over several lines"])
            return Token(ERROR, value, span.start, span.end)
        if kind == "E_SINGLE":
            body = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
            fixed = '"' + body.replace("\\'", "'").replace('"', '\\"') + '"'
            report("E103", "strings use double quotes, not single quotes", fixed,
                   [f"write {fixed}"])
            return Token("STRING", fixed, span.start, span.end)
        if kind == "E_FENCE":
            if not any(d.message.startswith("the plan is inside a markdown") for d in diagnostics):
                report("E100", "the plan is inside a markdown code fence",
                       hints=["remove the ``` lines, or run `planc check --extract` to take the plan out of a model reply"])
            return None
        if kind == "E_PIPE":
            meant = ("|>", "`|` is not an operator here: a pipe is written `|>`") if value == "|" else \
                ("or", "`||` is not an operator here: write `or`")
        elif kind == "E_AMP":
            meant = ("and", f"`{value}` is not an operator here: write `and`")
        elif kind == "E_BANG":
            meant = ("not", "`!` is not an operator here: write `not` (or `!=` for inequality)")
        if meant is not None:
            word, message = meant
            report("E100", message, word + " " if word == "not" else word)
            return Token(self.literal_types[word], word, span.start, span.end)
        if value.isspace() or value == "\ufeff":
            return None  # stray control whitespace the grammar's pattern missed
        report("E100", f"unexpected character `{value}`",
               hints=["a plan is made of steps like `tool(name: value)` joined by `|>`"])
        return Token(ERROR, value, span.start, span.end)


@functools.cache
def _lexer() -> _Lexer:
    return _Lexer()


def tokenize(text: str) -> Lexed:
    """Split `text` into tokens, comments and character-level diagnostics.

    >>> [t.type for t in tokenize('a(x: 1) |> b()').tokens]
    ['NAME', 'LPAR', 'NAME', 'COLON', 'NUMBER', 'RPAR', '__ANON_0', 'NAME', 'LPAR', 'RPAR']
    """
    return _lexer().tokenize(text)
