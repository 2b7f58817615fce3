"""The resolve pass: what every reference, label and bare name refers to."""

from __future__ import annotations

import pytest

from planc.passes.context import CheckContext
from planc.passes.resolve.resolve import ARGS, iter_refs, resolve
from planc.syntax import ast
from planc.syntax.parser import parse


def resolved(text: str):
    plan = parse(text).plan
    assert plan is not None, parse(text).diagnostics
    resolution, found = resolve(plan, CheckContext(source=text))
    return plan, resolution, found


def codes(text: str) -> list[tuple[str, int, int, str]]:
    """(code, line, column, spanned text) of every resolve diagnostic."""
    _, _, found = resolved(text)
    return [(d.code, d.span.start.line, d.span.start.column, d.span.text(text)) for d in found]


def targets(text: str) -> dict[str, str]:
    """`$name` as written -> the path of the step it reads (or `args`)."""
    plan, resolution, found = resolved(text)
    assert found == [], [(d.code, d.message) for d in found]
    return {
        f"${ref.name.text}": (value if value == ARGS else resolution.paths[value]) for ref, value in resolution.targets.items()
    }


# --- numbered and labelled references at the top level ------------------------------------


def test_numbered_references_count_steps_across_pipelines():
    assert targets("a() |> b()\nc(x: $1, y: $2)\nd(z: $3)") == {"$1": "1", "$2": "2", "$3": "3"}


def test_labels_name_their_step():
    assert targets('hits = search(query: "x")\nsummarize(text: $hits.items[0])') == {"$hits": "1"}


def test_references_inside_holes_resolve_like_references():
    plan, resolution, found = resolved('hits = a()\nb(text: "{$hits.title} and {$1}")')
    assert found == []
    (step_b,) = plan.pipelines[1].steps
    assert [resolution.targets[ref] for ref in iter_refs(plan)] == [plan.pipelines[0].steps[0]] * 2
    assert step_b.args[0].value.holes[0].target in resolution.targets


def test_args_is_a_reference_to_the_run_arguments():
    assert targets('a(limit: $args.limit, all: $args, text: "{$args.q}")') == {"$args": "args"}


def test_forward_reference_by_number_and_by_label():
    assert codes("a(x: $2)\nb()") == [("E203", 1, 6, "$2")]
    assert codes("a(x: $later)\nlater = b()") == [("E203", 1, 6, "$later")]


def test_self_reference_by_number_and_by_label():
    assert codes("a() |> b(x: $2.items)") == [("E203", 1, 13, "$2")]
    assert codes("me = a(x: $me)") == [("E203", 1, 11, "$me")]
    _, _, found = resolved("me = a(x: $me)")
    assert "the step it is used in" in found[0].message


def test_out_of_range_references():
    found = resolved("a()\nb(x: $0, y: $3, z: $99)")[2]
    assert [(d.code, d.span.start.column) for d in found] == [("E204", 6), ("E204", 13), ("E204", 20)]
    assert "numbered 1 to 2" in found[1].message
    assert any("from 1" in hint for hint in found[0].hints)


def test_unknown_label_suggests_close_labels():
    _, _, found = resolved('hits = search(query: "x")\nsummarize(text: $hit)')
    (diagnostic,) = found
    assert diagnostic.code == "E204"
    assert diagnostic.hints == ("did you mean `$hits`?",)


def test_unknown_label_with_no_labels_says_how_to_label():
    (diagnostic,) = resolved("a()\nb(x: $nope)")[2]
    assert "label one with" in diagnostic.hints[0]


def test_a_reference_reports_its_own_span_and_step_path():
    text = "a()\nb() |> map(do: { c(x: $7.items[0]) })"
    (diagnostic,) = resolved(text)[2]
    assert diagnostic.span.text(text) == "$7"
    assert diagnostic.step == "3/do.1"


# --- labels: unique, and local to their block ---------------------------------------------


def test_duplicate_labels_anywhere_in_the_plan():
    assert codes("h = a()\nh = b()") == [("E205", 2, 1, "h")]
    assert codes("h = a()\nmap(over: [], do: { h = b() })") == [("E205", 2, 21, "h")]
    assert codes("map(over: [], do: { g = b() })\nmap(over: [], do: { g = c() })") == [("E205", 2, 21, "g")]


def test_args_is_not_a_label():
    (diagnostic,) = resolved("args = a()\nb(x: $args)")[2]
    assert (diagnostic.code, diagnostic.span.start.column) == ("E205", 1)
    assert "`args`" in diagnostic.message


def test_a_label_inside_a_block_is_visible_inside_it():
    assert targets("a() |> map(do: { h = b()\nc(x: $h) })") == {"$h": "2/do.1"}


