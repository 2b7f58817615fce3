"""`planc diff` and `planc.diff.diff_plans`: plans compared step by step.

The corpus (`corpus/diff/`) holds the named cases with their change lists; here: the
command's exit codes and output, and properties over random plans.
"""

from __future__ import annotations

import json
import random

import pytest
from cli import invoke
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from profiles import examples
from strategies import plans

from planc.diff import DiffError, diff_plans
from planc.syntax.parser import parse
from planc.syntax.printer import print_plan, print_step

A = """search(query: "sev2 outages", limit: 50)
  |> filter(where: severity >= 2)
summarize(text: $2, style: "bullets")
notify(channel: "#ops", text: "{$3}")
"""
B = """get_oncall(team: "infra")
search(query: "sev2 outages", limit: 100)
  |> filter(where: severity >= 2)
summarize(text: $3, style: "bullets")
notify(channel: "#ops", text: "{$4}")
"""


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def write(name: str, text: str) -> str:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return name

    return write


def kinds(diff) -> list[tuple]:
    return [(change.kind, change.step_a, change.step_b, change.tool) for change in diff.changes]


# --- the command ---------------------------------------------------------------------------


def test_same_plans_exit_0_and_say_so(files):
    result = invoke("diff", files("a.plan", A), files("b.plan", "# reformatted\n" + A.replace("\n  |>", " |>")))
    assert result.exit_code == 0, result.output
    assert "same" in result.output


def test_json_is_the_documented_shape(files):
    result = invoke("diff", files("a.plan", A), files("b.plan", B), "--format", "json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.output) == {
        "same": False,
        "changes": [
            {"kind": "added", "step_a": None, "step_b": "1", "tool": "get_oncall", "args": {"team": {"a": None, "b": '"infra"'}}},
            {"kind": "changed", "step_a": "1", "step_b": "2", "tool": "search", "args": {"limit": {"a": "50", "b": "100"}}},
        ],
    }


def test_json_of_same_plans(files):
    result = invoke("diff", files("a.plan", A), files("b.plan", A), "--format", "json")
    assert (result.exit_code, json.loads(result.output)) == (0, {"same": True, "changes": []})


def test_text_reads_like_a_review(files):
    result = invoke("diff", files("a.plan", A), files("b.plan", B))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[:2] == ["--- a.plan", "+++ b.plan"]
    assert lines[2].startswith("+ step 1") and lines[2].endswith('get_oncall(team: "infra")')
    assert lines[3].startswith("~ step 2 (was 1)") and lines[3].endswith('search(query: "sev2 outages", limit: 100)')
    assert lines[4].strip() == "limit: 50 -> 100"
    assert lines[5] == "2 changes: 1 added, 1 changed"
    assert "\x1b[" not in result.output  # colour only on a terminal


def test_a_reference_with_the_same_text_but_another_step_says_so(files):
    result = invoke(
        "diff",
        files("a.plan", 'search(query: "x")\nsummarize(text: $1)\n'),
        files("b.plan", 'web_search(query: "x")\nsummarize(text: $1)\n'),
    )
    assert result.exit_code == 1
    assert "text: $1 -> $1  (the same text, now another step)" in result.output


def test_standard_input_is_one_of_the_plans(files):
    result = invoke("diff", files("a.plan", A), "-", "--format", "json", input=B)
    assert result.exit_code == 1 and len(json.loads(result.output)["changes"]) == 2


def test_a_plan_with_syntax_errors_is_exit_1_with_its_diagnostics(files):
    result = invoke("diff", files("a.plan", A), files("b.plan", 'search(query: "x"\n'))
    assert result.exit_code == 1  # as `planc check` and `planc fmt` say of a syntax error
    assert "error[E100]" in result.output and "b.plan:1:" in result.output
    assert "Traceback" not in result.output


