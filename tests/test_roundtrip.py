"""Round trips of the canonical printer: random trees, and an identity corpus.

- `parse(print_plan(tree))` gives back `tree` (spans aside) for random valid trees;
- printing is idempotent;
- the parsed tree's spans point at the text each node was printed as;
- at any width, printing gives back the tree and is idempotent;
- `planc fmt` keeps every comment, gives back the same tree and is idempotent;
- every plan in `identity.plan` prints back unchanged.
"""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from profiles import examples
from strategies import SPAN, expressions, plans

from planc import parse, print_plan
from planc.syntax import ast
from planc.syntax.data import to_data
from planc.syntax.format import format_source
from planc.syntax.printer import print_expr, print_string

IDENTITY = Path(__file__).with_name("identity.plan")
SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_ok(text: str) -> ast.Plan:
    result = parse(text)
    assert result.ok, f"printed plan does not parse:\n{text}\n{result.diagnostics}"
    return result.plan


def _plan_of(expr: ast.Expr) -> ast.Plan:
    arg = ast.Arg(ast.Name("x", SPAN), expr, SPAN)
    step = ast.Step(ast.Name("a", SPAN), (arg,), None, SPAN)
    return ast.Plan((ast.Pipeline((step,), SPAN),), SPAN)


@SETTINGS
@given(plans())
def test_printed_plan_parses_back_to_the_same_tree(tree):
    text = print_plan(tree)
    assert to_data(_parse_ok(text), spans=False) == to_data(tree, spans=False)


@SETTINGS
@given(plans())
def test_printing_is_idempotent(tree):
    text = print_plan(tree)
    assert print_plan(_parse_ok(text)) == text


@SETTINGS
@given(expressions(max_depth=4))
def test_deeply_mixed_expressions_round_trip(expr):
    tree = _plan_of(expr)
    text = print_plan(tree)
    assert to_data(_parse_ok(text), spans=False) == to_data(tree, spans=False)


def _walk(node):
    """Every AST node under `node` (holes' targets included)."""
    yield node
    if isinstance(node, tuple):
        for child in node:
            yield from _walk(child)
    elif attrs.has(type(node)):
        for field in attrs.fields(type(node)):
            if field.name != "span":
                yield from _walk(getattr(node, field.name))


@SETTINGS
@given(plans())
def test_spans_of_the_parsed_tree_cover_the_printed_text_of_each_node(tree):
    text = print_plan(tree)
    parsed = _parse_ok(text)
    for node in _walk(parsed):
        if isinstance(node, (ast.Literal, ast.Ref, ast.Path)):
            assert node.span.text(text) == print_expr(node), node
        elif isinstance(node, ast.String):
            assert node.span.text(text) == print_string(node), node
        elif isinstance(node, ast.Hole):
            assert node.span.text(text) == "{" + print_expr(node.target) + "}", node
        elif isinstance(node, ast.Step):
            written = node.span.text(text)
            assert written.startswith(node.label.text if node.label else node.tool.text)
            assert written.endswith(")")
            assert node.tool.span.text(text) == node.tool.text
            for arg in node.args:
                assert arg.name.span.text(text) == arg.name.text
                assert arg.span.text(text).startswith(arg.name.text + ":")
        if hasattr(node, "span"):
            assert 0 <= node.span.start.offset <= node.span.end.offset <= len(text)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.randoms(use_true_random=False), st.sampled_from([100, 60, 30]))
def test_fmt_keeps_comments_and_the_tree(tree, rng, width):
    """Comments at the ends of lines and on lines of their own, anywhere a line breaks, at any width."""
    lines = print_plan(tree, width=width).split("\n")
    comments = []
    for number in range(len(lines) - 1):
        if rng.random() < 0.4:
            comments.append(f"# note {number}" if rng.random() < 0.5 else f"// note {number}")
            if rng.random() < 0.6:
                lines[number] += "  " + comments[-1]
            else:
                lines[number] = comments[-1] + "\n" + lines[number]
    if rng.random() < 0.5:
        lines.insert(0, "# header")
        comments.append("# header")
    formatted = format_source(parse("\n".join(lines)), width=width)
    reparsed = parse(formatted)
    assert reparsed.ok, formatted
    assert to_data(reparsed.plan, spans=False) == to_data(tree, spans=False)
    assert all(comment in formatted for comment in comments), formatted
    assert format_source(reparsed, width=width) == formatted


