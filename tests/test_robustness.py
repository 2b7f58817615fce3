"""Whatever the input, `planc.check` answers with diagnostics, never an exception.

Over ten thousand inputs: every truncation of valid plans, seeded random
mutations (character flips, deletions, inserted punctuation), random unicode,
hypothesis-generated text, nesting 10,000 levels deep and 100 KB strings. For
each, with and without `extract_plan`:

- `check` returns (no exception, no RecursionError);
- the result is ok, or has at least one error;
- every diagnostic's span (and fix span) lies inside the text, start <= end,
  and its line and column are those of its offset;
- an ok result prints canonically, renders as JSON and converts to data.
"""

from __future__ import annotations

import bisect
import io
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples, under_ci
from rich.console import Console

import planc
from planc.diagnostics.render_json import render_json
from planc.diagnostics.render_line import render_line
from planc.diagnostics.render_repair import render_repair
from planc.diagnostics.render_sarif import render_sarif
from planc.diagnostics.render_text import render_text
from planc.syntax.data import to_data

DEEP = 10_000
BIG = 100_000

SEEDS = [
    'search(query: "outage OR degraded", limit: 50)\n'
    '  |> filter(where: severity >= 2 and status != "resolved")\n'
    "  |> map(concurrency: 4, do: { get_incident(id: item.id) })\n"
    '  |> summarize(style: "bullets", title: "Open sev2+ incidents")\n'
    "\n"
    "# Page someone when there are many.\n"
    "decide(when: $2.length > 10, then: {\n"
    '  notify(channel: "#incidents", text: "{$2.length} open incidents: {$4.text}")\n'
    "})\n",
    'hits = search(query: "x", tags: ["a", "b"], opts: {k: -1.5e3, "a b": null, not: true})\n'
    "reduce(over: $hits, initial: 0, do: {\n"
    "  total = add(a: accumulator, b: item.count) // running sum\n"
    '  log(text: "\\u00e9 {$total} \\{literal} {index}")\n'
    '}); exit(when: not ($1.length > 0 or $args.force), status: "error")\n',
    'a(x: """line one\n{$args.x} line "two"\n""") |> b(y: [$1[0].a, {c: [1, 2, 3]}])\n',
    'Sure! Here is the plan:\n\n```plan\nsearch(query: "x") |> summarize(style: "bullets")\n```\n\nLet me know.\n',
    'I will first search.\nsearch(query: "x", limit: 5)\n  |> summarize()\nThat should do it.\n',
    "search('x') |> summarize(style: bullets, style: \"b\")\n$3 = a(x: $9)\nargs = b(q = 1 y: 2)\n",
]
PUNCTUATION = list("()[]{},:;$.\"'\\|>=<!&#/-+*@`~_0") + [
    "|>",
    '"""',
    "\n",
    " ",
    "\t",
    "not ",
    " and ",
    " or ",
    "==",
    " contains ",
    "{$1}",
    "{item}",
    "é",
    "😀",
    "\u2028",
    "\r",
    "\x00",
    "\ufeff",
    "```",
    "//",
    "$args.",
    "x = ",
    "a(",
    ")",
    "{ b() }",
]


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _assert_position(text: str, starts: list[int], position, what) -> None:
    assert 0 <= position.offset <= len(text), what
    line = bisect.bisect_right(starts, position.offset)
    column = position.offset - starts[line - 1] + 1
    assert (position.line, position.column) == (line, column), what


def assert_sound(text: str):
    """The properties every input must have; see the module docstring. Gives `planc.check(text)`."""
    starts = _line_starts(text)
    checked = {}
    for extract_plan in (False, True):
        result = checked[extract_plan] = planc.check(text, extract_plan=extract_plan)
        assert result.source == text
        assert result.ok or any(d.is_error for d in result.diagnostics), "rejected without an error"
        for diagnostic in result.diagnostics:
            spans = [diagnostic.span] + ([diagnostic.fix.span] if diagnostic.fix else [])
            for span in spans:
                start, end = span.start, span.end
                assert start.offset <= end.offset, diagnostic
                _assert_position(text, starts, start, diagnostic)
                _assert_position(text, starts, end, diagnostic)
        if result.ok:
            assert result.plan is not None and result.steps >= 1
            printed = planc.print_plan(result.plan)
            assert planc.parse(printed).ok, printed
            rendered = json.loads(render_json("plan.plan", result))
            assert rendered["ok"] is True
            json.dumps(to_data(result.plan))
        else:
            json.loads(render_json("plan.plan", result))
    return checked[False]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(text) + 1)
        operation = rng.randrange(5)
        if operation == 0:
            text = text[:at] + rng.choice(PUNCTUATION) + text[at:]
        elif operation == 1:
            text = text[:at] + text[at + 1 :]
        elif operation == 2:
            text = text[:at] + chr(rng.randrange(0x20, 0x2FF)) + text[at + 1 :]
        elif operation == 3:
            width = rng.randint(1, 12)
            text = text[:at] + text[at + width :]
        else:
            other = rng.choice(SEEDS)
            cut = rng.randrange(len(other) + 1)
            text = text[:at] + other[cut : cut + rng.randint(1, 30)] + text[at:]
    return text


