"""Syntax errors as the person (or model) who wrote the plan reads them.

A message names what was expected in words and what was found; each
independent mistake is reported once, at its own place; where the intent is
certain a repair lets parsing go on, so a later independent mistake is
reported in the same run.
"""

from __future__ import annotations

import pytest

import planc


def diagnostics(text: str):
    result = planc.parse(text)
    assert not result.ok
    return result.diagnostics


def where(text: str) -> list[tuple[str, int, int, str]]:
    """(code, line, column, spanned text) of every diagnostic."""
    return [(d.code, d.span.start.line, d.span.start.column, d.span.text(text)) for d in diagnostics(text)]


def only(text: str):
    found = diagnostics(text)
    assert len(found) == 1, [(d.code, d.message) for d in found]
    return found[0]


# --- what was expected, in words ----------------------------------------------------------


def test_missing_comma_between_arguments():
    text = 'search(query: "x", limit: 5 offset: 2)'
    diagnostic = only(text)
    assert diagnostic.message == "expected `,` or `)` after the argument `limit: 5`, found `offset`"
    assert diagnostic.span.text(text) == "offset"
    assert diagnostic.fix is not None and diagnostic.fix.replacement == ","
    assert diagnostic.fix.span.start.offset == text.index(" offset")


def test_missing_comma_in_a_list():
    assert only("a(x: [1 2])").message == "expected `,` or `]` after `1`, found `2`"


def test_missing_comma_in_a_record():
    assert only("a(x: {a: 1 b: 2})").message == "expected `,` or `}` after `1`, found `b`"


@pytest.mark.parametrize(
    "text, argument, found",
    [
        ("a(x: 1 2)", "x: 1", "`2`"),
        ("a(x: y z)", "x: y", "`z`"),
        ("a(x: $1 $2)", "x: $1", "`$`"),
    ],
)
def test_a_stray_value_after_an_argument_names_comma_and_close(text, argument, found):
    diagnostic = only(text)
    assert f"after the argument `{argument}`" in diagnostic.message
    assert "`,`" in diagnostic.message and "`)`" in diagnostic.message
    assert "..." not in diagnostic.message
    assert diagnostic.message.endswith(f"found {found}")


def test_the_expected_list_never_names_a_bracket_that_is_not_open():
    for text in ["a(x: 1 == 2 == 3)", "a(x: 1))", "a(x: [1 == 2 == 3])"]:
        message = only(text).message
        assert "expected" in message
        assert "`}`" not in message, (text, message)
    assert "`]`" in only("a(x: [1 == 2 == 3])").message


def test_a_stray_closer_is_found_where_it_is():
    text = "a(x: 1))"
    assert where(text) == [("E100", 1, 8, ")")]


def test_equals_for_colon_is_repaired():
    text = "a(x = 1)"
    diagnostic = only(text)
    assert diagnostic.message == "expected `:` after the argument name `x`, found `=`"
    assert (diagnostic.fix.span.text(text), diagnostic.fix.replacement) == ("=", ":")


def test_colon_for_equals_in_a_label():
    diagnostic = only('hits: search(query: "x")')
    assert "`=`" in diagnostic.message or "prose" in diagnostic.message


def test_empty_pipe():
    assert only("a() |>").message == "expected a step after `|>`, found the end of the plan"
    assert only("a() |> |> b()").message == "expected a step after `|>`, found `|>`"


def test_empty_argument_value():
    diagnostic = only("a(x: )")
    assert "expected a value" in diagnostic.message and "found `)`" in diagnostic.message


def test_unclosed_parenthesis_points_at_the_opener_and_says_where_to_close():
    text = "a(x: 1\nb(y: 2)"
    diagnostic = only(text)
    assert diagnostic.message == "this `(` is never closed"
    assert (diagnostic.span.start.line, diagnostic.span.start.column) == (1, 2)
    assert diagnostic.hints == ("add `)` after `x: 1`, before the next step `b(`",)
    assert diagnostic.fix.replacement == ")" and diagnostic.fix.span.start.offset == text.index("\n")


def test_unclosed_brackets_at_the_end():
    text = "a(x: [1, 2"
    assert [d.span.text(text) for d in diagnostics(text)] == ["(", "["]


def test_unclosed_hints_never_quote_empty_text():
    for diagnostic in diagnostics("a(x: { b("):
        for hint in diagnostic.hints:
            assert "``" not in hint, hint


@pytest.mark.parametrize(
    "text, character",
    [
        ("\u00e9(x: 1)", "\u00e9"),
        ("a(\u00e9: 1)", "\u00e9"),
        ("a()\nb(x: $1[\u0663])", "\u0663"),
    ],
    ids=["tool", "argument", "index"],
)
def test_non_ascii_letters_and_digits_are_not_names_or_numbers(text, character):
    assert any(d.code == "E100" and d.span.text(text) == character for d in diagnostics(text))


