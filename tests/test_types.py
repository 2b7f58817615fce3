"""The types pass: what a user sees when a value cannot fit where it goes.

Every case checks a plan against a small registry and looks at the code, the
exact text it points at, and what the message and hints say.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import planc
from planc.corpus import load_cases, run_case
from planc.passes.context import CheckContext, Facts
from planc.passes.resolve.resolve import resolve
from planc.passes.types.types import types
from planc.registry import registry_from_text
from planc.syntax.parser import parse

TOML = """
[tools.search]
params = { query = { type = "string", minLength = 1 }, limit = { type = "integer", minimum = 1, maximum = 100 } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" }, title = { type = "string" }, severity = { type = "integer" }, status = { enum = ["open", "mitigated", "resolved"] }, tags = { type = "array", items = { type = "string" } } } } }
returns_at_most = "limit"
effects = { read_only = true }

[tools.get_issue]
params = { id = { type = "string" } }
required = ["id"]
returns = { type = "object", properties = { id = { type = "string" }, title = { type = "string" }, done = { type = "boolean" }, assignee = { type = ["object", "null"], properties = { name = { type = "string" } } } } }
effects = { read_only = true }

[tools.get_user]
params = { email = { type = "string" } }
required = ["email"]
returns = { type = "object", properties = { name = { type = "string" } }, additionalProperties = true }
effects = { read_only = true }

[tools.summarize]
pipe = "items"
params = { items = { type = "array" }, style = { enum = ["bullets", "prose"] }, max_words = { type = "integer", minimum = 10 } }
required = ["items"]
returns = { type = "object", properties = { text = { type = "string" } } }
effects = { read_only = true }

[tools.notify]
pipe = "text"
params = { channel = { type = "string", pattern = "^#" }, text = { type = "string" } }
required = ["channel", "text"]

[tools.create_ticket]
params = { title = { type = "string" }, labels = { type = "array", items = { type = "string" } }, fields = { type = "object", properties = { component = { type = "string" } }, required = ["component"], additionalProperties = false } }
required = ["title"]
"""


@pytest.fixture(scope="module")
def registry():
    return registry_from_text(TOML, Path("planc.toml"))


def found(text: str, registry) -> list[tuple[str, int, int, str]]:
    """(code, line, column, the text it points at) of every diagnostic."""
    return [
        (d.code, d.span.start.line, d.span.start.column, d.span.text(text))
        for d in planc.check(text, registry=registry).diagnostics
    ]


def only(text: str, registry, code: str):
    (diagnostic,) = [d for d in planc.check(text, registry=registry).diagnostics if d.code == code]
    return diagnostic


# --- no false positives -------------------------------------------------------------------

VALID = [
    'search(query: "outages", limit: 50) |> filter(where: severity >= 2 and status != "resolved") '
    '|> map(concurrency: 4, do: { get_issue(id: item.id) }) |> summarize(style: "bullets")',
    'search(query: "x")\ndecide(when: $1.length > 5, then: { notify(channel: "#ops", text: "{$1.length} hits") })',
    'get_issue(id: "ENG-1")\nnotify(channel: "#eng", text: "{$1.title} ({$1.title.length} chars) by {$1.assignee.name}")',
    'get_issue(id: "ENG-1")\ndecide(when: $1.done, then: { notify(channel: "#eng", text: "done") })',
    'get_user(email: "a@example.com")\nnotify(channel: "#people", text: "{$1.name} of {$1.team}")',
    'search(query: "x") |> filter(where: tags contains "db" or title contains "disk") |> summarize()',
    "search(query: $args.query, limit: $args.limit) |> summarize(style: $args.style)",
    'hits = search(query: "x", limit: 3)\ncreate_ticket(title: "About {$hits[0].id}", labels: ["{$hits[0].status}"], '
    'fields: {component: "db"})',
    'agent(prompt: "triage", output_schema: {type: "object", properties: {pages: {type: "array"}}}, tools: ["search"])\n'
    'decide(when: $1.final and $1.iterations < 5, then: { notify(channel: "#ops", text: "{$1.output.pages}") })',
    'search(query: "x") |> map(do: { get_issue(id: item.id) }) |> filter(where: done == false and assignee != null)',
    'get_issue(id: "ENG-1")\nreport = reshape(value: {title: $1.title, tags: ["a", "b"]})\n'
    'notify(channel: "#x", text: "{$report.title}: {$report.tags.length}")',
    'notify(channel: "#ops", text: "literal \\{{x}} and {name} stay text")',
    'search(query: "x") |> reduce(initial: 0, do: { reshape(value: accumulator) })',
]


@pytest.mark.parametrize("text", VALID)
def test_valid_plans_have_no_diagnostics(registry, text):
    assert found(text, registry) == []


def test_without_a_registry_other_tools_are_untyped():
    text = 'a(x: 1)\nb(y: $1.anything[3].at.all, z: "{$1.more}")\ndecide(when: $2.flag, then: { c() })'
    assert planc.check(text).diagnostics == ()


def test_the_embedded_example_checks_clean_against_its_registry():
    root = Path(__file__).resolve().parents[1] / "examples" / "incidents"
    registry = planc.registry.load_registry(root / "planc.toml")
    assert planc.check((root / "triage.plan").read_text(encoding="utf-8"), registry=registry).diagnostics == ()


# --- E300: values that do not match their parameter ---------------------------------------


@pytest.mark.parametrize(
    "text, span, words",
    [
        ('search(query: "x", limit: "ten")', '"ten"', 'expected an integer from 1 to 100, found the string "ten"'),
        ('search(query: "x", limit: 0)', "0", "found the integer 0"),
        ('search(query: "")', '""', 'expected a string that is not empty, found the string ""'),
        ('search(query: "x") |> summarize(style: "short")', '"short"', 'expected one of "bullets", "prose"'),
        ('notify(channel: "ops", text: "x")', '"ops"', "expected a string matching `^#`"),
        ('create_ticket(title: "x", labels: ["bug", 2])', "2", "expected a string, found the integer 2"),
        ('create_ticket(title: "x", fields: {estimate: 3})', "{estimate: 3}", "no key `component`, which is required"),
        ('create_ticket(title: "x", fields: {component: "db", owner: "me"})', 'owner: "me"', "unexpected key `owner`"),
        ('search(query: "x")\nsearch(query: $1)', "$1", "found `$1`, a list of objects"),
        ('get_issue(id: "A-1")\nsearch(query: "x", limit: $1.title)', "$1.title", "found `$1.title`, a string"),
        ('get_issue(id: "A-1")\nsearch(query: "x", limit: "{$1.title}")', '"{$1.title}"', "a string"),
        ('search(query: "x") |> map(concurrency: 0, do: { get_issue(id: item.id) })', "0", "an integer of at least 1"),
        ('summarize(items: { search(query: "x") })', '{ search(query: "x") }', "found a block of steps"),
        ('search(query: "x") |> map(do: "get_issue")', '"get_issue"', "takes a block of steps"),
    ],
)
def test_e300_says_what_was_expected_and_found(registry, text, span, words):
    diagnostic = only(text, registry, "E300")
    assert diagnostic.span.text(text) == span
    assert words in diagnostic.message


def test_e300_message_reads_as_the_design_says(registry):
    assert only('search(query: "x", limit: "ten")', registry, "E300").message == (
        'wrong value for `limit` of `search`: expected an integer from 1 to 100, found the string "ten"'
    )


def test_e300_for_a_piped_result_points_at_the_receiving_step(registry):
    text = 'search(query: "x") |> notify(channel: "#ops")'
    diagnostic = only(text, registry, "E300")
    assert diagnostic.span.text(text) == "notify" and "from the pipe" in diagnostic.message
    assert diagnostic.step == "2"


@pytest.mark.parametrize(
    "text, span",
    [
        ('search(query: "x")\ndecide(when: $1 > 5, then: { notify(channel: "#o", text: "x") })', "$1"),
        ('search(query: "x") |> filter(where: severity contains 2)', "severity"),
        ('get_issue(id: "A-1")\ndecide(when: $1.title > 5, then: { notify(channel: "#o", text: "x") })', "$1.title > 5"),
    ],
)
def test_e300_for_values_that_cannot_be_compared(registry, text, span):
    assert only(text, registry, "E300").span.text(text) == span


def test_e300_hint_for_a_list_compared_with_a_number(registry):
    text = 'search(query: "x")\ndecide(when: $1 > 5, then: { notify(channel: "#o", text: "x") })'
    assert "`.length` is the length of a list or a string" in only(text, registry, "E300").hints


def test_literals_are_checked_even_for_unknown_tool_types(registry):
    """Control steps are always known: their literal arguments are checked without a registry too."""
    assert [d.code for d in planc.check("a() |> map(concurrency: 0, do: { b() })").diagnostics] == ["E300"]
    assert [d.code for d in planc.check('exit(status: "failed")').diagnostics] == ["E300"]


# --- E301: fields that are not there ------------------------------------------------------


@pytest.mark.parametrize(
    "text, span, message",
    [
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: $1.titel)', ".titel", "`$1` has no field `titel`"),
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: "{$1.summary}")', ".summary", "`$1` has no field `summary`"),
        ('search(query: "x")\nnotify(channel: "#x", text: $1.title)', ".title", "`$1` is a list: it has no field `title`"),
        ('search(query: "x") |> filter(where: severty > 1)', "severty", "`item` has no field `severty`"),
        ('search(query: "x") |> map(do: { get_issue(id: item.ident) })', ".ident", "`item` has no field `ident`"),
        (
            'get_issue(id: "A-1")\nnotify(channel: "#x", text: "{$1.assignee.phone}")',
            ".phone",
            "`$1.assignee` has no field `phone`",
        ),
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: "{$1[0]}")', "[0]", "`$1` is an object"),
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: "{$1.length}")', ".length", "`$1` has no field `length`"),
        (
            'agent(prompt: "p", output_schema: {type: "object"})\nnotify(channel: "#x", text: "{$1.result}")',
            ".result",
            "`$1` has no field `result`",
        ),
        (
            'get_issue(id: "A-1")\nr = reshape(value: {title: $1.title})\nnotify(channel: "#x", text: "{$r.titel}")',
            ".titel",
            "`$r` has no field `titel`",
        ),
    ],
)
def test_e301_points_at_the_field(registry, text, span, message):
    diagnostic = only(text, registry, "E301")
    assert diagnostic.span.text(text) == span
    assert diagnostic.message.startswith(message)


def test_e301_hints_name_the_fields_that_exist(registry):
    text = 'get_issue(id: "A-1")\nnotify(channel: "#x", text: $1.titel)'
    assert only(text, registry, "E301").hints == (
        "did you mean `title`?",
        "the fields of `$1` are `id`, `title`, `done`, `assignee`",
    )


def test_e301_hint_for_a_field_of_a_list(registry):
    text = 'search(query: "x")\nnotify(channel: "#x", text: $1.title)'
    assert "`$1[0].title` reads the first item's `title`" in only(text, registry, "E301").hints[0]


@pytest.mark.parametrize(
    "text, written",
    [
        ('a = search(query: "x")\nnotify(channel: "#x", text: "{$a.lenght}")', "$a"),
        ('search(query: "x")\nnotify(channel: "#x", text: "{$1.lengh} found")', "$1"),
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: "{$1.title.lenth}")', "$1.title"),
        ('search(query: "x") |> filter(where: title.size > 3)', "item.title"),
    ],
)
def test_e301_on_a_list_or_a_string_says_length_was_meant_and_fixes_it(registry, text, written):
    diagnostic = only(text, registry, "E301")
    assert diagnostic.hints == (f"did you mean `{written}.length`?",)
    assert diagnostic.fix.replacement == ".length"
    fixed = text[: diagnostic.span.start_offset] + ".length" + text[diagnostic.span.end_offset :]
    assert found(fixed, registry) == []


def test_e301_on_a_list_says_nothing_of_length_for_a_field_it_does_not_resemble(registry):
    diagnostic = only('search(query: "x")\nnotify(channel: "#x", text: "{$1.total}")', registry, "E301")
    assert diagnostic.fix is None and "length" not in " ".join(diagnostic.hints)


def test_e301_stops_at_the_first_missing_field(registry):
    text = 'get_issue(id: "A-1")\nnotify(channel: "#x", text: $1.a.b.c)'
    assert found(text, registry) == [("E301", 2, 31, ".a")]


def test_typed_run_arguments_are_checked():
    """A plan declared with `params` types its `$args` (the hook for plans as tools)."""
    text = "a(x: $args.limit, y: $args.limt)"
    diagnostics = planc.check(text, arguments={"limit": {"type": "integer"}}).diagnostics
    assert [(d.code, d.span.text(text)) for d in diagnostics] == [("E301", ".limt")]


# --- E302: conditions and values in each other's place ------------------------------------


@pytest.mark.parametrize(
    "text, span",
    [
        ('search(query: "x")\nsearch(query: "y", limit: $1.length > 3)', "$1.length > 3"),
        ('search(query: "x")\ndecide(when: "many results", then: { summarize(items: $1) })', '"many results"'),
        ('search(query: "x")\ndecide(when: $1, then: { summarize(items: $1) })', "$1"),
        ('search(query: "x") |> filter(where: severity)', "severity"),
        ('get_issue(id: "A-1")\nreshape(value: {title: $1.title, done: $1.done == true})', "$1.done == true"),
        ('get_issue(id: "A-1")\ndecide(when: $1.done and "yes", then: { summarize(items: [$1]) })', '"yes"'),
    ],
)
def test_e302_points_at_the_misplaced_expression(registry, text, span):
    assert only(text, registry, "E302").span.text(text) == span


def test_e302_hints(registry):
    text = 'search(query: "x")\ndecide(when: "many results", then: { summarize(items: $1) })'
    assert "infer" in only(text, registry, "E302").hints[0]
    text = 'search(query: "x")\ndecide(when: $1, then: { summarize(items: $1) })'
    assert only(text, registry, "E302").hints == ("compare it, like `$1.length > 0`",)


# --- E303: agent inputs that cannot work --------------------------------------------------


@pytest.mark.parametrize(
    "argument, span, words",
    [
        ('output_schema: {type: "array"}', '{type: "array"}', "must be an object schema"),
        ('output_schema: "json"', '"json"', 'found the string "json"'),
        (
            'output_schema: {type: "object", properties: {a: {type: "list"}}}',
            '{type: "object", properties: {a: {type: "list"}}}',
            "not a valid JSON Schema",
        ),
        ('output_schema: {type: "object"}, max_iterations: 0', "0", "`max_iterations` must be at least 1"),
    ],
)
def test_e303_for_agent_inputs(argument, span, words):
    text = f'agent(prompt: "p", {argument})'
    (diagnostic,) = planc.check(text).diagnostics
    assert (diagnostic.code, diagnostic.span.text(text)) == ("E303", span)
    assert words in diagnostic.message


def test_e303_is_not_also_e300():
    codes = [d.code for d in planc.check('agent(prompt: "p", output_schema: {type: "object"}, max_iterations: 0)').diagnostics]
    assert codes == ["E303"]


# --- W501: reads nobody reads -------------------------------------------------------------


@pytest.mark.parametrize(
    "text, span",
    [
        ('search(query: "x")\nnotify(channel: "#x", text: "done")', 'search(query: "x")'),
        ('hits = search(query: "x"); notify(channel: "#x", text: "done")', 'hits = search(query: "x")'),
        (
            'search(query: "x") |> map(do: {\n  get_issue(id: item.id)\n  notify(channel: "#x", text: "{item.id}")\n})',
            "get_issue(id: item.id)",
        ),
    ],
)
def test_w501_points_at_the_unused_step(registry, text, span):
    assert found(text, registry) == [("W501", *_position(text, span), span)]


@pytest.mark.parametrize(
    "text, span, hint",
    [
        (
            'search(query: "x") |> map(do: { get_issue(id: item.id) })\nnotify(channel: "#x", text: "done")',
            "map(do: { get_issue(id: item.id) })",
            "`map` and the steps in it change nothing",
        ),
        (
            'search(query: "x") |> filter(where: severity > 2)\nnotify(channel: "#x", text: "done")',
            "filter(where: severity > 2)",
            "`filter` changes nothing",
        ),
        ('n = reshape(value: 3)\nnotify(channel: "#x", text: "done")', "n = reshape(value: 3)", "`reshape` changes nothing"),
        (
            'split(text: "a,b", separator: ",")\nnotify(channel: "#x", text: "done")',
            'split(text: "a,b", separator: ",")',
            "`split` changes nothing",
        ),
        (
            'decide(when: true, then: { search(query: "x") })\nnotify(channel: "#x", text: "done")',
            'decide(when: true, then: { search(query: "x") })',
            "`decide` and the steps in it change nothing",
        ),
    ],
)
def test_w501_for_any_step_that_changes_nothing_whose_result_is_unread(registry, text, span, hint):
    """Not only a read-only tool's call: a control step whose blocks only read, or a pure step, is wasted too."""
    assert found(text, registry) == [("W501", *_position(text, span), span)]
    assert only(text, registry, "W501").hints[0].startswith(hint)


def test_w501_not_for_a_step_that_acts_or_may_end_the_plan(registry):
    assert found('search(query: "x") |> map(do: { notify(channel: "#x", text: item.id) })\nreshape(value: 1)', registry) == []
    assert found('decide(when: true, then: { notify(channel: "#x", text: "y") })\nreshape(value: 1)', registry) == []
    assert found("exit(when: true, output: 1)\nreshape(value: 2)", registry) == []
    assert found('search(query: "x") |> map(do: { mystery(id: item.id) })\nreshape(value: 1)', registry) == [
        ("E200", 1, 33, "mystery")
    ]  # an unknown tool: who knows what it does


def test_w501_not_for_used_piped_last_or_effectful_steps(registry):
    assert found('search(query: "x")\nsummarize(items: $1)', registry) == []
    assert found('search(query: "x") |> summarize()', registry) == []
    assert found('notify(channel: "#a", text: "x")\nnotify(channel: "#b", text: "y")', registry) == []
    assert found('search(query: "x") |> map(do: { get_issue(id: item.id) })', registry) == []


def test_w501_hint_names_the_reference(registry):
    assert "read it as `$1`" in only('search(query: "x")\nnotify(channel: "#x", text: "y")', registry, "W501").hints[0]


# --- W502: holes from other template languages --------------------------------------------


@pytest.mark.parametrize(
    "text, span, replacement",
    [
        ('notify(channel: "#x", text: "Title: {{E0.title}}")', "{{E0.title}}", None),
        ('notify(channel: "#x", text: "Title: {E0.title}")', "{E0.title}", None),
        ('notify(channel: "#x", text: "run ${{ steps.a.outputs.url }}")', "${{ steps.a.outputs.url }}", None),
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: "{{$1.title}}")', "{{$1.title}}", "{$1.title}"),
        ('get_issue(id: "A-1")\nnotify(channel: "#x", text: "{{ $1.title }}")', "{{ $1.title }}", "{$1.title}"),
        (
            'hits = search(query: "x")\nnotify(channel: "#x", text: "{{hits[0].title}} of {$hits.length}")',
            "{{hits[0].title}}",
            "{$hits[0].title}",
        ),
        ('search(query: "x") |> map(do: { notify(channel: "#x", text: "${item.id}") })', "${item.id}", "{item.id}"),
        ('search(query: "x") |> map(do: { notify(channel: "#x", text: "{ item.id }") })', "{ item.id }", "{item.id}"),
    ],
)
def test_w502_with_a_fix_only_when_certain(registry, text, span, replacement):
    diagnostic = only(text, registry, "W502")
    assert diagnostic.span.text(text) == span
    assert (diagnostic.fix.replacement if diagnostic.fix else None) == replacement
    if diagnostic.fix:
        assert diagnostic.fix.span == diagnostic.span