def _random_unicode(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randint(0, 40)):
        if rng.random() < 0.6:
            pieces.append(rng.choice(PUNCTUATION + ["a", "x", "1", "search", ":"]))
        else:
            code = rng.randrange(0x110000)
            if 0xD800 <= code <= 0xDFFF:
                code = 0xFFFD
            pieces.append(chr(code))
    return "".join(pieces)


def _identity_plans() -> list[str]:
    text = Path(__file__).with_name("identity.plan").read_text(encoding="utf-8")
    return [block.strip("\n") + "\n" for block in text.split("\n\n") if block.strip()]


def test_seeds_are_what_they_claim():
    assert planc.check(SEEDS[0]).ok and planc.check(SEEDS[1]).ok and planc.check(SEEDS[2]).ok
    assert not planc.check(SEEDS[3]).ok and planc.check(SEEDS[3], extract_plan=True).ok
    assert planc.check(SEEDS[4], extract_plan=True).ok
    assert len(planc.check(SEEDS[5]).diagnostics) >= 4


@pytest.mark.parametrize("seed", range(len(SEEDS)))
def test_every_truncation_of_a_seed(seed):
    text = SEEDS[seed]
    for end in range(len(text) + 1):
        assert_sound(text[:end])


def test_every_truncation_of_the_identity_plans():
    count = 0
    for text in _identity_plans():
        for end in range(len(text) + 1):
            assert_sound(text[:end])
            count += 1
    assert count > 2500


@pytest.mark.parametrize("seed", range(under_ci(6, 2)))  # a thousand mutations a seed: CI runs six, `make test` two
def test_seeded_random_mutations(seed):
    rng = random.Random(seed)
    for _ in range(1000):
        assert_sound(_mutate(rng, rng.choice(SEEDS)))


def test_every_renderer_copes_with_what_check_reports():
    rng = random.Random(2024)
    console = Console(file=io.StringIO(), width=100)
    for _ in range(under_ci(400, 100)):
        text = _mutate(rng, rng.choice(SEEDS))
        result = planc.check(text)
        for diagnostic in result.diagnostics:
            console.print(render_text(diagnostic, text, "plan.plan"))
            assert render_line(diagnostic, "plan.plan").startswith("plan.plan:")
        assert render_repair(text, result.diagnostics).strip()
        json.loads(render_sarif([("plan.plan", result)]))


def test_seeded_random_unicode():
    rng = random.Random(99)
    for _ in range(under_ci(1000, 250)):
        assert_sound(_random_unicode(rng))


@settings(max_examples=examples(300), deadline=None)
@given(st.text())
def test_hypothesis_text(text):
    assert_sound(text)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(PUNCTUATION + ["a", "b", "x", "1", "search", ":", "$1"]), max_size=40).map("".join))
def test_hypothesis_plan_like_text(text):
    assert_sound(text)


NESTINGS = {
    "parentheses": ("(", ")"),
    "lists": ("[", "]"),
    "records": ("{", "}"),
    "not": ("not ", ""),
    "blocks": ("{ a(x: ", ") }"),
}


@pytest.mark.parametrize("kind", NESTINGS)
@pytest.mark.parametrize("closed", [True, False], ids=["closed", "unclosed"])
def test_deep_nesting_is_refused_with_a_diagnostic(kind, closed):
    opener, closer = NESTINGS[kind]
    inner = "{k: 1}" if kind == "records" else "1"
    text = "a(x: " + opener * DEEP + inner + (closer * DEEP + ")" if closed else "")
    result = assert_sound(text)
    assert not result.ok
    assert any(d.code == "E100" for d in result.diagnostics)


