"""Explain a parse failure in words a person (or the model that wrote the plan) understands.

`explain` tries the known mistakes, most specific first, and falls back to
"expected X after Y, found Z". Each returns a diagnostic and, where the intent
is certain, a repair (a token to insert before, or to read instead of, the one
found) so the parser can go on and report the next independent error.
"""

from __future__ import annotations

from typing import NamedTuple

from planc.diagnostics import Diagnostic, Fix
from planc.diagnostics.build import diagnostic
from planc.syntax.failure import (
    CLOSERS,
    KEYWORDS,
    OPENERS,
    VALUE_STARTS,
    ParseFailure,
    clip,
)

PYTHON_WORDS = {
    "def",
    "import",
    "from",
    "class",
    "for",
    "while",
    "if",
    "return",
    "print",
    "async",
    "await",
    "with",
    "lambda",
    "try",
    "elif",
    "else",
}
PLAN_HINT = 'a plan is steps like `search(query: "x") |> summarize(style: "bullets")`'
EXTRACT_HINT = "to take a plan out of a model reply, run `planc check --extract`"


class Repair(NamedTuple):
    """Read `token_type` before the current token (insert) or instead of it (replace)."""

    kind: str  # "insert" or "replace"
    token_type: str


class Explanation(NamedTuple):
    diagnostic: Diagnostic
    repair: Repair | None = None


def explain(failure: ParseFailure) -> Explanation:
    """The diagnostic (and repair, if certain) for one parse failure."""
    for rule in (
        _not_a_plan,
        _unclosed,
        _nested_step,
        _keyword_argument,
        _positional,
        _bare_argument,
        _equals_for_colon,
        _equals_in_record,
        _colon_for_equals,
        _missing_comma,
        _empty_pipe,
    ):
        explanation = rule(failure)
        if explanation is not None:
            return explanation
    return _generic(failure)


def _not_a_plan(failure: ParseFailure) -> Explanation | None:
    """JSON, Python, YAML or prose where a pipeline should start."""
    first = failure.line_start_near(failure.index, within=2)
    if first is None or first < failure.segment_start or failure.open_brackets():
        return None
    token = failure.tokens[first]
    following = failure.token(first + 1)
    line = failure.span(token.start, failure.line_end(first).end)
    if token.type in ("LBRACE", "LSQB") and failure.index == first:
        last = failure.tokens[failure.matching(first)]
        return Explanation(
            diagnostic(
                "E100",
                "json",
                failure.span(token.start, last.end),
                hints=[PLAN_HINT, "each step is a tool call with named arguments, joined by `|>`"],
            )
        )
    if token.type != "NAME" or following is None or not failure.same_line(token, following):
        return None
    if token.text in PYTHON_WORDS or following.type == "DOT":
        return Explanation(
            diagnostic("E100", "python", line, hints=[PLAN_HINT, "plans have no raw code: use steps and `map`/`filter`/`decide`"])
        )
    after_colon = failure.token(first + 2)
    if following.type == "COLON" and (after_colon is None or not failure.same_line(following, after_colon)):
        return Explanation(diagnostic("E100", "yaml", line, hints=[PLAN_HINT]))
    if following.type in ("NAME", "COMMA") or (following.type == "COLON" and not failure.starts_step(first + 2)):
        return Explanation(diagnostic("E100", "prose", line, hints=[PLAN_HINT, EXTRACT_HINT]))
    return None


