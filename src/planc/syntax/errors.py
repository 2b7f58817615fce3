"""Explain a parse failure in words a person (or the model that wrote the plan) understands.

`explain` looks at what the parser expected, the token it found and the
tokens around it, and returns a diagnostic plus, where the intent is certain,
a repair (a token to insert before, or to read instead of, the one found) so
the parser can go on and report the next independent error.
"""

from __future__ import annotations

from typing import NamedTuple

from planc.diagnostics import Diagnostic, Fix, Span
from planc.syntax.lexer import Token

OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
CLOSERS = {closer: opener for opener, closer in OPENERS.items()}
VALUE_STARTS = {"STRING", "NUMBER", "TRUE", "FALSE", "NULL", "DOLLAR", "LSQB", "LBRACE", "LPAR", "NOT"}
NAMED_TERMINALS = {
    "NAME": "a name", "STRING": "a string", "NUMBER": "a number", "INT": "a whole number",
    "$END": "the end of the plan",
}
PYTHON_WORDS = {"def", "import", "from", "class", "for", "while", "if", "return", "print",
                "async", "await", "with", "lambda", "try", "elif", "else"}
SHELL_OR_PROSE_HINT = "a plan is steps like `search(query: \"x\") |> summarize(style: \"bullets\")`"
EXTRACT_HINT = "to take a plan out of a model reply, run `planc check --extract`"


class Repair(NamedTuple):
    """Read `token_type` before the current token (insert) or instead of it (replace)."""

    kind: str  # "insert" or "replace"
    token_type: str


class Explanation(NamedTuple):
    diagnostic: Diagnostic
    repair: Repair | None = None


class ParseFailure(NamedTuple):
    tokens: list[Token]
    index: int          # the token the parser could not take (len(tokens) at the end)
    segment_start: int  # where parsing (re)started
    expected: frozenset[str]
    literals: dict[str, str]  # terminal name -> its literal text
    source: str


def explain(failure: ParseFailure) -> Explanation:
    """The diagnostic (and repair, if certain) for one parse failure."""
    for rule in (_pasted_code, _unclosed, _positional, _equals_for_colon, _colon_for_equals,
                 _missing_comma, _empty_pipe):
        explanation = rule(failure)
        if explanation is not None:
            return explanation
    return _generic(failure)


# --- what the tokens around the failure say ---------------------------------------------

def _token(failure: ParseFailure, index: int) -> Token | None:
    return failure.tokens[index] if 0 <= index < len(failure.tokens) else None


def _found(failure: ParseFailure) -> Token | None:
    return _token(failure, failure.index)


def _end_span(failure: ParseFailure) -> Span:
    last = failure.tokens[-1]
    return Span(last.end, last.end)


def _found_span(failure: ParseFailure) -> Span:
    token = _found(failure)
    return token.span if token else _end_span(failure)


def _describe(failure: ParseFailure, token: Token | None) -> str:
    if token is None:
        return "the end of the plan"
    if token.type == "STRING":
        return f"the string {_clip(token.text)}"
    return f"`{_clip(token.text)}`"