def test_w502_no_fix_for_an_unbound_item_or_an_unknown_name(registry):
    text = 'notify(channel: "#x", text: "{{item.id}} {{name}}")'
    assert [d.fix for d in planc.check(text, registry=registry).diagnostics if d.code == "W502"] == [None, None]


def test_w502_leaves_escapes_lone_words_and_planc_holes_alone(registry):
    text = 'get_issue(id: "A-1")\nnotify(channel: "#x", text: "\\{{x}} \\{E0.x} {name} { word } {$1.title} {}")'
    assert found(text, registry) == []


# --- W503: comparisons with values an enum does not have ----------------------------------


def test_w503_points_at_the_literal(registry):
    text = 'search(query: "x") |> filter(where: status == "closed")'
    diagnostic = only(text, registry, "W503")
    assert diagnostic.span.text(text) == '"closed"'
    assert "always false" in diagnostic.message and diagnostic.fix is None
    assert '"open", "mitigated", "resolved"' in diagnostic.hints[-1]


def test_w503_fixes_the_case(registry):
    text = 'search(query: "x")\ndecide(when: "Resolved" != $1[0].status, then: { summarize(items: $1) })'
    diagnostic = only(text, registry, "W503")
    assert diagnostic.span.text(text) == '"Resolved"' and "always true" in diagnostic.message
    assert diagnostic.fix.replacement == '"resolved"'


