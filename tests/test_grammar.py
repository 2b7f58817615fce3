"""`planc grammar --full`: the parser's whole language, checked with a real constrained decoder, llguidance.
(The decoder grammar, the default, is tests/test_decoder_grammar.py's.)

llguidance's byte tokenizer needs no model: a plan is fed to a grammar matcher byte by byte, and
the grammar accepts it when every byte is allowed and the matcher can stop at the end. Both formats
go through it: the Lark dialect directly, GBNF through llguidance's GBNF reader.

- Every plan the parser accepts (the corpus cases without an E1xx, both plans of each diff case,
  tests/identity.plan) is accepted by the generic grammar, and every corpus case with a syntax
  error is rejected, but for the few in NOT_REJECTED.
- With the corpus registries, every case that checks clean is accepted by the narrowed grammar,
  and every case with an unknown tool (E200), an unknown parameter (E201) or a literal of the
  wrong type is rejected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import llguidance
import pytest
from cli import invoke
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

import planc
from planc import parse
from planc.analysis.literals import NOT_LITERAL, literal_value
from planc.corpus import load_cases
from planc.decoding import FORMATS, export_grammar
from planc.decoding.read import read_grammar
from planc.decoding.regex import to_python
from planc.decoding.specialise import INTEGER_PATTERN
from planc.registry import load_registry
from planc.syntax.extract import extract
from planc.syntax.lexer import tokenize
from planc.syntax.steps import walk_steps

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
IDENTITY = Path(__file__).with_name("identity.plan")
TOKENIZER = llguidance.LLTokenizer("byte")

# Corpus cases with a syntax error that no grammar of the text can reject, each with the check
# of the parser's that finds it: what a decoder constrained by the grammar may still write.
NOT_REJECTED = {
    "syntax: duplicate argument name": "E105, a parameter named twice: a grammar cannot say each name "
    "at most once but in every order, short of listing the orders",
    "syntax: duplicate argument name on separate lines": "E105, as above",
    "syntax: duplicate argument name inside a block": "E105, as above",
    "syntax: number too large": "E100 for `1e999`, spelled as a number is but past the largest float: "
    "its value, not its spelling, is what is refused",
}


class Decoder:
    """One grammar in llguidance, its matcher built once and copied for each text."""

    def __init__(self, text: str, format: str) -> None:
        self.text, self.format = text, format
        self.matcher = llguidance.LLMatcher(TOKENIZER, llguidance.grammar_from(format, text), log_level=0)
        assert not self.matcher.is_error(), self.matcher.get_error()

    def accepts(self, plan: str) -> bool:
        matcher = self.matcher.deep_copy()
        tokens = TOKENIZER.tokenize_bytes(plan.encode("utf-8"))
        return matcher.validate_tokens(tokens) == len(tokens) and matcher.consume_tokens(tokens) and matcher.is_accepting()


@pytest.fixture(scope="module")
def cases():
    return load_cases(CORPUS)


@pytest.fixture(scope="module", params=FORMATS)
def generic(request) -> Decoder:
    return Decoder(export_grammar(format=request.param, full=True), request.param)


@pytest.fixture(scope="module", params=FORMATS)
def narrowed(request):
    """The grammar of one registry (by its planc.toml), each built once."""
    built: dict[Path, Decoder] = {}

    def decoder(registry) -> Decoder:
        if registry.source not in built:
            built[registry.source] = Decoder(export_grammar(registry, format=request.param, full=True), request.param)
        return built[registry.source]

    return decoder


def case_id(case) -> str:
    return f"{case.category}: {case.name}"


def plan_text(case) -> str:
    """What the grammar should take: the plan of a model reply (`[extract]`) as `planc check --extract` reads it."""
    return extract(case.source) if case.extract else case.source


def errors(case) -> set[str]:
    """The error codes a case expects (a diff case expects changes, not diagnostics)."""
    if case.source_b is not None:
        return set()
    return {code for code, _line, _column in case.expected if code.startswith("E")}


def valid_plans(cases) -> dict[str, str]:
    """Every plan the parser accepts, by where it comes from."""
    plans = {
        case_id(case): plan_text(case)
        for case in cases
        if case.source_b is None and not any(code.startswith("E1") for code in errors(case))
    }
    for case in cases:
        if case.source_b is not None:  # a diff case: two plans that parse, and their changes
            plans[f"{case_id(case)} (A)"], plans[f"{case_id(case)} (B)"] = case.source, case.source_b
    blocks = IDENTITY.read_text(encoding="utf-8").split("\n\n")
    plans.update((f"identity.plan #{n}", block) for n, block in enumerate(blocks) if block.strip())
    return plans


# The generic grammar.


def test_every_plan_the_parser_accepts_is_accepted(generic, cases):
    plans = valid_plans(cases)
    assert len(plans) > 400
    for name, plan in plans.items():
        assert parse(plan).ok, name  # the premise: these are plans
    assert [name for name, plan in plans.items() if not generic.accepts(plan)] == []


def test_every_syntax_error_is_rejected_but_the_listed_ones(generic, cases):
    syntax_errors = {case_id(case): plan_text(case) for case in cases if any(code.startswith("E1") for code in errors(case))}
    assert len(syntax_errors) > 100 and set(NOT_REJECTED) <= set(syntax_errors)
    accepted = sorted(name for name, plan in syntax_errors.items() if generic.accepts(plan))
    assert accepted == sorted(NOT_REJECTED)  # an exception the grammar comes to reject leaves the list


# What the lexer does with whitespace, comments and strings, and where the corpus shows each.
KEYWORDS = {"true", "false", "null", "and", "or", "not", "contains"}
FEATURES = {
    "a # comment": lambda text, lexed: any(c.text.startswith("#") for c in lexed.comments),
    "a // comment": lambda text, lexed: any(c.text.startswith("//") for c in lexed.comments),
    "a comment ending the text": lambda text, lexed: any(c.end == len(text) for c in lexed.comments),
    "a comment before the first step": lambda text, lexed: bool(lexed.comments) and lexed.comments[0].start < lexed.tokens[0][0],
    "a tab": lambda text, lexed: "\t" in text,
    "CRLF line ends": lambda text, lexed: "\r\n" in text,
    "blank lines": lambda text, lexed: "\n\n" in text.strip(),
    "tokens with no space between": lambda text, lexed: ")|>" in text and bool(re.search(r"\w:[\w\"]", text)),
    "a triple-quoted string over lines": lambda text, lexed: any(
        t[3].startswith('"""') and "\n" in t[3] for t in lexed.tokens if t[2] == "STRING"
    ),
    "escapes in a string": lambda text, lexed: any(re.search(r'\\["\\nt/u]', t[3]) for t in lexed.tokens if t[2] == "STRING"),
    "\\{ in a string": lambda text, lexed: any("\\{" in t[3] for t in lexed.tokens if t[2] == "STRING"),
    "a template hole": lambda text, lexed: any(re.search(r"\{\$\w", t[3]) for t in lexed.tokens if t[2] == "STRING"),
    "a keyword as a record key": lambda text, lexed: any(
        a[3] in KEYWORDS and b[3] == ":" for a, b in zip(lexed.tokens, lexed.tokens[1:])
    ),
    "a non-ASCII character": lambda text, lexed: any(ord(c) > 127 for c in text),
}


