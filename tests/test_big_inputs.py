"""Big inputs stay bounded: huge strings in little memory, and 20,000 diagnostics printed briefly.

Times are never asserted (bench/big_inputs.py measures them); what is asserted is what a user
would notice: the memory a check takes, what is printed, and that nothing else changed.
"""

from __future__ import annotations

import io
import json
import re
import tracemalloc

import pytest
from cli import invoke
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples, under_ci
from rich.console import Console

import planc
from planc.cli.printing import print_diagnostics
from planc.diagnostics import Diagnostic, Fix, Lines, Span
from planc.diagnostics.render_text import render_text
from planc.syntax.grammar import tables
from planc.syntax.lexer import _MISTAKES, LINEAR_STRING

# --- a huge string ---------------------------------------------------------------------------

# How strings were matched before they were written to keep no state per character. A string is
# the same token as it was: only the memory it takes to find it changed. The grammar keeps the plain
# spelling of STRING (the decoders export it); the lexer matches it as LINEAR_STRING.
BEFORE = {
    "E_TRIPLE": (r'"""(?:(?!""")[\s\S])*\Z',),
    "E_UNTERMINATED": (r'"(?:\\.|[^"\\\n])*',),
    "E_SINGLE": (r"'(?:\\.|[^'\\\n])*'?",),
}


def _grammar_string() -> str:
    [terminal] = [terminal for terminal in tables().terminals if terminal.name == "STRING"]
    return terminal.regexp


@settings(max_examples=examples(2000), deadline=None)
@given(st.lists(st.sampled_from(['"', "\\", "\n", "a", "'", "{", "}"]), max_size=16).map("".join))
def test_strings_are_the_same_tokens_as_before(text):
    pairs = {name: ("|".join(f"(?:{pattern})" for pattern in before), _MISTAKES[name]) for name, before in BEFORE.items()}
    pairs["STRING"] = (_grammar_string(), LINEAR_STRING)
    for name, (old, new) in pairs.items():
        old_match = re.compile(old, re.DOTALL).match(text)
        new_match = re.compile(new, re.DOTALL).match(text)
        assert (old_match and old_match.group()) == (new_match and new_match.group()), name


# Characters: enough that a few bytes of state per character would show as tens of MB above the bound of 20 a
# character (CI checks 4 million, the dev profile 1 million: checking them is most of this file's time).
HUGE = under_ci(4_000_000, 1_000_000)
# Each kind: how a piece of the string is written, and what it means.
KINDS = {
    "letters": ("x" * 40, "x" * 40),
    "escapes and braces": ('a \\"quoted\\" {literal} \\n \\u00e9 \\{x} ', 'a "quoted" {literal} \n \u00e9 {x} '),
    "quotes in triple quotes": ('say "hi" and ""twice"" \n', 'say "hi" and ""twice"" \n'),
}


def checked_with_peak(text: str):
    """`planc.check(text)`, and the most memory Python held for it at once (bytes)."""
    planc.check("warm_up()")  # what is loaded once is not the plan's
    tracemalloc.start()
    try:
        return planc.check(text), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_a_plan_with_a_huge_string_checks_in_memory_proportional_to_it(kind):
    written, meant = KINDS[kind]
    quote = '"""' if "\n" in written else '"'
    count = HUGE // len(written)
    text = f"note(text: {quote}{written * count}{quote})\n"
    result, peak = checked_with_peak(text)
    assert result.ok and result.diagnostics == ()
    [string] = [arg.value for arg in result.plan.pipelines[0].steps[0].args]
    assert "".join(string.parts) == meant * count
    assert peak < 20 * len(text), f"{peak / len(text):.0f} bytes per character of the plan"