@pytest.mark.parametrize(
    "text, written, meant",
    [
        ('search(query: "x") |> summarize(style: "Prose")', '"Prose"', '"prose"'),
        ('search(query: "x")\nsummarize(items: $1, style: "BULLETS")', '"BULLETS"', '"bullets"'),
    ],
)
def test_an_argument_that_differs_from_an_enum_value_only_in_case_gets_did_you_mean_and_a_fix(registry, text, written, meant):
    """As W503 does for `status == "Open"`: the E300 of an argument says which value was meant, and fixes it."""
    diagnostic = only(text, registry, "E300")
    assert diagnostic.span.text(text) == written
    assert diagnostic.hints[0] == f"did you mean {meant}?" and diagnostic.fix.replacement == meant
    fixed = text.replace(written, meant)
    assert found(fixed, registry) == []


def test_an_argument_that_could_mean_two_enum_values_gets_no_fix():
    registry = registry_from_text('[tools.t]\nparams = { mode = { enum = ["ab", "AB"] } }\n', Path("planc.toml"))
    diagnostic = only('t(mode: "Ab")', registry, "E300")
    assert diagnostic.fix is None and not any("did you mean" in hint for hint in diagnostic.hints)
    assert only('t(mode: "a ")', registry, "E300").fix is None


def test_w503_not_for_null_or_values_in_the_enum(registry):
    assert found('search(query: "x") |> filter(where: status != null and status == "open")', registry) == []