@pytest.mark.parametrize("feature", FEATURES)
def test_the_corpus_shows_each_lexical_feature_and_the_grammar_accepts_it(feature, generic, cases):
    having = {name: plan for name, plan in valid_plans(cases).items() if FEATURES[feature](plan, tokenize(plan))}
    assert having, f"no valid plan in the corpus or identity.plan has {feature}"
    assert [name for name, plan in having.items() if not generic.accepts(plan)] == []


# The grammar narrowed to a registry.


def registry_cases(cases):
    return [case for case in cases if case.registry is not None and case.source_b is None]


def test_with_a_registry_every_plan_that_checks_clean_is_accepted(narrowed, cases):
    clean = [case for case in registry_cases(cases) if not errors(case)]
    assert len(clean) > 50
    assert [case_id(c) for c in clean if not narrowed(c.registry).accepts(plan_text(c))] == []


def test_with_a_registry_unknown_tools_and_parameters_are_rejected(narrowed, cases):
    unknown = [case for case in registry_cases(cases) if errors(case) & {"E200", "E201"}]
    assert len(unknown) > 10
    assert [case_id(c) for c in unknown if narrowed(c.registry).accepts(plan_text(c))] == []


def typing(schema) -> dict:
    """The part of a parameter's schema the grammar carries: a plain `type` (or several), or an `enum`."""
    if "enum" in schema:
        return {"enum": schema["enum"]}
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    plain = kinds and set(kinds) <= {"string", "integer", "number", "boolean", "null"} and "x-planc" not in schema
    return {"type": schema["type"]} if plain else {}