def _blocks_only_as_arguments(node) -> bool:
    """Whether every block under `node` is a step's argument (not inside a list, a record or a condition)."""
    if isinstance(node, ast.Arg):
        return _blocks_only_as_arguments(node.value.pipelines if isinstance(node.value, ast.Block) else node.value)
    if isinstance(node, ast.Block):
        return False
    children = (
        node
        if isinstance(node, tuple)
        else [getattr(node, field.name) for field in attrs.fields(type(node)) if field.name != "span"]
        if attrs.has(type(node))
        else []
    )
    return all(_blocks_only_as_arguments(child) for child in children)


@settings(SETTINGS, max_examples=examples(100))
@given(plans(), st.integers(0, 30))
def test_a_plan_whose_lines_fit_prints_as_it_does_with_no_width(tree, slack):
    """What a decoder writes (`planc grammar`: every step on a line) is what `planc fmt` prints, when it fits."""
    assume(_blocks_only_as_arguments(tree))
    unlimited = print_plan(tree, width=None)
    width = max(20, *map(len, unlimited.split("\n"))) + slack
    assert print_plan(tree, width=width) == unlimited


@settings(SETTINGS, max_examples=examples(100))
@given(plans(), st.integers(10, 120))
def test_printing_at_any_width_gives_back_the_tree_and_is_idempotent(tree, width):
    text = print_plan(tree, width=width)
    parsed = _parse_ok(text)
    assert to_data(parsed, spans=False) == to_data(tree, spans=False)
    assert print_plan(parsed, width=width) == text


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.integers(-(10**40), 10**40), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()))
def test_literals_keep_their_value_and_type(value):
    (step,) = _parse_ok(print_plan(_plan_of(ast.Literal(value, SPAN)))).pipelines[0].steps
    parsed = step.args[0].value.value
    assert type(parsed) is type(value)
    assert parsed == value
    if isinstance(value, float):
        assert math.copysign(1.0, parsed) == math.copysign(1.0, value)


@pytest.mark.parametrize(
    "text",
    [
        'He said "hi" \\ then {$1} and \\{$1} and {{E0.x}}',
        "line one\nline two\ttabbed\r\n",
        "{item.id}{index}{accumulator.total}",
        "{",
        "}{",
        "\\",
        "",
        "日本語 😀 \u2028 \x00",
    ],
)
def test_string_values_survive_printing(text):
    (step,) = _parse_ok(print_plan(_plan_of(ast.String((text,), SPAN)))).pipelines[0].steps
    assert step.args[0].value.parts == (text,)


def test_a_hole_keeps_its_target_and_the_text_around_it():
    target = ast.Ref(ast.Name("hits", SPAN), (ast.Field("items", SPAN), ast.Index(0, SPAN)), SPAN)
    string = ast.String(("{", ast.Hole(target, SPAN), "} \\"), SPAN)
    text = print_plan(_plan_of(string))
    assert text == 'a(x: "{{$hits.items[0]}} \\\\")\n'
    parsed = _parse_ok(text).pipelines[0].steps[0].args[0].value
    assert to_data(parsed, spans=False) == to_data(string, spans=False)


def _identity_plans() -> list[str]:
    blocks = IDENTITY.read_text(encoding="utf-8").split("\n\n")
    return [block.strip("\n") + "\n" for block in blocks if block.strip()]


def test_the_identity_corpus_is_large_enough():
    assert len(_identity_plans()) >= 40


@pytest.mark.parametrize("text", _identity_plans(), ids=lambda text: text.split("\n")[0][:40])
def test_canonical_plans_print_back_unchanged(text):
    result = parse(text)
    assert result.ok, result.diagnostics
    assert print_plan(result.plan) == text
    assert format_source(result) == text