@pytest.mark.parametrize("text", ['note(text: "' + "y" * HUGE, 'note(text: """' + "y\n" * (HUGE // 2)])
def test_an_unclosed_huge_string_is_one_E101_in_little_memory(text):
    result, peak = checked_with_peak(text)
    assert [d.code for d in result.diagnostics] == ["E101"]
    assert peak < 20 * len(text)


# --- many diagnostics ------------------------------------------------------------------------


@pytest.fixture
def many(tmp_path, monkeypatch):
    """plan.plan with 150 errors (E206, each with a fix) and one warning-free summary line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.plan").write_text("summarize(style: bullets)\n" * 150, encoding="utf-8")
    return tmp_path


def test_text_prints_the_first_100_diagnostics_and_counts_the_rest(many):
    result = invoke("check", "plan.plan")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert sum(line.startswith("error[E206]") for line in lines) == 100
    assert lines[-3:-1] == ["... and 50 more errors; use --max-diagnostics 0 to show them all", "plan.plan: 150 errors"]
    assert "--> plan.plan:100:18" in result.stdout and "--> plan.plan:101:18" not in result.stdout


@pytest.mark.parametrize("option, shown", [("0", 150), ("7", 7), ("150", 150), ("149", 149)])
def test_max_diagnostics(many, option, shown):
    result = invoke("check", "--max-diagnostics", option, "plan.plan")
    assert result.stdout.count("error[E206]") == shown
    assert ("more error" in result.stdout) == (shown < 150)
    assert result.exit_code == 1 and "plan.plan: 150 errors" in result.stdout


def test_the_limit_counts_across_files_and_says_what_is_left_by_severity(many):
    (many / "other.plan").write_text('search(query: "x")\nsummarize(style: bullets)\n', encoding="utf-8")
    result = invoke("check", "--max-diagnostics", "150", "plan.plan", "other.plan")
    assert result.stdout.count("error[E206]") == 150
    assert "... and 1 more error; use --max-diagnostics 0 to show them all" in result.stdout
    assert "other.plan: 1 error" in result.stdout
    assert invoke("check", "--max-diagnostics", "-1", "plan.plan").exit_code == 2


@pytest.mark.parametrize("output_format, per_diagnostic", [("line", 1), ("json", None), ("sarif", None), ("repair", None)])
def test_the_other_formats_print_every_diagnostic(many, output_format, per_diagnostic):
    result = invoke("check", "--format", output_format, "plan.plan")
    assert result.exit_code == 1
    if output_format == "line":
        assert len(result.stdout.splitlines()) == 150
    elif output_format == "json":
        assert len(json.loads(result.stdout)["diagnostics"]) == 150
    elif output_format == "sarif":
        assert len(json.loads(result.stdout)["runs"][0]["results"]) == 150
    else:
        assert result.stdout.count("E206") == 150


def test_commands_that_refuse_a_plan_print_the_first_100_of_its_syntax_errors(many):
    (many / "broken.plan").write_text("search(\n" + "a(x: 'single')\n" * 150, encoding="utf-8")
    result = invoke("fmt", "broken.plan")
    assert result.exit_code == 1
    assert result.stderr.count("error[") == 100
    assert "more errors; run `planc check --max-diagnostics 0` to show them all" in result.stderr


# Messages, hints and lines with what rich treats specially: control codes, tabs, wide characters.
TEXTS = st.lists(st.sampled_from(["a", " ", "\t", "\r", "\x07", "\x0b", "é", "界", "[bold]", "`", "\\"]), max_size=8).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(
    line=TEXTS,
    message=TEXTS,
    hints=st.lists(TEXTS, max_size=2),
    start=st.integers(0, 14),
    width=st.integers(0, 20),
    code=st.sampled_from(["E100", "W502", "N600"]),
    step=st.sampled_from([None, "2/do.1"]),
    replacement=st.one_of(st.none(), TEXTS),
)
def test_text_without_a_terminal_is_what_rich_prints(line, message, hints, start, width, code, step, replacement):
    source = f"first line\n{line}x\nlast\tline"
    start = min(start, len(source))
    end = min(start + width, len(source))
    span = Span(start, end, Lines(source))
    fix = Fix(span, replacement) if replacement is not None else None
    diagnostic = Diagnostic(code, message, span, step, tuple(hints), fix)
    by_rich = Console(file=io.StringIO(), highlight=False, soft_wrap=True)
    by_rich.print(render_text(diagnostic, source, "plan.plan"))
    written = Console(file=io.StringIO(), highlight=False, soft_wrap=True)
    print_diagnostics(written, [diagnostic], source, "plan.plan")
    assert written.file.getvalue() == by_rich.file.getvalue()


def test_a_terminal_still_gets_colour(many):
    result = planc.check((many / "plan.plan").read_text(encoding="utf-8"))
    terminal = Console(file=io.StringIO(), force_terminal=True, color_system="standard", highlight=False, soft_wrap=True)
    print_diagnostics(terminal, result.diagnostics[:1], result.source, "plan.plan")
    assert "\x1b[" in terminal.file.getvalue() and "error[E206]" in terminal.file.getvalue()


# --- the plan size limit ---------------------------------------------------------------------


def _registry(toml: str):
    from pathlib import Path

    from planc.registry import registry_from_text

    return registry_from_text(toml, Path("planc.toml"))


SMALL = _registry("[limits]\nplan_bytes = 40\n")


def test_a_plan_over_the_limit_is_E106_at_the_text_past_it_before_it_is_parsed():
    text = 'search(query: "outages in the last week", limit: 50)\n  |> summarize(style: bullets)'
    result = planc.check(text, registry=SMALL)
    [error] = result.diagnostics  # no E206: the plan was not parsed
    assert not result.ok and result.plan is None
    assert (error.code, error.message) == (
        "E106",
        "the plan is 83 bytes, over the limit of 40 bytes; raise `plan_bytes` under `[limits]` in planc.toml to check it",
    )
    assert error.hints == ("to check this plan, write `plan_bytes = 1048576` under `[limits]` in planc.toml",)
    assert error.span.start_offset == 40 and error.span.end_offset == len(text)


def test_the_limit_counts_bytes_of_utf8_and_a_plan_at_the_limit_is_checked():
    at_limit = planc.check('a(x: "' + "é" * 16 + '")', registry=SMALL)  # 40 bytes: parsed and checked
    assert at_limit.plan is not None and [d.code for d in at_limit.diagnostics] == ["E200"]  # `a` is no tool of it
    [error] = planc.check('a(x: "' + "é" * 17 + '")', registry=SMALL).diagnostics
    assert error.code == "E106" and "42 bytes" in error.message
    assert error.span.start_offset == 6 + 17  # the first character that does not fit: the closing quote
    [error] = planc.check('a(x: "' + "€" * 12 + '")', registry=SMALL).diagnostics  # 3 bytes each: 6 + 36 + 2
    assert error.span.start_offset == 6 + 11  # the euro sign the limit cuts in two is past it


def test_without_a_registry_the_default_limit_applies():
    over = "a" * (64 * 2**20 + 1)
    [error] = planc.check(over).diagnostics
    assert error.code == "E106" and error.message.startswith(
        "the plan is 67,108,865 bytes (64 MiB), over the limit of 67,108,864 bytes (64 MiB);"
    )
    assert error.span.start_offset == 64 * 2**20


def test_every_command_that_checks_refuses_it(tmp_path, monkeypatch):
    from cli import invoke

    monkeypatch.chdir(tmp_path)
    (tmp_path / "planc.toml").write_text("[limits]\nplan_bytes = 40\n", encoding="utf-8")
    (tmp_path / "plan.plan").write_text('search(query: "outages in the last week", limit: 50)\n', encoding="utf-8")
    for command in (["check"], ["check", "--format", "json"], ["run"], ["show"], ["optimize"], ["compile", "-o", "x.json"]):
        result = invoke(*command, "plan.plan")
        assert result.exit_code == 1 and "E106" in result.output and "Traceback" not in result.output, command
    assert not (tmp_path / "x.json").exists()