def wrongly_typed_literal(case) -> bool:
    """Whether some argument of `case` is a literal that its parameter's plain type (or enum) refuses."""
    parsed = parse(plan_text(case))
    for step, _path in walk_steps(parsed.plan.pipelines) if parsed.ok else ():
        tool = case.registry.lookup(step.tool.text)
        for arg in step.args if tool is not None else ():
            typed = typing(tool.params.get(arg.name.text, {}))
            value = literal_value(arg.value)
            if typed and value is not NOT_LITERAL and not jsonschema.Draft202012Validator(typed).is_valid(value):
                return True
    return False


def test_with_a_registry_literals_of_the_wrong_type_are_rejected(narrowed, cases):
    wrong = [case for case in registry_cases(cases) if wrongly_typed_literal(case)]
    assert len(wrong) >= 5 and all("E300" in errors(case) for case in wrong)
    assert [case_id(c) for c in wrong if narrowed(c.registry).accepts(plan_text(c))] == []


SAMPLES = ['"text"', "3", "-2.5", "true", "false", "null", "[1]", "{a: 1}", '{ tally(query: "x") }', "5.0", "1e2"]
CHECKED_BY_THE_CHECKER = ["$args.x", "$1.title[0]", "($args.x)"]


def test_each_typed_parameter_takes_a_literal_of_its_type_and_no_other(narrowed):
    """Every parameter of the corpus registry with a plain type or an enum, given each sample literal:
    accepted exactly when the literal has the schema's type (or is in its enum), and a reference always."""
    registry = load_registry(CORPUS / "registry" / "planc.toml")
    decoder = narrowed(registry)
    tried = 0
    for name in registry.names():
        tool = registry.lookup(name)
        for param, schema in tool.params.items():
            typed = typing(schema)
            if not typed:
                continue
            enum = [json.dumps(value) for value in schema.get("enum", [])]
            others = the_rest(tool, param)
            for sample in SAMPLES + enum:
                value = literal_value(parse(f"a(x: {sample})").plan.pipelines[0].steps[0].args[0].value)
                fits = value is not NOT_LITERAL and jsonschema.Draft202012Validator(typed).is_valid(value)
                assert decoder.accepts(f"{name}({param}: {sample}{others})") == fits, (name, param, sample)
                tried += 1
            for reference in CHECKED_BY_THE_CHECKER:
                assert decoder.accepts(f"{name}({param}: {reference}{others})"), (name, param, reference)
    assert tried > 200


def the_rest(tool, param: str) -> str:
    """`, name: value` for the other arguments a step of `tool` with `param` needs (its required parameters,
    one of each `one_of` group `param` is not in), each a value its kind takes, for a grammar that wants them."""
    needed = [other for other in tool.required if other != param]
    needed += [group[0] for group in tool.one_of if param not in group and group[0] not in needed]
    filler = {"block": "{ today() }", "condition": "$1 > 1"}
    return "".join(f", {other}: {filler.get(tool.param_kind(other), '$1')}" for other in needed)