# --- the facts the pass keeps ---------------------------------------------------------------


def test_typing_keeps_the_type_of_steps_and_references(registry):
    text = 'search(query: "x", limit: 5) |> filter(where: severity > 1)\nget_issue(id: $2[0].id)'
    result = planc.check(text, registry=registry)
    first, second = result.plan.pipelines[0].steps
    (third,) = result.plan.pipelines[1].steps
    search = registry.tools["search"].returns
    assert result.typing.of(first) is search
    assert result.typing.of(second) is search  # a filter keeps its input's type
    assert result.typing.of(third.args[0].value) == {"type": "string"}


def test_control_step_result_types(registry):
    text = (
        'search(query: "x") |> map(do: { get_issue(id: item.id) })\n'
        'agent(prompt: "p", output_schema: {type: "object", properties: {n: {type: "integer"}}})\n'
        "decide(when: $2.final, then: { reshape(value: 1) }, else: { reshape(value: 2) })"
    )
    result = planc.check(text, registry=registry)
    mapped, agent, decide = [step for pipeline in result.plan.pipelines for step in pipeline.steps][1:]
    assert result.typing.of(mapped) == {"type": "array", "items": registry.tools["get_issue"].returns}
    assert result.typing.of(agent)["properties"]["output"] == {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert result.typing.of(decide) == {"type": "integer"}


def test_the_pass_reads_the_resolve_facts_from_its_context_and_never_resolves_again(registry):
    text = 'get_issue(id: "A-1")\nnotify(channel: "#x", text: $1.titel)'
    plan = parse(text).plan
    context = CheckContext(source=text, registry=registry)
    resolution, _ = resolve(plan, context)
    with_facts = types(plan, attrs.evolve(context, facts=Facts(resolution=resolution)))
    assert [d.code for d in with_facts[1]] == ["E301"]
    with pytest.raises(ValueError, match="no `resolution` yet"):
        types(plan, context)


# --- the corpus finds its registry --------------------------------------------------------


def test_corpus_cases_use_the_nearest_planc_toml(tmp_path):
    (tmp_path / "plain.txt").write_text("===\nno registry\n===\nsearch(query: 1)\n---\nok\n", encoding="utf-8")
    typed = tmp_path / "typed" / "deeper"
    typed.mkdir(parents=True)
    (tmp_path / "typed" / "planc.toml").write_text(TOML, encoding="utf-8")
    (typed / "cases.txt").write_text("===\nwith the registry\n===\nsearch(query: 1)\n---\nE300 1:15\n", encoding="utf-8")
    cases = load_cases(tmp_path)
    assert [(case.category, case.registry is None) for case in cases] == [("plain", True), ("typed/deeper/cases", False)]
    assert all(run_case(case).passed for case in cases)


def _position(text: str, span: str) -> tuple[int, int]:
    offset = text.index(span)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# --- literal validation agrees with jsonschema ----------------------------------------------

SCHEMAS = [
    {"type": "integer", "minimum": 1, "maximum": 100},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "string", "minLength": 1, "maxLength": 3},
    {"enum": ["a", "b", 1]},
    {"const": True},
    {"type": "array", "items": {"type": "string"}, "minItems": 1},
    {"type": "string", "pattern": "^#"},
    {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
    {},
    {"type": ["string", "null"]},
    # An integer against a fractional bound: `(1).__ge__(2.5)` is NotImplemented, which is true.
    {"type": "number", "minimum": 2.5},
    {"type": "integer", "maximum": 0.5},
    {"type": "number", "exclusiveMaximum": 1.5},
]
VALUES = [0, 1, 1.0, 2.5, 101, True, False, None, "", "a", "abcd", "#x", [], ["a"], ["a", 1], {}, {"k": 1}, {"k": "1"}]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(schema) for schema in SCHEMAS])
def test_literal_validation_agrees_with_jsonschema(schema):
    from jsonschema.validators import validator_for

    from planc.analysis.literals import Validators

    validators, validator = Validators(), validator_for(schema)(schema)
    written = parse("a(x: 1)").plan.pipelines[0].steps[0].args[0].value  # where a wrong value is reported
    disagree = [value for value in VALUES if (validators.problem(schema, value, written) is None) != validator.is_valid(value)]
    assert disagree == []
