"""Turn plan text into tokens with one regular expression.

The token patterns come from the grammar's terminals; what this module adds is
speed (one `finditer` over the text, positions computed as it goes) and the
mistakes models make at the character level, each reported once with a fix
and replaced by the token that was meant, so parsing goes on after them.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Final, NamedTuple

from planc.diagnostics import Diagnostic, Fix, Lines, Span
from planc.diagnostics.build import diagnostic
from planc.syntax.grammar import tables

ERROR = "ERROR"  # a token the lexer already reported; the parser only recovers


class Token(NamedTuple):
    """A token. The lexer hands the parser plain tuples of this layout (a NamedTuple costs
    four times as much to make, and a plan has tens of thousands of tokens); the parser turns
    them into Tokens only when it has to explain a failure."""

    # Offsets first: the parser keeps tokens and spans on one stack and reads [0] and [1] of both.
    start: int  # offsets into the source
    end: int
    type: str
    text: str


# Token's fields, for reading a plain token tuple (Final: each a literal index, so a field keeps its type)
START: Final = 0
END: Final = 1
TYPE: Final = 2
TEXT: Final = 3
RawToken = tuple[int, int, str, str]  # a plain token tuple: start, end, type, text


class Lexed(NamedTuple):
    tokens: list[RawToken]  # plain tuples laid out as Token
    comments: list[Token]
    diagnostics: list[Diagnostic]
    lines: Lines


# The grammar's STRING as the lexer matches it. `"(\\.|[^"\\\n])*"` repeats a group once per
# character, and Python's `re` keeps a backtracking record for every repetition of a group (about
# 120 bytes a character: gigabytes for a string of 10 MB). Written as runs of plain characters
# between escapes, each run and the whole repeated possessively (`*+`), it keeps no state per
# character. It is the same language (tests/test_big_inputs.py compares the two): no character of a
# run can start what follows it, so giving one back could never make a match. The grammar keeps its
# own spelling, which the decoders' formats (docs/grammar.md) can say and this one could not.
LINEAR_STRING = r'(?:"""[^"\\]*+(?:(?:\\.|"(?!""))[^"\\]*+)*+"""|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")'

# Character-level mistakes, tried after every terminal of the grammar.
# Each maps to (terminal meant or ERROR, code, message, fix text or None).
# The string-like ones repeat runs of plain characters possessively, as LINEAR_STRING does.
_MISTAKES = {
    "E_TRIPLE": r'"""[^"]*+(?:"(?!"")[^"]*+)*+\Z',  # no closing `"""` before the end of the text
    "E_ZEROS": r"-?0[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?",
    "E_UNTERMINATED": r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+',
    "E_SINGLE": r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'?",
    "E_CURLY": r"[“”„](?:[^“”\n])*[“”]?",
    "E_FENCE": r"(?:```|~~~)[^\n]*",
    "E_PIPE": r"\|\|?",
    "E_AMP": r"&&?",
    "E_BANG": r"!",
    "E_CHAR": r".",
}
_BEFORE_TERMINALS = ("E_TRIPLE", "E_ZEROS")
MAX_NUMBER = 100  # characters; a longer number is refused rather than turned into a huge int


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
                patterns[terminal.name] = LINEAR_STRING if terminal.name == "STRING" else terminal.regexp
        # Ignored whitespace is matched as the optional prefix of every token, not as a
        # token of its own: half as many matches. Other ignored terminals are comments.
        spaces = [name for name in ignore if re.fullmatch(patterns[name], " ")]
        self.comments = ignore - set(spaces)
        prefix = "|".join(patterns[name] for name in spaces)
        groups = [f"(?P<{name}>{patterns[name]})" for name in sorted(self.comments)]
        # These must be tried before STRING and NUMBER, which would match a part of them.
        groups += [f"(?P<{name}>{_MISTAKES[name]})" for name in _BEFORE_TERMINALS]
        groups += [f"(?P<{name}>{regexp})" for name, regexp in patterns.items() if name not in ignore]
        for value, name in sorted(literals, key=lambda item: -len(item[0])):
            groups.append(f"(?P<{name}>{re.escape(value)})")
        groups += [f"(?P<{name}>{regexp})" for name, regexp in _MISTAKES.items() if name not in _BEFORE_TERMINALS]
        alternatives = "|".join(groups)
        # `pieces` splits the text in C into (whitespace, token) pairs; `kinds` says which
        # terminal a piece is when its first character does not already tell.
        self.pieces = re.compile(f"((?:{prefix})?)({_uncaptured(alternatives)})", re.DOTALL)
        self.kinds = re.compile(alternatives, re.DOTALL)
        self.by_text = {**self.literal_types}

    def tokenize(self, text: str) -> Lexed:
        tokens: list[RawToken] = []
        comments: list[Token] = []
        diagnostics: list[Diagnostic] = []
        lines = Lines(text)
        by_text = self.by_text
        comment_kinds = self.comments
        kind_of = self.kinds.match
        append = tokens.append
        end = 0
        for space, value in self.pieces.findall(text):
            start = end + len(space)
            end = start + len(value)
            kind = by_text.get(value)
            if kind is None:
                first = value[0]
                if "a" <= first <= "z" or "A" <= first <= "Z" or first == "_":
                    kind = "NAME"
                elif "1" <= first <= "9" and len(value) <= MAX_NUMBER:
                    kind = "NUMBER"
                else:
                    matched = kind_of(value)
                    assert matched is not None and matched.lastgroup is not None  # a piece is a terminal
                    kind = matched.lastgroup
                    if kind == "NUMBER" and len(value) > MAX_NUMBER:
                        kind = "E_LONG_NUMBER"
                    if kind in comment_kinds:
                        comments.append(Token(start, end, kind, value))
                        continue
                    if kind.startswith("E_"):
                        token = self._mistake(kind, value, Span(start, end, lines), diagnostics)
                        if token is not None:
                            append(token)
                        continue
            append((start, end, kind, value))
        return Lexed(tokens, comments, diagnostics, lines)

    def _mistake(self, kind: str, value: str, span: Span, diagnostics: list[Diagnostic]) -> Token | None:
        """Report a character-level mistake; return the token that was meant, if any."""
        report = diagnostics.append
        if kind == "E_TRIPLE":
            report(diagnostic("E101", "unclosed_triple", span, hints=['close it with `"""`']))
            return Token(span.start_offset, span.end_offset, ERROR, value)
        if kind == "E_UNTERMINATED":
            report(
                diagnostic(
                    "E101",
                    "unclosed",
                    span,
                    hints=['close the string with `"` on the same line, or use `"""` for text over several lines'],
                )
            )
            return Token(span.start_offset, span.end_offset, ERROR, value)
        if kind == "E_LONG_NUMBER" or (kind == "E_ZEROS" and len(value) > MAX_NUMBER):
            report(diagnostic("E100", "long_number", span, most=MAX_NUMBER))
            return Token(span.start_offset, span.end_offset, ERROR, value)
        if kind == "E_ZEROS":
            sign = "-" if value.startswith("-") else ""
            rest = value[len(sign) :].lstrip("0")
            fixed = sign + (rest if rest[:1].isdigit() else "0" + rest)
            report(diagnostic("E100", "leading_zero", span, hints=[f"write `{fixed}`"], fix=Fix(span, fixed), number=value))
            return Token(span.start_offset, span.end_offset, "NUMBER", fixed)
        if kind == "E_SINGLE":
            body = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
            fixed = '"' + body.replace("\\'", "'").replace('"', '\\"') + '"'
            report(diagnostic("E103", "single_quotes", span, hints=[f"write {fixed}"], fix=Fix(span, fixed)))
            return Token(span.start_offset, span.end_offset, "STRING", value)
        if kind == "E_CURLY":
            body = value[1:-1] if len(value) > 1 and value[-1] in "“”" else value[1:]
            fixed = json.dumps(body, ensure_ascii=False)
            report(diagnostic("E100", "curly_quotes", span, hints=[f"write {fixed}"], fix=Fix(span, fixed)))
            return Token(span.start_offset, span.end_offset, "STRING", value)
        if kind == "E_FENCE":
            if not any(d.message.startswith("the plan is inside a markdown") for d in diagnostics):
                report(
                    diagnostic(
                        "E100",
                        "fence",
                        span,
                        hints=["remove the ``` lines, or run `planc check --extract` to take the plan out of a model reply"],
                    )
                )
            return None
        # Another language's operator: reported, and read as the word planc spells it with.
        if kind == "E_PIPE" and value == "|":
            report(diagnostic("E100", "bar", span, fix=Fix(span, "|>")))
            return self._read_as("|>", span)
        if kind == "E_PIPE":
            report(diagnostic("E100", "bars", span, fix=Fix(span, "or")))
            return self._read_as("or", span)
        if kind == "E_AMP":
            report(diagnostic("E100", "ampersand", span, fix=Fix(span, "and"), written=value))
            return self._read_as("and", span)
        if kind == "E_BANG":
            report(diagnostic("E100", "bang", span, fix=Fix(span, "not ")))
            return self._read_as("not", span)
        if value.isspace() or value == "\ufeff":
            return None  # stray control whitespace the grammar's pattern missed
        report(
            diagnostic(
                "E100",
                "character",
                span,
                hints=["a plan is made of steps like `tool(name: value)` joined by `|>`"],
                character=value,
            )
        )
        return Token(span.start_offset, span.end_offset, ERROR, value)

    def _read_as(self, word: str, span: Span) -> Token:
        return Token(span.start_offset, span.end_offset, self.literal_types[word], word)


def _uncaptured(pattern: str) -> str:
    """`pattern` with its groups made non-capturing, so `findall` returns whole matches.

    >>> _uncaptured('(?P<A>a(b|c))|[(]|d')
    '(?:a(?:b|c))|[(]|d'
    """
    out = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(" and pattern.startswith("(?P<", index):
            out.append("(?:")
            index = pattern.index(">", index) + 1
            continue
        elif char == "(" and not pattern.startswith("(?", index):
            char = "(?:"
        out.append(char)
        index += 1
    return "".join(out)


@functools.cache
def _lexer() -> _Lexer:
    return _Lexer()


def tokenize(text: str) -> Lexed:
    """Split `text` into tokens, comments and character-level diagnostics.

    >>> [token[TYPE] for token in tokenize('a(x: 1) |> b()').tokens]
    ['NAME', 'LPAR', 'NAME', 'COLON', 'NUMBER', 'RPAR', '__ANON_0', 'NAME', 'LPAR', 'RPAR']
    """
    return _lexer().tokenize(text)