def _clip(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _words(failure: ParseFailure, terminals) -> str:
    names = set(terminals)
    words = []
    if VALUE_STARTS <= names:
        words.append("a value")
        names -= VALUE_STARTS | {"NAME"}
    for name in sorted(names, key=_word_order):
        words.append(NAMED_TERMINALS.get(name) or f"`{failure.literals.get(name, name)}`")
    if len(words) > 5:
        words = words[:5] + ["..."]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _word_order(name: str) -> tuple:
    return (name in NAMED_TERMINALS, name)


def _open_brackets(failure: ParseFailure) -> list[Token]:
    """The brackets opened in this segment and not closed before the failure."""
    stack: list[Token] = []
    for token in failure.tokens[failure.segment_start : failure.index]:
        if token.type in OPENERS:
            stack.append(token)
        elif token.type in CLOSERS and stack and stack[-1].type == CLOSERS[token.type]:
            stack.pop()
    return stack


def _starts_step(failure: ParseFailure, index: int) -> bool:
    types = [t.type if t else None for t in (_token(failure, index + k) for k in range(4))]
    return types[0] == "NAME" and (types[1] == "LPAR" or types[1:] == ["EQUAL", "NAME", "LPAR"])


def _starts_line(failure: ParseFailure, index: int) -> bool:
    before = _token(failure, index - 1)
    token = _token(failure, index)
    return token is not None and (before is None or before.end.line < token.start.line)


def _current_argument(failure: ParseFailure) -> str | None:
    """`limit: 5` when the failure follows an argument's value inside a step's parentheses."""
    brackets = _open_brackets(failure)
    if not brackets or brackets[-1].type != "LPAR":
        return None
    opener = failure.tokens.index(brackets[-1], failure.segment_start)
    if _token(failure, opener - 1) is None or failure.tokens[opener - 1].type != "NAME":
        return None
    start = opener + 1
    depth = 0
    for index in range(opener + 1, failure.index):
        token = failure.tokens[index]
        if token.type in OPENERS:
            depth += 1
        elif token.type in CLOSERS:
            depth -= 1
        elif token.type == "COMMA" and depth == 0:
            start = index + 1
    if start >= failure.index:
        return None
    first, last = failure.tokens[start], failure.tokens[failure.index - 1]
    return _source_between(failure, first, last)


def _source_between(failure: ParseFailure, first: Token, last: Token) -> str:
    return _clip(failure.source[first.start.offset : last.end.offset])


def _value_end(failure: ParseFailure, index: int) -> int:
    """The index of the last token of the value starting at `index` (up to `,` or the closer)."""
    depth = 0
    last = index
    for position in range(index, len(failure.tokens)):
        token = failure.tokens[position]
        if token.type in OPENERS:
            depth += 1
        elif token.type in CLOSERS:
            if depth == 0:
                break
            depth -= 1
        elif token.type == "COMMA" and depth == 0:
            break
        last = position
        if depth == 0 and _starts_line(failure, position + 1):
            break
    return last


def _diagnostic(code, message, span, hints=(), fix=None) -> Diagnostic:
    return Diagnostic(code, message, span, hints=tuple(hints), fix=fix)


# --- the specific mistakes, most specific first ------------------------------------------

def _pasted_code(failure: ParseFailure) -> Explanation | None:
    """JSON, Python or prose where a plan should start."""
    if failure.segment_start != 0 or failure.index > 2:
        return None
    token = failure.tokens[0]
    if token.type in ("LBRACE", "LSQB") and failure.index == 0:
        last = _token(failure, _matching(failure, 0)) or failure.tokens[-1]
        return Explanation(_diagnostic(
            "E100", "this is JSON, not a plan", Span(token.start, last.end),
            [SHELL_OR_PROSE_HINT, "each step is a tool call with named arguments, joined by `|>`"]))
    following = _token(failure, 1)
    if token.type == "NAME" and (token.text in PYTHON_WORDS or (following and following.type == "DOT")):
        line_end = _line_end(failure, 0)
        return Explanation(_diagnostic(
            "E100", "this looks like Python code, not a plan", Span(token.start, line_end.end),
            [SHELL_OR_PROSE_HINT, "plans have no raw code: use steps and `map`/`filter`/`decide`"]))
    if token.type == "NAME" and following is not None and following.type in ("NAME", "COMMA", "COLON") \
            and following.start.line == token.start.line:
        line_end = _line_end(failure, 0)
        return Explanation(_diagnostic(
            "E100", "this looks like prose, not a plan step", Span(token.start, line_end.end),
            [SHELL_OR_PROSE_HINT, EXTRACT_HINT]))
    return None


def _matching(failure: ParseFailure, index: int) -> int:
    depth = 0
    for position in range(index, len(failure.tokens)):
        kind = failure.tokens[position].type
        if kind in OPENERS:
            depth += 1
        elif kind in CLOSERS:
            depth -= 1
            if depth == 0:
                return position
    return len(failure.tokens) - 1


def _line_end(failure: ParseFailure, index: int) -> Token:
    line = failure.tokens[index].start.line
    last = failure.tokens[index]
    for token in failure.tokens[index:]:
        if token.start.line != line:
            break
        last = token
    return last


def _unclosed(failure: ParseFailure) -> Explanation | None:
    """The end of the plan, or the next step, while a bracket is still open."""
    at_end = failure.index >= len(failure.tokens)
    next_step = not at_end and _starts_line(failure, failure.index) and _starts_step(failure, failure.index)
    if not (at_end or next_step):
        return None
    brackets = _open_brackets(failure)
    if not brackets:
        return None
    opener = brackets[-1]
    closer = failure.literals[OPENERS[opener.type]]
    previous = failure.tokens[failure.index - 1]
    where = "the end of the plan" if at_end else f"the next step `{failure.tokens[failure.index].text}(`"
    after = _current_argument(failure) or _clip(previous.text)
    return Explanation(
        _diagnostic(
            "E100", f"this `{opener.text}` is never closed",
            opener.span,
            [f"add `{closer}` after `{after}`, before {where}"],
            Fix(Span(previous.end, previous.end), closer)),
        Repair("insert", OPENERS[opener.type]) if OPENERS[opener.type] in failure.expected else None)


def _positional(failure: ParseFailure) -> Explanation | None:
    """A value where an argument name should be: `search("x")`."""
    expected = failure.expected
    if not ({"NAME", "RPAR"} <= expected) or "STRING" in expected:
        return None
    token = _found(failure)
    if token is None:
        return None
    following = _token(failure, failure.index + 1)
    bare_name = token.type == "NAME" and (following is None or following.type not in ("COLON", "EQUAL"))
    if token.type not in VALUE_STARTS and not bare_name:
        return None
    last = failure.tokens[_value_end(failure, failure.index)]
    span = Span(token.start, last.end)
    value = _source_between(failure, token, last)
    return Explanation(_diagnostic(
        "E102", f"positional argument `{value}`: arguments are passed by name",
        span, [f"write `name: {value}`, with the name of the parameter this value is for"]))


def _equals_for_colon(failure: ParseFailure) -> Explanation | None:
    token = _found(failure)
    previous = _token(failure, failure.index - 1)
    if token is None or token.type != "EQUAL" or "COLON" not in failure.expected:
        return None
    name = previous.text if previous else "name"
    return Explanation(
        _diagnostic("E100", f"expected `:` after the argument name `{name}`, found `=`", token.span,
                    [f"arguments are written `{name}: value`"], Fix(token.span, ":")),
        Repair("replace", "COLON"))


def _colon_for_equals(failure: ParseFailure) -> Explanation | None:
    token = _found(failure)
    previous = _token(failure, failure.index - 1)
    if token is None or token.type != "COLON" or not {"EQUAL", "LPAR"} <= failure.expected:
        return None
    return Explanation(
        _diagnostic("E100", f"expected `(` or `=` after `{previous.text}`, found `:`", token.span,
                    [f"a step is labelled with `=`: `{previous.text} = tool(...)`"], Fix(token.span, " =")),
        Repair("replace", "EQUAL"))


def _missing_comma(failure: ParseFailure) -> Explanation | None:
    if "COMMA" not in failure.expected:
        return None
    token = _found(failure)
    following = _token(failure, failure.index + 1)
    if token is None:
        return None
    starts_argument = token.type == "NAME" and following is not None and following.type == "COLON"
    starts_item = token.type in VALUE_STARTS and "RSQB" in failure.expected
    if not (starts_argument or starts_item):
        return None
    previous = failure.tokens[failure.index - 1]
    brackets = _open_brackets(failure)
    closers = [failure.literals[OPENERS[brackets[-1].type]]] if brackets else []
    argument = _current_argument(failure)
    after = f"the argument `{argument}`" if argument else f"`{_clip(previous.text)}`"
    expected = " or ".join(f"`{c}`" for c in [","] + closers)
    return Explanation(
        _diagnostic("E100", f"expected {expected} after {after}, found {_describe(failure, token)}",
                    token.span, ["add `,` between them"], Fix(Span(previous.end, previous.end), ",")),
        Repair("insert", "COMMA"))


def _empty_pipe(failure: ParseFailure) -> Explanation | None:
    previous = _token(failure, failure.index - 1)
    if previous is None or previous.text != "|>" or failure.expected != {"NAME"}:
        return None
    return Explanation(_diagnostic(
        "E100", f"expected a step after `|>`, found {_describe(failure, _found(failure))}",
        _found_span(failure), ["`|>` passes the result on to the next step: `a(...) |> b(...)`"]))


def _generic(failure: ParseFailure) -> Explanation:
    token = _found(failure)
    previous = _token(failure, failure.index - 1)
    argument = _current_argument(failure) if previous is not None and previous.type not in ("LPAR", "COMMA") else None
    if argument:
        after = f" after the argument `{argument}`"
    elif previous is not None:
        after = f" after `{_clip(previous.text)}`"
    else:
        after = ""
    message = f"expected {_words(failure, failure.expected)}{after}, found {_describe(failure, token)}"
    hints = []
    if failure.index == 0:
        hints.append(SHELL_OR_PROSE_HINT)
    return Explanation(_diagnostic("E100", message, _found_span(failure), hints))
