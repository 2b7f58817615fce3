"""Big inputs stay bounded: huge strings in little memory.

Times are never asserted (bench/big_inputs.py measures them); what is asserted is what a user
would notice: the memory a check takes, what is printed, and that nothing else changed.
"""

from __future__ import annotations

import re
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

import planc
from planc.syntax.grammar import tables
from planc.syntax.lexer import _MISTAKES

# --- a huge string ---------------------------------------------------------------------------

# How strings were matched before they were written to keep no state per character. A string is
# the same token as it was: only the memory it takes to find it changed.
BEFORE = {
    "STRING": (r'(?:"""(\\.|[^\\])*?""")', r'"(\\.|[^"\\\n])*"'),
    "E_TRIPLE": (r'"""(?:(?!""")[\s\S])*\Z',),
    "E_UNTERMINATED": (r'"(?:\\.|[^"\\\n])*',),
    "E_SINGLE": (r"'(?:\\.|[^'\\\n])*'?",),
}


def _now(name: str) -> list[str]:
    if name in _MISTAKES:
        return [_MISTAKES[name]]
    [terminal] = [terminal for terminal in tables().terminals if terminal.name == name]
    return [terminal.regexp]


@settings(max_examples=examples(2000), deadline=None)
@given(st.lists(st.sampled_from(['"', "\\", "\n", "a", "'", "{", "}"]), max_size=16).map("".join))
def test_strings_are_the_same_tokens_as_before(text):
    for name, before in BEFORE.items():
        old = re.compile("|".join(before), re.DOTALL).match(text)
        new = re.compile("|".join(f"(?:{pattern})" for pattern in _now(name)), re.DOTALL).match(text)
        assert (old and old.group()) == (new and new.group()), name


HUGE = 4_000_000  # characters: enough that a few bytes of state per character would show as hundreds of MB
# Each kind: how a piece of the string is written, and what it means.
KINDS = {
    "letters": ("x" * 40, "x" * 40),
    "escapes and braces": ('a \\"quoted\\" {literal} \\n \\u00e9 \\{x} ', 'a "quoted" {literal} \n \u00e9 {x} '),
    "quotes in triple quotes": ('say "hi" and ""twice"" \n', 'say "hi" and ""twice"" \n'),
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_plan_with_a_huge_string_checks_in_memory_proportional_to_it(kind):
    written, meant = KINDS[kind]
    quote = '"""' if "\n" in written else '"'
    count = HUGE // len(written)
    text = f"note(text: {quote}{written * count}{quote})\n"
    planc.check("warm_up()")
    tracemalloc.start()
    try:
        result = planc.check(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and result.diagnostics == ()
    [string] = [arg.value for arg in result.plan.pipelines[0].steps[0].args]
    assert "".join(string.parts) == meant * count
    assert peak < 20 * len(text), f"{peak / len(text):.0f} bytes per character of the plan"


@pytest.mark.parametrize("text", ['note(text: "' + "y" * HUGE, 'note(text: """' + "y\n" * (HUGE // 2)])
def test_an_unclosed_huge_string_is_one_E101_in_little_memory(text):
    tracemalloc.start()
    try:
        result = planc.check(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [d.code for d in result.diagnostics] == ["E101"]
    assert peak < 20 * len(text)