def test_block_parameters_take_blocks_and_conditions_any_expression(narrowed):
    decoder = narrowed(load_registry(CORPUS / "registry" / "planc.toml"))
    assert decoder.accepts("map(over: $1, do: { tally(query: item.title) })")
    assert decoder.accepts("map(over: $1, do: ({ tally(query: item.title) }))")
    assert not decoder.accepts('map(over: $1, do: "count")')
    assert not decoder.accepts("map(over: $1, do: $1)")
    assert decoder.accepts('filter(over: $1, where: severity >= 2 and not (status == "resolved"))')
    assert decoder.accepts('search(query: "x") |> summarize(style: "{$1[0].status}")')
    assert decoder.accepts('summarize(items: [1, {a: $1}], style: "{$1[0].status}")')
    assert not decoder.accepts("summarize(items: $1, style: bullets)")  # a bare word: a string without its quotes
    assert decoder.accepts("map(over: $1, do: { summarize(items: item, style: item.style, max_words: index) })")


def test_with_a_registry_a_step_gives_each_parameter_once_and_those_it_requires(narrowed):
    decoder = narrowed(load_registry(CORPUS / "registry" / "planc.toml"))
    assert decoder.accepts('search(limit: 5, query: "x")') and decoder.accepts('search(query: "x", limit: 5)')
    assert not decoder.accepts('search(query: "x", query: "y")')  # E105
    assert not decoder.accepts("search(limit: 5)")  # E202
    assert not decoder.accepts('search(query: "x") |> summarize(items: $1)')  # E209: given by the pipe and here
    assert not decoder.accepts('search(query: "x") |> tally(query: "y")')  # E209: tally takes no piped value
    assert decoder.accepts("filter(over: $1, where: x > 1)") and not decoder.accepts("filter(over: $1)")  # E303
    assert not decoder.accepts('filter(over: $1, where: x > 1, infer: "y")')


def test_an_enum_value_that_needs_escapes_is_spelled_as_planc_prints_it(tmp_path):
    (tmp_path / "planc.toml").write_text(
        '[tools.pick]\nparams = { choice = { enum = ["a \\"b\\"", "back\\\\slash", "{$1}", "tab\\tx", "é", 2, true] } }\n',
        encoding="utf-8",
    )
    for format in FORMATS:
        decoder = Decoder(export_grammar(load_registry(tmp_path / "planc.toml"), format=format, full=True), format)
        for written in ('"a \\"b\\""', '"back\\\\slash"', '"\\{$1}"', '"tab\\tx"', '"é"', "2", "true"):
            assert decoder.accepts(f"pick(choice: {written})"), (format, written)
        assert not decoder.accepts('pick(choice: "b")')


# The terminals mean what the lexer means.

TERMINALS = {name: re.compile(to_python(pattern)) for name, pattern in read_grammar().terminals.items()}


@settings(max_examples=examples(500))
@given(st.text(alphabet="\"\\{}$ab1un\n'", max_size=14), st.sampled_from(['"', '"""']))
@example(body='"\n', quote='"')
def test_the_string_terminal_matches_exactly_the_strings_the_parser_takes(body, quote):
    text = quote + body
    parsed = parse(f"a(x: {text})")
    # The parser may take a string and then whitespace (`""` and a newline): what it took as the
    # string is the argument's span.
    taken = parsed.ok and parsed.plan.pipelines[0].steps[0].args[0].value.span.end_offset == len("a(x: ") + len(text)
    assert bool(TERMINALS["STRING"].fullmatch(text)) == taken


@settings(max_examples=examples(500))
@given(st.text(alphabet="acdeilnorstu_0", min_size=1, max_size=9) | st.sampled_from(sorted(KEYWORDS)))
def test_the_name_terminal_matches_exactly_the_names_the_parser_takes(name):
    assert bool(TERMINALS["NAME"].fullmatch(name)) == parse(f"{name}()").ok


@given(st.from_regex(INTEGER_PATTERN, fullmatch=True))
def test_an_integer_literal_is_a_number_jsonschema_calls_an_integer(text):
    assert TERMINALS["NUMBER"].fullmatch(text)
    parsed = parse(f"a(x: {text})")
    if not parsed.ok:  # past the largest float: the parser's E100, like `1e999` in NOT_REJECTED
        assert abs(float(text)) == float("inf") and [d.code for d in parsed.diagnostics] == ["E100"]
        return
    value = literal_value(parsed.plan.pipelines[0].steps[0].args[0].value)
    assert jsonschema.Draft202012Validator({"type": "integer"}).is_valid(value)