def test_syntax_errors_in_both_plans_are_all_reported(files):
    result = invoke("diff", files("a.plan", "search(query: 'x')\n"), files("b.plan", 'search(query: "x"\n'))
    assert result.exit_code == 1
    assert "a.plan:1:" in result.stderr and "b.plan:1:" in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (("a.plan", "missing.plan"), "missing.plan: no such file"),
        (("-", "-"), "only one of A and B can be standard input"),
        (("a.plan", "stored.json"), "stored.json: a stored plan without its source text"),
    ],
)
def test_usage_errors_are_one_clean_message_and_exit_2(files, args, message):
    files("a.plan", A)
    files("stored.json", json.dumps({"format": "planc.plan", "version": 1}))
    result = invoke("diff", *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_a_stored_plan_is_diffed_by_its_source(files):
    text = 'ask(question: "Which incident?")\nreshape(value: {incident: $1, note: "checked"})\n'
    files("p.plan", text)
    assert invoke("compile", "p.plan", "-o", "p.json").exit_code == 0
    assert invoke("diff", "p.plan", "p.json").exit_code == 0
    assert invoke("diff", "p.json", "p.json").exit_code == 0
    changed = invoke("diff", "p.json", files("q.plan", text.replace('"checked"', '"done"')), "--format", "json")
    assert changed.exit_code == 1
    assert json.loads(changed.output)["changes"] == [
        {
            "kind": "changed",
            "step_a": "2",
            "step_b": "2",
            "tool": "reshape",
            "args": {"value": {"a": '{incident: $1, note: "checked"}', "b": '{incident: $1, note: "done"}'}},
        }
    ]


# --- the library ---------------------------------------------------------------------------


def test_diff_plans_raises_for_a_plan_that_does_not_parse():
    with pytest.raises(DiffError) as raised:
        diff_plans("a()", "b(")
    assert raised.value.side == "b" and raised.value.result.diagnostics[0].code == "E100"


def test_a_moved_step_is_one_move_not_a_cascade():
    steps = [f"step{n}(n: {n})" for n in range(8)]
    moved = steps[1:6] + steps[:1] + steps[6:]
    assert kinds(diff_plans("\n".join(steps), "\n".join(moved))) == [("moved", "1", "6", "step0")]


def test_changes_inside_blocks_have_nested_paths():
    a = 'search(query: "x")\nmap(over: $1, do: {\n  get(id: item.id)\n    |> notify(channel: "#a")\n})'
    b = 'new()\nsearch(query: "x")\nmap(over: $2, do: {\n  get(id: item.id)\n    |> notify(channel: "#b")\n})'
    diff = diff_plans(a, b)
    assert kinds(diff) == [("added", None, "1", "new"), ("changed", "2/do.2", "3/do.2", "notify")]
    assert diff.changes[1].args["channel"].a == '"#a"' and diff.changes[1].args["channel"].b == '"#b"'


def test_a_retargeted_reference_is_a_changed_argument():
    diff = diff_plans("a(n: 1)\na(n: 2)\nb(x: $1)", "a(n: 1)\na(n: 2)\nb(x: $2)")
    assert kinds(diff) == [("changed", "3", "3", "b")]
    assert (diff.changes[0].args["x"].a, diff.changes[0].args["x"].b) == ("$1", "$2")


# --- properties ----------------------------------------------------------------------------
#
# Random plans whose references all resolve, as a model: each top-level step reads earlier
# top-level steps (by index), may be piped into, and may be a `map` whose block's steps read
# `item` and earlier top-level steps. `render` writes a model as plan text.

TOOLS = ("search", "get", "summarize", "notify", "filter")
SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _step_model(draw, index: int, inner: bool = False):
    args = {}
    for name in draw(st.lists(st.sampled_from(("query", "limit", "text", "id", "style")), max_size=3, unique=True)):
        choices = [st.sampled_from(["0", "1", '"a"', '"b"', "true", "[1, 2]"])]
        if index:
            choices.append(st.tuples(st.integers(0, index - 1), st.sampled_from(["", ".title", "[0].id"])))
        if inner:
            choices.append(st.just("item.id"))
        args[name] = draw(st.one_of(choices))
    block = None
    if not inner and index and draw(st.integers(0, 4)) == 0:
        block = [draw(_step_model(index, inner=True)) for _ in range(draw(st.integers(1, 3)))]
    return {
        "tool": "map" if block else draw(st.sampled_from(TOOLS)),
        "args": args,
        "block": block,
        "piped": draw(st.booleans()),
        "label": f"s{index}",
    }


@st.composite
def plan_models(draw):
    model = [draw(_step_model(index)) for index in range(draw(st.integers(1, 12)))]
    return [{**model[0], "piped": False}] + model[1:]  # the first step starts a pipeline, whatever comes before it


def render(model, messy: random.Random | None = None) -> str:
    """`model` as plan text: canonical, every step labelled and read by number; or, with
    `messy`, as someone else would write the same plan: comments, spacing, another argument
    order, labels left off, steps read by label."""
    labelled = [messy is None or messy.random() < 0.5 for _ in model]

    def value(spec) -> str:
        if isinstance(spec, str):
            return spec
        target, accessors = spec
        by_label = labelled[target] and messy is not None and messy.random() < 0.5
        return f"${model[target]['label'] if by_label else target + 1}{accessors}"

    def call(spec) -> str:
        args = [f"{name}: {value(arg)}" for name, arg in spec["args"].items()]
        if spec["block"]:
            args.append("do: { " + "; ".join(pipelines(spec["block"])) + " }")
        if messy:
            messy.shuffle(args)
        return f"{spec['tool']}({', '.join(args)})"

    def pipelines(specs, labels=None) -> list[str]:
        lines: list[str] = []
        for number, spec in enumerate(specs):
            text = (f"{spec['label']} = " if labels and labels[number] else "") + call(spec)
            if spec["piped"] and lines:
                lines[-1] += (" |> " if messy is None or messy.random() < 0.5 else "\n    |>") + text
            else:
                lines.append(text)
        return lines

    lines = pipelines(model, labelled)
    if messy is None:
        return "\n".join(lines)
    lines = [(" " * messy.randint(0, 3)) + line + ("  # note" if messy.random() < 0.3 else "") for line in lines]
    return "// the same plan\n" + "\n\n".join(lines)


def renumbered(model, new_index):
    """`model` with every reference to the step at index i made a reference to `new_index(i)`."""

    def step(spec):
        args = {name: arg if isinstance(arg, str) else (new_index(arg[0]), arg[1]) for name, arg in spec["args"].items()}
        return {**spec, "args": args, "block": [step(inner) for inner in spec["block"]] if spec["block"] else None}

    return [step(spec) for spec in model]


@SETTINGS
@given(plans())
def test_a_plan_is_the_same_as_itself(tree):
    text = print_plan(tree)
    assert diff_plans(text, text).same


@SETTINGS
@given(plans(), st.randoms(use_true_random=False))
def test_comments_and_spacing_change_nothing(tree, rng):
    lines = print_plan(tree).split("\n")
    messy = "\n\n".join(" " * rng.randint(0, 3) + line + ("  # note" if rng.random() < 0.4 else "") for line in lines)
    assert diff_plans(print_plan(tree), "# header\n" + messy).same


@SETTINGS
@given(plan_models(), st.randoms(use_true_random=False))
def test_the_same_plan_written_another_way_is_the_same(model, rng):
    assert diff_plans(render(model), render(model, rng)).same, render(model, rng)


@SETTINGS
@given(plan_models(), _step_model(0), st.randoms(use_true_random=False))
def test_a_step_inserted_at_the_top_is_one_added_step(model, new, rng):
    new = {**new, "piped": False, "label": "inserted"}
    a, b = render(model), render([new] + renumbered(model, lambda i: i + 1), rng)
    diff = diff_plans(a, b)
    assert [change.kind for change in diff.changes] == ["added"], (a, b, diff.changes)
    added = diff.changes[0]
    assert (added.tool, {name: arg.b for name, arg in added.args.items()}) == (new["tool"], new["args"])


def _reads(spec) -> set[int]:
    reads = {arg[0] for arg in spec["args"].values() if not isinstance(arg, str)}
    return reads.union(*[_reads(inner) for inner in spec["block"] or []])


def _without(model, index: int):
    """`model` without its step `index`, the steps after it read one index earlier."""
    rest = renumbered(model[:index] + model[index + 1 :], lambda i: i - (i > index))
    return [{**rest[0], "piped": False}] + rest[1:]


def _steps_written(model) -> list[str]:
    """Each step of `model` as text without its label, the arguments of every step in name order."""

    def in_name_order(spec):
        return {
            **spec,
            "args": dict(sorted(spec["args"].items())),
            "block": [in_name_order(inner) for inner in spec["block"]] if spec["block"] else None,
        }

    plan = parse(render([in_name_order(spec) for spec in model])).plan
    return [print_step(step).split(" = ", 1)[1] for pipeline in plan.pipelines for step in pipeline.steps]


@st.composite
def _model_and_index(draw):
    """A plan model and the index of one of its steps."""
    model = draw(plan_models())
    return model, draw(st.integers(0, len(model) - 1))


def _step(tool: str, label: str, args: dict | None = None, piped: bool = False, block: list | None = None) -> dict:
    """A step of a model written out by hand; a `map`'s block is `search()` unless given."""
    if tool == "map" and block is None:
        block = [_step("search", label)]
    return {"tool": tool, "args": args or {}, "block": block, "piped": piped, "label": label}


# The first of look-alike steps in a pipeline removed, `search(limit: $1) |> search(limit: $2) |>
# search(limit: $2)`: it was paired with the first `search(limit: $2)` of B, by its place or as the
# same computation, though it reads another step. Hypothesis found the first; the second is the
# same edit in five steps, where the steps `$1` and `$2` read are alike and the pipe reads `$2` too.
LOOKALIKES_IN_A_PIPELINE = [
    _step("search", "s0"),
    _step("map", "s1"),
    _step("map", "s2"),
    _step("map", "s3"),
    _step("search", "s4", {"limit": (0, "")}, piped=True),
    _step("search", "s5", {"limit": (1, "")}, piped=True),
    _step("search", "s6", {"limit": (1, "")}, piped=True),
    _step("map", "s7"),
    _step("map", "s8", piped=True),
]
LOOKALIKES_READING_ONE_STEP_TWICE = [
    _step("search", "s0"),
    _step("search", "s1"),
    _step("search", "s2", {"limit": (0, "")}, piped=True),
    _step("search", "s3", {"limit": (1, "")}, piped=True),
    _step("search", "s4", {"limit": (1, "")}, piped=True),
]

# A `map` removed whose block reads two alike steps, `$1` and `$3`: step 3, read only from inside
# the `map`, looked read like B's step 1, read by step 2, since a reader inside a block counted as
# itself, `search(query: $3)`, not as the `map` around it.
MAP_READING_LOOKALIKES = [
    _step("search", "s0", {"query": "1"}),
    _step("search", "s1", {"query": (0, "")}),
    _step("search", "s2", {"query": "1"}),
    _step("map", "s3", block=[_step("search", "s3", {"query": (2, "")}), _step("search", "s3", {"query": (0, "")})]),
]

# One of two `search(query: $1)` removed after a `search(query: $2)`, steps 1 and 2 alike: aligned by
# their places, the removed one's look-alike was paired with B's step 4 and, from there, step 1 with
# B's step 1, and the removed one with B's `search(query: $2)` in the same round.
LOOKALIKES_READING_ALIKE_STEPS = [
    _step("search", "s0"),
    _step("search", "s1"),
    _step("search", "s2", {"query": (1, "")}),
    _step("search", "s3", {"query": (0, "")}),
    _step("search", "s4", {"query": (0, "")}),
]

# Two steps alike but for the order of their arguments, the first removed: either is that step.
ALIKE_BUT_FOR_ARGUMENT_ORDER = [
    _step("summarize", "s0", {"text": "1", "id": "1"}),
    _step("summarize", "s1", {"id": "1", "text": "1"}),
]


@SETTINGS
@given(_model_and_index(), st.randoms(use_true_random=False))
@example((LOOKALIKES_IN_A_PIPELINE, 4), random.Random(0))
@example((LOOKALIKES_READING_ONE_STEP_TWICE, 2), random.Random(0))
@example((MAP_READING_LOOKALIKES, 3), random.Random(0))
@example((LOOKALIKES_READING_ALIKE_STEPS, 3), random.Random(0))
@example((ALIKE_BUT_FOR_ARGUMENT_ORDER, 0), random.Random(0))
def test_a_step_nobody_reads_removed_anywhere_is_one_removed_step(model_and_index, rng):
    model, index = model_and_index
    following = model[index + 1] if index + 1 < len(model) else None
    # Unread, and not the head of a pipeline that goes on: the next step would be piped another input.
    assume(
        len(model) > 1
        and index not in set().union(*map(_reads, model))
        and not (following and following["piped"] and not model[index]["piped"] and index)
    )
    a, b = render(model), render(_without(model, index), rng)
    diff = diff_plans(a, b)
    assert [change.kind for change in diff.changes] == ["removed"], (a, b)
    # That step, or one just like it: only their labels, and the order of their arguments, tell
    # identical steps apart.
    steps = _steps_written(model)
    assert steps[int(diff.changes[0].step_a) - 1] == steps[index], (a, b)


@SETTINGS
@given(plan_models(), st.data(), st.randoms(use_true_random=False))
def test_an_argument_added_to_one_step_is_one_changed_step(model, data, rng):
    index = data.draw(st.integers(0, len(model) - 1))
    changed = list(model)
    changed[index] = {**model[index], "args": {**model[index]["args"], "extra": '"new"'}}
    diff = diff_plans(render(model), render(changed, rng))
    assert [(change.kind, change.step_a, change.step_b, list(change.args)) for change in diff.changes] == [
        ("changed", str(index + 1), str(index + 1), ["extra"])
    ]
