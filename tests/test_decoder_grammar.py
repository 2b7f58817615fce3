"""The decoder grammar (`planc grammar`, without `--full`): the language as a model should write it.

Checked with llguidance, byte by byte, in both formats:

- every plan it accepts parses with no diagnostic (but E105, a parameter given twice), and `planc
  fmt` leaves it as it is: plans are drawn from the grammar itself, a byte at a time among those
  the matcher allows; a registry's grammar also calls only its tools, with their own parameters,
  each at most once, those they require all given, and pipes only into steps that take the value;
- every corpus plan that checks clean, as `planc fmt` prints it without its comments, is accepted
  (by the generic grammar, and by its registry's when it has one);
- what made a small model write no plan is refused: comments, spacing of its own, an empty plan,
  anything after the last step, a name that never ends.
"""

from __future__ import annotations

import re
from pathlib import Path

import llguidance
import pytest
from cli import invoke
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from test_grammar import Decoder, plan_text

from planc import parse
from planc.corpus import load_cases
from planc.decoding import FORMATS, export_grammar
from planc.decoding.layout import LONGEST_NAME, LONGEST_TOOL_NAME
from planc.passes.check import check
from planc.registry import load_registry
from planc.syntax.format import format_source
from planc.syntax.printer import print_plan
from planc.syntax.steps import walk_steps

ROOT = Path(__file__).resolve().parents[1]
INCIDENTS = ROOT / "examples" / "incidents" / "planc.toml"
TOKENIZER = llguidance.LLTokenizer("byte")
LONGEST = 160  # bytes drawn freely; then the plan is closed as quickly as the grammar lets it
# The bytes that end a plan soonest, first first; `,` where an argument a step requires is still to come.
CLOSING = b'"{$}:()\n], 1a'
HOLE = {b"{": b"$", b"{$": b"1", b"{$1": b"}"}  # and inside a template string that needs a hole, `{$1}`


@pytest.fixture(scope="module", params=FORMATS)
def grammars(request):
    """The decoder grammars (generic, and each registry's), each built once."""
    built: dict = {}

    def decoder(registry=None) -> Decoder:
        key = registry.source if registry is not None else None
        if key not in built:
            built[key] = Decoder(export_grammar(registry, format=request.param), request.param)
        return built[key]

    return decoder


def clean_plans() -> list[tuple[str, object, str]]:
    """Each corpus case that checks clean, printed by `planc fmt` without its comments and with no line width,
    with its registry."""
    found = []
    for case in load_cases(ROOT / "corpus"):
        if case.source_b is not None or case.expected or case.budget:
            continue
        registry, text = case.registry, plan_text(case)
        if check(text, registry=registry, policy=case.policy).diagnostics:
            continue
        found.append((f"{case.category}: {case.name}", registry, print_plan(parse(text).plan, width=None)))
    return found


# What llguidance's GBNF reader refuses though the GBNF says otherwise (llama.cpp, which reads GBNF
# a character at a time, has no lexer to go wrong): the reader melts a rule of lexemes only, here
# `label ::= NAME " = "`, into one lexeme, after which it refuses some step names (`classify`,
# `create_ticket`; `ask`, `agent`, `reshape` and pure steps in a registry's grammar). So under GBNF a
# plan may be refused only where it labels a step; the Lark form of the same grammar takes every plan.


def test_every_corpus_plan_that_checks_clean_is_accepted_as_fmt_prints_it(grammars):
    plans = clean_plans()
    assert len(plans) > 150
    refused = {
        name: text
        for name, registry, text in plans
        if not grammars().accepts(text) or registry is not None and not grammars(registry).accepts(text)
    }
    if grammars().format == "gbnf":
        assert all(re.search(r"^\s*\w+ = \w+\(", text, re.M) for text in refused.values()), refused
        assert len(refused) <= len(plans) // 20, sorted(refused)
    else:
        assert refused == {}