def test_a_label_inside_a_block_is_not_visible_after_it():
    text = "a() |> map(do: { h = b() })\nc(x: $h)"
    (diagnostic,) = resolved(text)[2]
    assert (diagnostic.code, diagnostic.span.text(text)) == ("E204", "$h")
    assert "inside a block" in diagnostic.message and "2/do.1" in diagnostic.message


def test_a_label_in_one_branch_is_not_visible_in_the_other():
    text = "decide(when: $args.go, then: { h = a() }, else: { b(x: $h) })"
    assert codes(text) == [("E204", 1, 56, "$h")]


def test_outer_labels_are_visible_in_nested_blocks():
    text = "top = a()\nmap(over: [], do: { mid = b() |> map(do: { c(x: $top, y: $mid) }) })"
    assert targets(text) == {"$top": "1", "$mid": "2/do.1"}


def test_numbers_inside_a_block_are_top_level_step_numbers():
    assert targets("a()\nb() |> map(do: { c(x: $1, y: $2) })") == {"$1": "1", "$2": "2"}
    assert codes("a() |> map(do: { c(x: $2) })") == [("E203", 1, 23, "$2")]


def test_order_inside_a_block_is_checked_against_the_block_steps():
    text = "a() |> map(do: { b(x: $later)\nlater = c() })"
    assert codes(text) == [("E203", 1, 23, "$later")]


# --- bare words and bound names -----------------------------------------------------------


def test_a_bare_word_is_a_string_that_lost_its_quotes():
    text = 'search(query: "x") |> summarize(style: bullets.short)'
    (diagnostic,) = resolved(text)[2]
    assert diagnostic.code == "E206"
    assert diagnostic.span.text(text) == "bullets.short"
    assert diagnostic.hints == ('did you mean the string "bullets.short"?',)
    assert (diagnostic.fix.span.text(text), diagnostic.fix.replacement) == ("bullets.short", '"bullets.short"')


@pytest.mark.parametrize(
    "text", ["a(x: [ok])", "a(x: {k: ok})", "a(x: not ok)", "decide(when: ok, then: { b() })", "exit(when: ok)"]
)
def test_bare_words_outside_a_filter_condition_or_block(text):
    assert [code for code, *_ in codes(text)] == ["E206"]


def test_bare_names_in_a_filter_condition_are_fields_of_the_item():
    assert codes('a() |> filter(where: severity >= 2 and status.name != "x" and item.id == index)') == []


def test_item_and_index_are_bound_in_blocks_and_infer():
    assert codes("a() |> map(do: { b(x: item.id, i: index) })") == []
    assert codes("a() |> filter(do: { b(x: item) })") == []
    assert codes('a() |> filter(infer: "is {item.title} ({index}) urgent?")') == []


def test_a_filter_condition_does_not_bind_names_inside_a_nested_block():
    assert [code for code, *_ in codes("a() |> filter(where: { b(x: severity) })")] == ["E206"]


def test_accumulator_is_bound_only_in_reduce():
    assert codes("a() |> reduce(initial: 0, do: { add(a: accumulator, b: item) })") == []
    assert codes("a() |> map(do: { b(x: accumulator) })") == [("E207", 1, 23, "accumulator")]
    assert codes("a() |> reduce(do: { b() |> map(do: { c(x: accumulator, y: item) }) })") == []


@pytest.mark.parametrize(
    "text, name",
    [
        ("a(x: item)", "item"),
        ("a(x: index)", "index"),
        ("a(x: accumulator.total)", "accumulator"),
        ('a(x: "Title: {item.title}")', "item"),
        ("decide(when: $args.go, then: { b(x: item) })", "item"),
        ("a() |> map(do: { b() }, concurrency: item)", "item"),
    ],
)
def test_bindings_outside_a_block_that_binds_them(text, name):
    (diagnostic,) = resolved(text)[2]
    assert diagnostic.code == "E207"
    assert diagnostic.span.text(text) == name
    assert diagnostic.hints and "bound only inside" in diagnostic.hints[0]


def test_a_hole_naming_accumulator_in_a_filter_condition():
    text = 'a() |> filter(where: "{accumulator}" == name)'
    assert [code for code, *_ in codes(text)] == ["E207"]


# --- everything at once -------------------------------------------------------------------


def test_every_problem_is_reported_in_one_run_in_text_order():
    text = "h = a(x: $2)\nh = b(style: bullets, n: $0)\nc(x: item, y: $nope)\n"
    assert [code for code, *_ in codes(text)] == ["E203", "E205", "E206", "E204", "E207", "E204"]


def test_step_paths_of_blocks_and_branches():
    plan, resolution, _ = resolved("a()\ndecide(when: $1.ok, then: { b() |> c() }, else: { d() })\nmap(do: [{ e() }, { f() }])")
    assert sorted(resolution.paths.values()) == sorted(["1", "2", "2/then.1", "2/then.2", "2/else.1", "3", "3/do.1", "3/do2.1"])
    assert all(isinstance(step, ast.Step) for step in resolution.paths)