def test_positional_argument():
    text = 'search("sev2 outages", limit: 50)'
    diagnostic = only(text)
    assert diagnostic.code == "E102"
    assert diagnostic.span.text(text) == '"sev2 outages"'
    assert "by name" in diagnostic.message


def test_a_keyword_as_an_argument_name_is_not_called_positional():
    diagnostic = only("a(not: 1)")
    assert diagnostic.code != "E102"
    assert "keyword" in diagnostic.message
    assert not any("name: not: 1" in hint for hint in diagnostic.hints)


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"query": "x"}', "JSON"),
        ("import os\nos.system('x')", "Python"),
        ("Here is the plan: search for it", "prose"),
        ('```\nsearch(query: "x")\n```', "markdown code fence"),
    ],
)
def test_pasted_code_and_prose_are_named(text, words):
    assert any(words in d.message for d in diagnostics(text))


@pytest.mark.parametrize(
    "text, fixed", [("a() | b()", "|>"), ("a(x: b || c)", "or"), ("a(x: b && c)", "and"), ("a(x: !b)", "not ")]
)
def test_operators_from_other_languages_get_a_fix(text, fixed):
    diagnostic = only(text)
    assert diagnostic.fix is not None and diagnostic.fix.replacement == fixed


def test_unterminated_string():
    text = 'a(x: "abc)\nb()'
    diagnostic = only(text)
    assert diagnostic.code == "E101"
    assert diagnostic.span.text(text) == '"abc)'


def test_invalid_escape_points_at_the_escape():
    text = 'a(x: "ok \\q")'
    diagnostic = only(text)
    assert "invalid escape" in diagnostic.message and diagnostic.span.text(text) == "\\q"


def test_a_number_too_large_for_a_float():
    assert "too large" in only("a(x: 1e400)").message


def test_too_deep_nesting_says_so():
    assert "nests too deeply" in only("a(x: " + "[" * 500 + "]" * 500 + ")").message


def test_empty_input_is_E104():
    for text in ["", "   \n\t", "# just a comment\n// another\n"]:
        diagnostic = only(text)
        assert diagnostic.code == "E104"
        assert (diagnostic.span.start.offset, diagnostic.span.end.offset) == (0, 0)


# --- one diagnostic per mistake, every independent mistake --------------------------------


def test_two_bad_steps_on_two_lines_give_two_diagnostics():
    text = 'search(query: "x" limit: 5)\nsummarize(style = "b")'
    assert where(text) == [("E100", 1, 19, "limit"), ("E100", 2, 17, "=")]


def test_repairs_let_later_independent_errors_be_found():
    text = 'search(query: "x" limit: 5)\n  |> filter(where: a || b)\nsummarize(style = "b", title: [1 2])'
    assert where(text) == [("E100", 1, 19, "limit"), ("E100", 2, 22, "||"), ("E100", 3, 17, "="), ("E100", 3, 34, "2")]


def test_after_an_unclosed_step_the_next_step_is_still_checked():
    text = "a(x: 1\nb(y: 2 z: 3)"
    assert where(text) == [("E100", 1, 2, "("), ("E100", 2, 8, "z")]


def test_character_level_mistakes_do_not_stop_parsing():
    text = "a(x: 'q')\nb(y = 1)"
    assert [code for code, *_ in where(text)] == ["E103", "E100"]
    text = 'a(x: "q)\nb(y = 1)'
    assert [code for code, *_ in where(text)] == ["E101", "E100"]


def test_duplicate_arguments_are_reported_in_every_step():
    text = "a(x: 1, x: 2)\nb(y: 1, y: 2, y: 3)"
    assert where(text) == [("E105", 1, 9, "x: 2"), ("E105", 2, 9, "y: 2"), ("E105", 2, 15, "y: 3")]


def test_a_stray_value_is_one_mistake_not_two():
    assert where("a(x: 1 2)") == [("E100", 1, 8, "2")]


@pytest.mark.xfail(
    strict=True,
    reason="bug: after a syntax error, recovery skips every line up to the next "
    "line that starts a step, so an error on a line in between is lost",
)
def test_an_error_on_a_line_that_does_not_start_a_step_is_still_found():
    text = "a(x: 1 2)\n$3 = b()\nc()"
    assert any(line == 2 for _, line, _, _ in where(text))


def test_the_found_token_is_quoted_and_long_text_is_clipped():
    text = 'a(x: 1 "' + "y" * 100 + '")'
    message = diagnostics(text)[0].message
    assert len(message) < 200
    assert "found the string" in message or '"yyy' in message
