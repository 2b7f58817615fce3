"""The check over-approximates where values came from, and never misses: for random plans over tools with
random labels, the labels every call carries at run time (each argument's, and its control's) are a subset
of those the check computed for the same step, and a call the check let through with its labels is never
refused for them at run time. (test_noninterference.py holds the same property, `flow_checks.py`, over the
plans its own generator makes: loops, agents, declared plans, schemas with `$ref`.)"""

from __future__ import annotations

import json

import pytest
from flow_checks import assert_within_check
from tool_project import tool_project

TOOLS = """
def source(n):
    return {"x": f"text {n}", "n": n, "items": list(range(n % 4)), "flag": n % 2 == 0,
            "rows": [{"memo": f"m{n}", "n": n}, {"memo": "z", "n": n + 1}, {"memo": "a", "n": n % 3}]}


def echo(v):
    return v


def sink(v):
    return {"ok": True}
"""

SHAPE = (
    '{{ type = "object", properties = {{ x = {{ type = "string"{x_labels} }}, n = {{ type = "integer" }}, '
    'items = {{ type = "array", items = {{ type = "integer" }} }}, flag = {{ type = "boolean" }}, '
    'rows = {{ type = "array", items = {{ type = "object", properties = {{ memo = {{ type = "string", x-labels = ["x"] }}, '
    'n = {{ type = "integer" }} }} }} }} }} }}'
)


def toml(module: str, labels: dict[str, list[str]]) -> str:
    """Three sources with the labels `labels` gives them (`s3`'s `x` labelled `x` as well, and every source's rows'
    `memo`), a helper and a sink."""
    tables = []
    for name, declared in labels.items():
        x_labels = ', x-labels = ["x"]' if name == "s3" else ""
        tables.append(
            f'[tools.{name}]\nprovider = "python:{module}:source"\nparams = {{ n = {{ type = "integer" }} }}\n'
            f"returns = {SHAPE.format(x_labels=x_labels)}\nlabels = {json.dumps(declared)}\n"
            "effects = { read_only = true }\n"
        )
    tables.append(
        f'[tools.echo]\nprovider = "python:{module}:echo"\nparams = {{ v = {{}} }}\npipe = "v"\n'
        "labels = []\neffects = { read_only = true }\n"
    )
    tables.append(f'[tools.sink]\nprovider = "python:{module}:sink"\nparams = {{ v = {{}} }}\npipe = "v"\nlabels = []\n')
    return "\n".join(tables)


@pytest.fixture(scope="module")
def tools_module(tmp_path_factory):
    """The tools, as a module importable while the test runs."""
    import sys

    folder = tmp_path_factory.mktemp("flowprop")
    with tool_project(folder, "flowproptools", TOOLS, "") as module:
        sys.path.insert(0, str(folder))
        try:
            yield folder, module
        finally:
            sys.path.remove(str(folder))