def _unclosed(failure: ParseFailure) -> Explanation | None:
    """The end of the plan, or the next step, while a bracket is still open."""
    brackets = failure.open_brackets()
    if not brackets:
        return None
    opener = brackets[-1]
    closer_type = OPENERS[opener.type]
    found = failure.found
    at_end = found is None
    next_step = not at_end and failure.starts_line(failure.index) and failure.starts_step(failure.index)
    if not (next_step or (at_end and closer_type in failure.expected)):
        return None
    closer = failure.literals[closer_type]
    previous = failure.previous
    assert previous is not None  # the opener comes before
    where = "the end of the plan" if found is None else f"the next step `{found.text}(`"
    after = failure.current_argument() or clip(previous.text)
    return Explanation(
        diagnostic(
            "E100",
            "unclosed",
            failure.token_span(opener),
            bracket=opener.text,
            hints=[f"add `{closer}` after `{after}`, before {where}"],
            fix=Fix(failure.span(previous.end, previous.end), closer),
        ),
        Repair("insert", closer_type) if closer_type in failure.expected else None,
    )


def _nested_step(failure: ParseFailure) -> Explanation | None:
    """`summarize(text: search(query: "x"))`: a step written where a value goes."""
    name = failure.previous
    if failure.kind(failure.index) != "LPAR" or name is None or name.type != "NAME":
        return None
    if failure.kind(failure.index - 2) not in ("COLON", "COMMA", "LSQB"):
        return None
    last = failure.tokens[failure.matching(failure.index)]
    call = failure.text(name, last)
    return Explanation(
        diagnostic(
            "E100",
            "step_as_value",
            failure.span(name.start, last.end),
            call=call,
            hints=[
                f"run `{name.text}(...)` as a step of its own before this one, and pass its result "
                f"with `$n` or a label (`found = {name.text}(...)`, then `$found`)"
            ],
        )
    )


def _keyword_argument(failure: ParseFailure) -> Explanation | None:
    """`agent(not: {...})`: a keyword where an argument name goes."""
    token = failure.found
    if token is None or token.type not in KEYWORDS or failure.kind(failure.index + 1) != "COLON":
        return None
    if not {"NAME", "RPAR"} <= failure.expected:
        return None
    return Explanation(
        diagnostic(
            "E100",
            "keyword_name",
            failure.token_span(token),
            keyword=token.text,
            hints=["the keywords are `true false null and or not contains`; inside a record (`{not: ...}`) they can be keys"],
        )
    )


def _positional(failure: ParseFailure) -> Explanation | None:
    """A value where an argument name should be: `search("x")`."""
    if not ({"NAME", "RPAR"} <= failure.expected) or "STRING" in failure.expected:
        return None
    token = failure.found
    if token is None or token.type not in VALUE_STARTS:
        return None
    return _positional_from(failure, failure.index)


def _bare_argument(failure: ParseFailure) -> Explanation | None:
    """`git__git_log(main)`: a bare word where a named argument goes."""
    if failure.expected != {"COLON"} or failure.kind(failure.index - 2) not in ("LPAR", "COMMA"):
        return None
    if failure.kind(failure.index) not in ("COMMA", "RPAR", "DOT", "LSQB"):
        return None
    return _positional_from(failure, failure.index - 1)


def _positional_from(failure: ParseFailure, index: int) -> Explanation:
    first = failure.tokens[index]
    last = failure.tokens[failure.value_end(index)]
    value = failure.text(first, last)
    return Explanation(
        diagnostic(
            "E102",
            "positional",
            failure.span(first.start, last.end),
            value=value,
            hints=[f"write `name: {value}`, with the name of the parameter this value is for"],
        )
    )


def _equals_for_colon(failure: ParseFailure) -> Explanation | None:
    token = failure.found
    if token is None or token.type != "EQUAL" or "COLON" not in failure.expected:
        return None
    previous = failure.previous
    assert previous is not None  # `=` is not expected first
    name = previous.text
    return Explanation(
        diagnostic(
            "E100",
            "equals_for_colon",
            failure.token_span(token),
            name=name,
            hints=[f"arguments are written `{name}: value`"],
            fix=Fix(failure.token_span(token), ":"),
        ),
        Repair("replace", "COLON"),
    )