def test_moderate_nesting_is_accepted():
    text = "a(x: " + "[" * 50 + "1" + "]" * 50 + ", y: " + "not " * 50 + "z)"
    result = planc.parse(text)
    assert result.ok, result.diagnostics


def test_deep_nesting_at_the_top_level():
    for text in ["(" * DEEP, "{" * DEEP, "[" * DEEP, "not " * DEEP, "{ a(x: " * DEEP, "a(" * DEEP, ")" * DEEP]:
        assert_sound(text)


def test_a_100_kb_string_in_a_valid_plan():
    body = "".join(random.Random(5).choice('ab "\\\n{}é😀$') for _ in range(BIG))
    literal = json.dumps(body, ensure_ascii=False)
    text = f"a(x: {literal})\nb(y: 1)\n"
    result = assert_sound(text)
    assert result.ok
    assert result.plan.pipelines[0].steps[0].args[0].value.text == body


def test_a_100_kb_string_of_braces_and_holes():
    text = 'a()\nb(x: "' + "{$1}{" * (BIG // 5) + '")\n'
    assert assert_sound(text).ok


@pytest.mark.parametrize("opener", ['"', '"""', "'"])
def test_a_100_kb_unterminated_string(opener):
    text = "a(x: " + opener + "x" * BIG
    codes = [d.code for d in assert_sound(text).diagnostics]
    assert ("E103" if opener == "'" else "E101") in codes


def test_a_100_kb_unterminated_string_over_many_lines():
    text = 'a(x: """' + "line {$1}\n" * (BIG // 10)
    assert [d.code for d in assert_sound(text).diagnostics] == ["E101"]


def test_100_kb_of_random_unicode():
    rng = random.Random(7)
    text = "".join(
        chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0xA0, 0xD800), rng.randrange(0xE000, 0x110000)]))
        for _ in range(BIG)
    )
    assert_sound(text)


def test_many_independent_errors_in_one_input():
    text = "\n".join(f'step{i}(x: "a" y: 2)' for i in range(500))
    assert len([d for d in assert_sound(text).diagnostics if d.code == "E100"]) == 500


@pytest.mark.parametrize(
    "text",
    [
        "a(x: " + "1" * 5000 + ")",
        "a(x: $" + "1" * 5000 + ")",
        "a()\nb(x: $1[" + "1" * 5000 + "])",
        'a()\nb(x: "{$1[' + "1" * 5000 + ']}")',
        "a(x: 0" + "1" * 5000 + ")",
        "a(x: 01e400)",
    ],
    ids=["number", "step-number", "index", "hole-index", "leading-zero", "leading-zero-float"],
)
def test_numbers_with_thousands_of_digits(text):
    assert_sound(text)


@pytest.mark.parametrize(
    "text",
    ["a(x: \u0663)", "a(x: \u00b2)", "a()\nb(x: $1[\u00b9])", "a(x: $\u00b2)"],
    ids=["arabic-indic-digit", "superscript-two", "superscript-index", "superscript-ref"],
)
def test_non_ascii_digits(text):
    assert_sound(text)


@pytest.mark.parametrize("text", ["a(x: 'q\"\\q')", 'a(x: \'""""\\q', "a(x: 'a\"\\\n')"])
def test_escape_errors_inside_single_quoted_strings_point_at_the_escape(text):
    assert_sound(text)
    (escape,) = [d for d in planc.check(text).diagnostics if d.message.startswith("invalid escape")]
    assert escape.span.text(text).startswith("\\")


@pytest.mark.parametrize(
    "text, count, message",
    [
        ("a(" + " ".join(f"x{i}: 1" for i in range(10_000)) + ")", 9_999, "expected `,` or `)` after the argument"),
        ("a(x: 1\n" * 12_000, 12_000, "this `(` is never closed"),
    ],
    ids=["missing-commas", "unclosed-steps"],
)
def test_error_recovery_on_100_kb_reports_every_error(text, count, message):
    diagnostics = planc.check(text).diagnostics
    assert len(diagnostics) == count  # one for each missing comma, one for each unclosed step
    assert all(d.code == "E100" and d.message.startswith(message) for d in diagnostics), diagnostics[0]
    assert len({d.span.start.offset for d in diagnostics}) == count  # each at its own place