# The command.


@pytest.mark.parametrize("format", FORMATS)
def test_the_command_prints_a_grammar_llguidance_reads(format, tmp_path):
    result = invoke("grammar", "--format", format, "--full")
    assert result.exit_code == 0, result.output
    Decoder(result.stdout, format)
    config = CORPUS / "registry" / "planc.toml"
    narrowed = invoke("grammar", "--format", format, "--config", config, "--full")
    assert narrowed.exit_code == 0, narrowed.output
    assert narrowed.stdout == export_grammar(load_registry(config), format=format, full=True)
    assert Decoder(narrowed.stdout, format).accepts('search(query: "x", limit: 5)')
    assert not Decoder(narrowed.stdout, format).accepts('search(query: "x", limt: 5)')


def test_the_command_is_lark_and_the_decoder_grammar_by_default_and_finds_the_nearest_planc_toml(tmp_path, monkeypatch):
    (tmp_path / "planc.toml").write_text('[tools.only]\nparams = { n = { type = "integer" } }\n', encoding="utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    result = invoke("grammar")
    assert result.exit_code == 0
    assert result.stdout == export_grammar(load_registry(tmp_path / "planc.toml"), format="lark")
    decoder = Decoder(result.stdout, "lark")
    assert decoder.accepts("only(n: 2)\n") and not decoder.accepts("other(n: 2)\n")
    assert not decoder.accepts('only(n: "2")\n')


def test_a_bad_planc_toml_is_exit_2_with_one_message(tmp_path):
    (tmp_path / "planc.toml").write_text("[tools.x]\nparams = 3\n", encoding="utf-8")
    result = invoke("grammar", "--config", tmp_path / "planc.toml")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "planc.toml:2" in result.stderr


def test_the_api_is_planc_export_grammar_and_refuses_an_unknown_format():
    assert planc.export_grammar is export_grammar and "export_grammar" in planc.__all__
    with pytest.raises(ValueError, match="unknown grammar format"):
        planc.export_grammar(format="ebnf")


# Each example exports and loads two whole grammars (about a second of CPU): `make test` runs 5, CI 60.
@settings(max_examples=examples(60, dev=5), deadline=None)
@given(st.lists(st.text(max_size=6), min_size=1, max_size=3, unique=True), st.text(max_size=20))
@example(values=["\x7f", "\ud800", "\x85 \u2028"], description="```\n\x7f\ud800")
def test_any_enum_value_and_description_goes_through_both_exports_into_llguidance(values, description):
    """Whatever text a tool's `enum` or description holds (control characters, DEL, lone surrogates), each
    export is a grammar llguidance reads, and the literal planc prints for each value is a plan it accepts."""
    from planc.decoding.specialise import _literal_text
    from planc.registry.loading.registry import Registry
    from planc.registry.tools.tool import Tool

    registry = Registry(
        tools={"pick": Tool("pick", params={"choice": {"enum": values}}, required=("choice",), description=description)}
    )
    for format in FORMATS:
        text = export_grammar(registry, format=format)
        text.encode("utf-8")  # writable as the file `planc grammar` prints
        decoder = Decoder(text, format)
        for value in values:
            assert decoder.accepts(f"pick(choice: {_literal_text(value)})\n"), (format, value)  # as fmt ends a plan


def test_the_command_writes_a_control_character_of_an_enum_as_an_escape(tmp_path):
    (tmp_path / "planc.toml").write_text(
        '[tools.pick]\nparams = { choice = { enum = ["a\\u007fb", "c\\u0085"] } }\n', encoding="utf-8"
    )
    for format in FORMATS:
        result = invoke("grammar", "--format", format, "--config", tmp_path / "planc.toml")
        assert result.exit_code == 0 and "\x7f" not in result.stdout, result.output
        assert Decoder(result.stdout, format).accepts('pick(choice: "a\x7fb")\n')