def _step(draw, st, number: int, sources: list[int]) -> str:
    """One top-level step that reads earlier steps: the sources (`$sK` with K in `sources`, into their parts)
    and any other step (whole)."""

    def ref():
        k = draw(st.integers(1, number - 1))
        if k not in sources:
            return f"$s{k}"
        return f"$s{k}" + draw(st.sampled_from(["", ".x", ".n", ".items", ".flag"]))

    kind = draw(
        st.sampled_from(
            [
                "echo",
                "sink",
                "pipe",
                "pure",
                "pure over",
                "template",
                "list",
                "map",
                "filter",
                "reduce",
                "decide",
                "exit",
                "reshape",
                "kept",
                "index",
                "length",
            ]
        )
    )
    if kind == "echo":
        return f"echo(v: {ref()})"
    if kind == "sink":
        return f"sink(v: {ref()})"
    if kind == "pipe":
        return f"echo(v: {ref()}) |> sink()"
    if kind == "pure":  # a pure step: its result carries its arguments' labels, and no more
        return f'upper(text: "{{{ref()}}}") |> sink()'
    if kind == "pure over":
        return f"sum(over: $s{draw(st.sampled_from(sources))}.items) |> echo()"
    if kind == "template":
        return f'sink(v: "about {{{ref()}}}")'
    if kind == "list":
        return f'sink(v: [{ref()}, {{k: {ref()}}}, "plain"])'
    k = draw(st.sampled_from(sources))
    if kind == "kept":  # steps that keep some of a list's items: their fields' labels, and what chose them
        kept = draw(
            st.lists(
                st.sampled_from(
                    [
                        "filter({over}where: n > 1)",
                        'filter({over}where: memo == "z")',
                        'sort({over}field: "memo")',
                        'sort({over}field: "n", descending: true)',
                        'unique({over}field: "memo")',
                        "take({over}count: 2)",
                        f"skip({{over}}count: $s{k}.n)",
                        "slice({value}start: 1)",
                    ]
                ),
                min_size=1,
                max_size=3,
            )
        )
        first = kept[0].format(over=f"over: $s{k}.rows, ", value=f"value: $s{k}.rows, ")
        rest = [step.format(over="", value="") for step in kept[1:]]
        field = draw(st.sampled_from(["memo", "n"]))
        return f"{' |> '.join([first, *rest])} |> map(do: {{ sink(v: item.{field}) }})"
    if kind == "map":
        return f"map(over: $s{k}.items, do: {{ sink(v: item) }})"
    if kind == "index":  # a position carries the list's own labels, and its loop's control
        return f"map(over: $s{k}.rows, do: {{ echo(v: index) |> sink() }})"
    if kind == "length":
        return f"sink(v: $s{k}.rows.length)"
    if kind == "filter":
        return f"filter(over: $s{k}.items, where: item > $s{draw(st.sampled_from(sources))}.n)"
    if kind == "reduce":
        return f"reduce(over: $s{k}.items, initial: 0, do: {{ echo(v: accumulator) }})"
    if kind == "decide":
        return f"decide(when: $s{k}.flag, then: {{ sink(v: {ref()}) }}, else: {{ echo(v: {ref()}) |> sink() }})"
    if kind == "exit":
        return f"exit(when: $s{k}.n > 100)"
    return f"reshape(value: {{a: {ref()}}})"


def test_run_time_labels_are_within_what_the_check_computed(tools_module):
    import asyncio

    from hypothesis import given, settings
    from hypothesis import strategies as st
    from profiles import examples

    from planc.backend.calls.hooks import Hooks, Proceed
    from planc.backend.run.interpreter import run_plan
    from planc.passes.check import check
    from planc.registry.loading.config import registry_from_text

    label_names = st.lists(st.sampled_from(["untrusted", "private", "pii"]), max_size=2, unique=True)

    @st.composite
    def plans(draw):
        lines, sources = [], []
        for number in range(1, draw(st.integers(1, 3)) + 1):  # the sources first, then the steps that read them
            tool = draw(st.sampled_from(["s1", "s2", "s3"]))
            lines.append(f"s{number} = {tool}(n: {draw(st.integers(0, 9))})")
            sources.append(number)
        for number in range(len(sources) + 1, len(sources) + draw(st.integers(1, 6)) + 1):
            lines.append(f"s{number} = " + _step(draw, st, number, sources))
        return "\n".join(lines) + "\n"

    @settings(max_examples=examples(150))
    @given(st.fixed_dictionaries({"s1": label_names, "s2": label_names, "s3": label_names}), plans())
    def prop(labels, text):
        folder, module = tools_module
        registry = registry_from_text(toml(module, labels), folder / "planc.toml")
        checked = check(text, registry=registry)
        assert checked.ok, [d.message for d in checked.diagnostics]
        seen = []

        async def gate(call):
            seen.append(call)
            return Proceed()

        asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(gate=gate)))
        for call in seen:
            assert_within_check(checked, call.step, call.sources, call.control, text)

    prop()