def _equals_in_record(failure: ParseFailure) -> Explanation | None:
    """`{title = "x"}`: read as a block whose first step has a label, until the value."""
    if failure.kind(failure.index - 1) != "EQUAL" or failure.kind(failure.index - 3) != "LBRACE":
        return None
    if failure.kind(failure.index - 2) != "NAME" or failure.kind(failure.index) == "NAME":
        return None
    equals = failure.tokens[failure.index - 1]
    key = failure.tokens[failure.index - 2].text
    return Explanation(
        diagnostic(
            "E100",
            "equals_in_record",
            failure.token_span(equals),
            key=key,
            hints=[f"record entries are written `{key}: value`"],
            fix=Fix(failure.token_span(equals), ":"),
        )
    )


def _colon_for_equals(failure: ParseFailure) -> Explanation | None:
    token = failure.found
    if token is None or token.type != "COLON" or not {"EQUAL", "LPAR"} <= failure.expected:
        return None
    previous = failure.previous
    assert previous is not None  # `=` is not expected first
    label = previous.text
    return Explanation(
        diagnostic(
            "E100",
            "colon_for_equals",
            failure.token_span(token),
            label=label,
            hints=[f"a step is labelled with `=`: `{label} = tool(...)`"],
            fix=Fix(failure.token_span(token), " ="),
        ),
        Repair("replace", "EQUAL"),
    )


def _missing_comma(failure: ParseFailure) -> Explanation | None:
    token = failure.found
    if token is None or "COMMA" not in failure.expected:
        return None
    brackets = failure.open_brackets()
    inside = brackets[-1].type if brackets else None
    starts_argument = token.type == "NAME" and failure.kind(failure.index + 1) == "COLON" and inside != "LSQB"
    starts_item = token.type in VALUE_STARTS and inside == "LSQB"
    if not (starts_argument or starts_item):
        return None
    previous = failure.previous
    assert previous is not None  # `,` is not expected first
    closer = failure.literals[OPENERS[inside]] if inside else None
    argument = failure.current_argument()
    expected = "`,`" + (f" or `{closer}`" if closer else "")
    span, found, hints = failure.token_span(token), failure.describe(token), ["add `,` between them"]
    fix = Fix(failure.span(previous.end, previous.end), ",")
    if argument:
        explained = diagnostic(
            "E100", "expected_after_argument", span, hints=hints, fix=fix, expected=expected, argument=argument, found=found
        )
    else:
        explained = diagnostic(
            "E100", "expected_after", span, hints=hints, fix=fix, expected=expected, previous=clip(previous.text), found=found
        )
    return Explanation(explained, Repair("insert", "COMMA"))


def _empty_pipe(failure: ParseFailure) -> Explanation | None:
    previous = failure.previous
    if previous is None or previous.text != "|>" or failure.expected != {"NAME"}:
        return None
    return Explanation(
        diagnostic(
            "E100",
            "step_after_pipe",
            failure.found_span(),
            found=failure.describe(failure.found),
            hints=["`|>` passes the result on to the next step: `a(...) |> b(...)`"],
        )
    )


def _generic(failure: ParseFailure) -> Explanation:
    token, previous = failure.found, failure.previous
    argument = failure.current_argument() if previous is not None and previous.type not in ("LPAR", "COMMA") else None
    hints = []
    if failure.index == 0:
        hints.append(PLAN_HINT)
    if token is not None and previous is not None and token.type == previous.type == "STRING":
        hints.append("strings side by side are not joined: write one string, with `{$1.title}` holes for values")
    if token is not None and token.type in CLOSERS and not failure.open_brackets():
        hints.append(f"this `{token.text}` closes nothing")
    span, expected, found = failure.found_span(), failure.words(failure.expected), failure.describe(token)
    if argument:
        return Explanation(
            diagnostic("E100", "expected_after_argument", span, hints=hints, expected=expected, argument=argument, found=found)
        )
    if previous is not None:
        return Explanation(
            diagnostic("E100", "expected_after", span, hints=hints, expected=expected, previous=clip(previous.text), found=found)
        )
    return Explanation(diagnostic("E100", "expected", span, hints=hints, expected=expected, found=found))