def draw_plan(data, decoder: Decoder) -> str:
    """A plan the grammar accepts, drawn a byte at a time among the bytes its matcher allows."""
    matcher = decoder.matcher.deep_copy()
    written = bytearray()
    while True:
        mask = matcher.compute_bitmask()
        allowed = [token for token in range(TOKENIZER.vocab_size) if mask[token // 8] >> (token % 8) & 1]
        assert allowed, f"the grammar allows nothing after {bytes(written)!r}"
        if len(written) >= LONGEST:  # close it: the end when it may end, else the byte that ends things soonest
            hole = next((then for begun, then in HOLE.items() if written.endswith(begun)), b"")
            ranked = [TOKENIZER.eos_token, *hole, *CLOSING]
            token = next((t for t in ranked if t in allowed), allowed[0])
        else:
            token = data.draw(st.sampled_from(allowed))
        if token == TOKENIZER.eos_token:
            return written.decode("utf-8")
        assert matcher.consume_token(token), matcher.get_error()
        written.append(token)
        assert len(written) < 4 * LONGEST, f"no end in sight: {bytes(written)!r}"


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("registry", [None, INCIDENTS], ids=["generic", "incidents"])
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_every_plan_the_grammar_accepts_parses_and_fmt_leaves_it_unchanged(format, registry, data):
    decoder = _decoder(format, registry)
    text = draw_plan(data, decoder)
    parsed = parse(text)
    codes = {diagnostic.code for diagnostic in parsed.diagnostics}
    if registry is None and codes == {DUPLICATE}:
        return
    if codes == {DUPLICATE}:  # with a registry, only in a step of a tool whose parameters are not followed
        assert any(f"{name}(" in text for name in UNTRACKED), text
        return
    assert codes == set(), text
    assert format_source(parsed, width=None) == text
    if registry is not None:
        assert not _calls_wrongly(text, load_registry(registry)), text


# E105, a parameter named twice: the generic grammar cannot refuse it (it knows no tool's parameters),
# nor a registry's for a tool with more parameters than it follows one by one (`specialise.TRACKED`).
DUPLICATE = "E105"
UNTRACKED = ("agent", "exit")  # the incidents registry's steps with more than TRACKED parameters


def _calls_wrongly(text: str, registry) -> list[str]:
    """What a registry's decoder grammar refuses that is still found in `text`: an unknown tool or parameter,
    a pipe into a step that takes none or a piped parameter given again (E200, E201, E209), a missing
    required argument or a group of which not exactly one is given (E202, E303), but the `needs ... when`
    of E202 (a requirement that depends on a value) and, in the steps of `UNTRACKED` tools, E202, E303 and
    what an agent's `check` names (E200, E303: a tool's name as a string, which the grammar leaves to the
    checker as it leaves any typed position's references)."""
    tools = {path: step.tool.text for step, path in walk_steps(parse(text).plan.pipelines)}
    wrong = []
    for diagnostic in check(text, registry=registry).diagnostics:
        untracked = tools.get(diagnostic.step) in UNTRACKED
        if diagnostic.code in ("E201", "E209") or diagnostic.code == "E200" and not untracked:
            wrong.append(diagnostic.message)
        elif diagnostic.code in ("E202", "E303") and not untracked and " needs " not in diagnostic.message:
            wrong.append(diagnostic.message)
    return wrong


_built: dict = {}


def _decoder(format: str, config: Path | None) -> Decoder:
    if (format, config) not in _built:
        registry = load_registry(config) if config is not None else None
        _built[format, config] = Decoder(export_grammar(registry, format=format), format)
    return _built[format, config]


REFUSED = {
    "a comment": '# find them\nsearch(query: "disk")\n',
    "a comment after a step": 'search(query: "disk")  # first\n',
    "no step at all": "\n",
    "nothing": "",
    "space of its own": 'search(query:"disk")\n',
    "a trailing comma": 'search(query: "disk",)\n',
    "a step on the last line without its newline": 'search(query: "disk")',
    "a blank line after the last step": 'search(query: "disk")\n\n',
    "prose after the plan": 'search(query: "disk")\nThat is the plan.\n',
    "a quoted record key": 'summarize(items: [{"id": 1}])\n',
    "a number as planc would not print it": 'search(query: "disk", limit: 05)\n',
    "an unknown tool": 'find(query: "disk")\n',
}


@pytest.mark.parametrize("format", FORMATS)
def test_what_a_small_model_wandered_into_is_refused_and_the_plan_as_fmt_prints_it_is_not(format):
    decoder = _decoder(format, INCIDENTS)
    refused = [name for name, text in REFUSED.items() if decoder.accepts(text)]
    assert refused == []
    plan = (
        'disk = search(query: "disk", limit: 50)\n'
        '  |> filter(where: severity >= 3 and status == "open")\n'
        'notify(channel: "#incidents", text: "{$disk.length} open severe disk incidents")\n'
    )
    assert decoder.accepts(plan) and format_source(parse(plan)) == format_source(parse(plan), width=None) == plan


def test_full_keeps_the_parser_language_and_the_default_is_the_decoder_grammar_without_forbidden_tools():
    full = invoke("grammar", "--full", "--config", INCIDENTS)
    decoder = invoke("grammar", "--config", INCIDENTS)
    assert full.exit_code == decoder.exit_code == 0
    commented = '# find them\nsearch(query:"disk")'
    assert Decoder(full.stdout, "lark").accepts(commented)
    assert not Decoder(decoder.stdout, "lark").accepts(commented)
    # The example's policy forbids the destructive `close_incident` whatever its arguments: the decoder
    # grammar leaves it out, as `planc plan` and `planc prompt` do, and says so; the full language keeps it.
    assert decoder.stdout == export_grammar(load_registry(INCIDENTS).without({"close_incident"}))
    assert "left out: close_incident, which the policy forbids" in decoder.stderr
    closing = 'close_incident(id: "INC-1")\n'
    assert Decoder(full.stdout, "lark").accepts(closing) and not Decoder(decoder.stdout, "lark").accepts(closing)


def name_of(length: int) -> str:
    return ("Email_oncall" + "_oncall" * length)[:length]


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("registry", [None, INCIDENTS], ids=["generic", "incidents"])
def test_a_name_is_at_most_the_bound_so_a_model_cannot_write_one_until_its_token_limit(format, registry):
    """A greedy model once wrote `Email_oncall_oncall_...` as a label until its token limit: no plan."""
    decoder = _decoder(format, registry)

    def plan(name: str) -> str:  # the name as a label, a reference and a field
        return f'{name} = search(query: "certificates")\nnotify(channel: "#oncall", text: ${name}.{name})\n'

    assert decoder.accepts(plan(name_of(LONGEST_NAME)))
    assert not decoder.accepts(plan(name_of(LONGEST_NAME + 1)))
    assert not decoder.accepts(f'{name_of(LONGEST_NAME + 1)} = search(query: "certificates")\n')


@pytest.mark.parametrize("format", FORMATS)
def test_the_generic_grammar_takes_tool_names_as_long_as_model_apis_take(format):
    decoder = _decoder(format, None)
    agentdojo = "get_dietary_restrictions_for_all_restaurants"  # 44 characters
    assert decoder.accepts(f"restaurants = {agentdojo}()\n")
    assert decoder.accepts(f"{name_of(LONGEST_TOOL_NAME)}(city: $restaurants)\n")
    assert not decoder.accepts(f"{name_of(LONGEST_TOOL_NAME + 1)}(city: $restaurants)\n")
    assert decoder.accepts(f"search({name_of(LONGEST_NAME)}: 1)\n")  # a parameter is a name of the bound
    assert not decoder.accepts(f"search({name_of(LONGEST_NAME + 1)}: 1)\n")
