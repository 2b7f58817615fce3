"""The cost pass: what a plan may cost before it runs.

The unit tests take one rule each. The property tests build random plans over
a random registry and compare the pass with two walks written here, simply:
`most` counts what the costliest run could spend (every list as long as it
may be, the costlier branch, no exit), and `run` plays one run with random
choices. The pass's range must hold every run, and its most must not be
below `most`'s.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

import planc
from planc.analysis.blast_radius import blast_radius
from planc.registry import registry_from_text

TOML = """
[tools.search]
params = { query = { type = "string" }, limit = { type = "integer", minimum = 1, maximum = 100, default = 20 } }
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
returns_at_most = "limit"
effects = { read_only = true, destructive = false, open_world = false }
cost = { usd = 0.001, latency_ms = 40 }

[tools.search_all]
params = { query = { type = "string" }, limit = { type = "integer" } }
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
returns_at_most = "limit"
effects = { read_only = true, destructive = false, open_world = false }

[tools.top5]
returns = { type = "array", maxItems = 5, items = { type = "object", properties = { id = { type = "string" }, notes = { type = "array" } } } }
effects = { read_only = true, destructive = false, open_world = false }

[tools.get]
params = { id = { type = "string" } }
returns = { type = "object", properties = { comments = { type = "array" } } }
effects = { read_only = true, destructive = false, open_world = false }
cost = { usd = 0.01, latency_ms = 25 }

[tools.summarize]
pipe = "items"
params = { items = { type = "array" } }
effects = { read_only = true, destructive = false, open_world = false }
cost = { usd = 0.5, latency_ms = 900 }

[tools.notify]
params = { text = { type = "string" } }
effects = { read_only = false, destructive = false, open_world = true }
cost = { latency_ms = 100 }

[tools.purge]
params = { id = { type = "string" } }
"""


@pytest.fixture(scope="module")
def registry():
    return registry_from_text(TOML, Path("planc.toml"))


def cost_of(text: str, registry=None, **budget):
    result = planc.check(text, registry=registry, **budget)
    assert not [d for d in result.diagnostics if d.is_error and d.code != "E401"], result.diagnostics
    return result


def total(text: str, registry=None) -> dict:
    return cost_of(text, registry).cost.total.to_json()


def codes(result) -> list[tuple[str, str]]:
    return [(d.code, d.span.text(result.source)) for d in result.diagnostics]


# --- bounds of map, filter and reduce -----------------------------------------------------


def test_map_over_a_literal_list_runs_its_block_once_per_item(registry):
    assert total('map(over: ["a", "b", "c"], do: { get(id: item) })', registry)["calls"] == [3, 3]


def test_a_literal_limit_bounds_the_block_by_returns_at_most(registry):
    cost = total('search(query: "x", limit: 50) |> map(do: { get(id: item.id) })', registry)
    assert cost["calls"] == [1, 51]
    assert cost["usd"] == [0.001, 0.501]


@pytest.mark.parametrize(
    "text, most",
    [
        ('search(query: "x") |> map(do: { get(id: item.id) })', 21),  # the default of `limit`
        ('search(query: "x", limit: $args.n) |> map(do: { get(id: item.id) })', 101),  # its maximum
        ('search(query: "x", limit: 7)\nmap(over: $1, do: { get(id: item.id) })', 8),  # a reference to the step
        ('search(query: "x", limit: 7) |> filter(where: item.id != "a") |> map(do: { get(id: item.id) })', 8),
        ('search(query: "x", limit: 7) |> map(do: { reshape(value: item) }) |> map(do: { get(id: item.id) })', 8),
    ],
)
def test_the_bound_of_returns_at_most_without_a_literal(registry, text, most):
    assert total(text, registry)["calls"] == [1, most]


def test_max_items_of_the_lists_type_bounds_the_block(registry):
    assert total("top5() |> reduce(do: { get(id: item.id) })", registry)["calls"] == [1, 6]
    assert total("top5()\nmap(over: $1[0].notes, do: { get(id: item) })", registry)["calls"][1] == "unbounded"


def test_map_runs_concurrency_items_at_once_on_the_critical_path(registry):
    cost = total('map(over: [1, 2, 3, 4, 5], concurrency: 2, do: { get(id: "{item}") })', registry)
    assert cost["latency_ms"] == {"sequential": [125, 125], "critical_path": [75, 75]}


# --- W500 and unbounded -------------------------------------------------------------------


def test_an_unbounded_fan_out_is_w500_at_the_step_and_has_no_most(registry):
    result = cost_of('search_all(query: "x") |> map(do: { get(id: item.id) })', registry)
    assert codes(result) == [("W500", "map")]
    (warning,) = result.diagnostics
    assert warning.step == "2" and "`limit` of `search_all` bounds its result" in warning.hints[0]
    cost = result.cost.total.to_json()
    assert cost["calls"] == [1, "unbounded"] and cost["usd"] == [0.0, "unbounded"]
    assert cost["latency_ms"]["sequential"] == [0, "unbounded"]


@pytest.mark.parametrize(
    "text",
    [
        'search_all(query: "x") |> filter(infer: "Is {item.id} new?")',
        'get(id: "a")\nreduce(over: $1.comments, do: { notify(text: "{item}") })',
    ],
)
def test_filter_with_infer_and_reduce_are_unbounded_too(registry, text):
    assert [code for code, _ in codes(cost_of(text, registry))] == ["W500"]


@pytest.mark.parametrize(
    "text",
    [
        'search_all(query: "x") |> filter(where: item.id != "a")',
        'search_all(query: "x") |> map(do: { reshape(value: item.id) })',
    ],
)
def test_a_free_block_over_an_unbounded_list_is_no_warning(registry, text):
    assert cost_of(text, registry).diagnostics == ()


def test_a_list_planc_knows_nothing_of_is_unbounded_but_unwarned(registry):
    result = cost_of("a() |> map(do: { b() }) |> map(do: { c() })")  # no registry: no tool is known
    assert result.diagnostics == () and result.cost.total.to_json()["calls"] == [1, "unbounded"]
    unknown = planc.check('serch(query: "x") |> map(do: { get(id: item.id) })', registry=registry)
    assert [d.code for d in unknown.diagnostics] == ["E200"]


def test_a_known_type_without_max_items_warns_without_a_registry_too():
    text = (
        'agent(prompt: "p", output_schema: {type: "object", properties: {ids: {type: "array"}}})\n'
        "map(over: $1.output.ids, do: { get(id: item) })"
    )
    assert [code for code, _ in codes(cost_of(text))] == ["W500"]


# --- decide, agent, infer, exit -----------------------------------------------------------


def test_decide_takes_the_least_and_the_most_of_its_branches(registry):
    text = 'decide(when: true, then: { search(query: "a", limit: 1) |> summarize() }, else: { notify(text: "no") })'
    cost = total(text, registry)
    assert cost["calls"] == [1, 2] and cost["usd"] == [0.0, 0.501]
    assert cost["latency_ms"]["sequential"] == [100, 940]
    assert total('decide(when: true, then: { notify(text: "x") })', registry)["calls"] == [0, 1]


def test_infer_costs_an_inference_per_evaluation(registry):
    assert total('map(over: [1, 2, 3], do: { reshape(value: item) }) |> filter(infer: "Keep {item}?")', registry)[
        "inferences"
    ] == [3, 3]
    assert total('decide(infer: "Now?", then: { notify(text: "x") })', registry)["inferences"] == [1, 1]
    assert total('exit(infer: "Done?")', registry)["inferences"] == [1, 1]
    assert total("filter(over: [1, 2], where: item > 1)", registry) == total("reshape(value: 1)", registry)


def test_an_agent_makes_up_to_max_iterations_inferences_and_calls(registry):
    cost = total('agent(prompt: "p", output_schema: {type: "object"}, tools: ["get", "search"])', registry)
    assert cost["inferences"] == [1, 9] and cost["calls"] == [0, 8]  # 8 rounds, and the repair role's one fix-up
    assert cost["usd"] == [0.0, 0.08] and cost["latency_ms"]["sequential"] == [0, 320]
    cost = total('agent(prompt: "p", output_schema: {type: "object"}, tools: ["s*"], max_iterations: 3)', registry)
    assert cost["inferences"] == [1, 4] and cost["usd"] == [0.0, 1.5]  # summarize, the costliest
    assert total('agent(prompt: "p", output_schema: {type: "object"})')["calls"] == [0, 8]


def test_a_check_is_called_up_to_repairs_plus_one_times_and_each_repair_adds_a_round(registry):
    text = 'agent(prompt: "p", output_schema: {type: "object"}, tools: ["get"], max_iterations: 3, check: "summarize"REPAIRS)'
    cost = total(text.replace("REPAIRS", ""), registry)  # two repairs by default
    assert cost["inferences"] == [1, 6] and cost["calls"] == [0, 8]  # 5 rounds of `get`, 3 checks
    assert cost["usd"] == [0.0, 0.05 + 1.5]
    cost = total(text.replace("REPAIRS", ", repairs: 0"), registry)
    assert cost["inferences"] == [1, 4] and cost["calls"] == [0, 4] and cost["usd"] == [0.0, 0.53]


def test_a_continuing_turn_costs_its_own_rounds(registry):
    text = (
        'a = agent(prompt: "p", output_schema: {type: "object"}, tools: ["get"], max_iterations: 2)\n'
        'agent(prompt: "q", output_schema: {type: "object"}, continue: $a, max_iterations: 3)'
    )
    cost = cost_of(text, registry)
    first, second = (cost.cost.steps[step].to_json() for step in cost.plan.pipelines[0].steps + cost.plan.pipelines[1].steps)
    assert (first["inferences"], first["calls"]) == ([1, 3], [0, 2])
    assert (second["inferences"], second["calls"], second["usd"]) == ([1, 4], [0, 3], [0.0, 0.03])  # `get`, not `*`


def test_reshape_and_ask_are_free(registry):
    assert total('ask(question: "Which team?")\nreshape(value: {team: $1})', registry) == {
        "calls": [0, 0],
        "inferences": [0, 0],
        "usd": [0.0, 0.0],
        "latency_ms": {"sequential": [0, 0], "critical_path": [0, 0]},
    }


def test_a_tool_without_a_declared_cost_is_free_but_still_a_call(registry):
    cost = total('purge(id: "a")', registry)
    assert cost["calls"] == [1, 1] and cost["usd"] == [0.0, 0.0] and cost["latency_ms"]["sequential"] == [0, 0]


def test_steps_after_a_possible_exit_may_not_run(registry):
    text = 'get(id: "a")\nexit(when: $1.comments == [])\nnotify(text: "x")\nmap(over: [1, 2], do: { get(id: "b") })'
    assert total(text, registry)["calls"] == [1, 4]
    inside = 'map(over: [1, 2, 3], do: { get(id: "b")\nexit(when: true) })'
    assert total(inside, registry)["calls"] == [1, 3]


# --- the critical path --------------------------------------------------------------------


def test_independent_reads_overlap_on_the_critical_path_and_effects_keep_their_order(registry):
    reads = 'get(id: "a")\nget(id: "b")\nsearch(query: "x", limit: 1)'
    assert total(reads, registry)["latency_ms"] == {"sequential": [90, 90], "critical_path": [40, 40]}
    piped = 'search(query: "x", limit: 1) |> summarize()\nget(id: "b")'
    assert total(piped, registry)["latency_ms"]["critical_path"] == [940, 940]
    effect = 'get(id: "a")\nnotify(text: "x")\nget(id: "b")'
    assert total(effect, registry)["latency_ms"]["critical_path"] == [150, 150]


def test_each_step_has_its_own_cost_and_a_step_in_a_block_one_run(registry):
    result = cost_of('search(query: "x", limit: 4) |> map(do: { get(id: item.id) })', registry)
    by_path = {result.resolution.paths[step]: cost.to_json()["calls"] for step, cost in result.cost.steps.items()}
    assert by_path == {"1": [1, 1], "2": [0, 4], "2/do.1": [1, 1]}


# --- budgets: E401 ------------------------------------------------------------------------

PLAN = 'notify(text: "start")\nsearch(query: "x", limit: 10) |> map(do: { get(id: item.id) })\nnotify(text: "{$3}")'


@pytest.mark.parametrize(
    "budget, message",
    [
        ({"max_calls": 5}, "over budget: the plan may make up to 13 tool calls, and `--max-calls` is 5"),
        ({"max_usd": 0.05}, "over budget: the plan may cost up to $0.101, and `--max-usd` is 0.05"),
    ],
)
def test_a_budget_below_the_most_is_e401_at_the_step_that_crosses_it(registry, budget, message):
    result = cost_of(PLAN, registry, **budget)
    (error,) = result.diagnostics
    assert (error.code, error.message, error.step) == ("E401", message, "3")
    assert error.span.text(PLAN) == "map(do: { get(id: item.id) })"


def test_a_budget_of_inferences(registry):
    text = 'reshape(value: [1, 2, 3])\nfilter(over: $1, infer: "Keep {item}?")'
    (error,) = cost_of(text, registry, max_inferences=2).diagnostics
    assert error.code == "E401" and error.step == "2" and "3 model inferences" in error.message
    assert cost_of(text, registry, max_inferences=3).diagnostics == ()


def test_a_budget_the_most_reaches_exactly_is_not_exceeded(registry):
    assert cost_of(PLAN, registry, max_calls=13, max_usd=0.101, max_inferences=0).diagnostics == ()


def test_an_unbounded_most_exceeds_every_budget(registry):
    text = 'search_all(query: "x") |> map(do: { get(id: item.id) }) |> filter(infer: "Keep {item}?")'
    result = cost_of(text, registry, max_calls=10**9, max_usd=10**9, max_inferences=10**9)
    # calls and dollars cross at the map, inferences at the filter
    assert [code for code, _ in codes(result)] == ["W500", "E401", "E401", "W500", "E401"]
    assert all("has no upper bound" in d.message for d in result.diagnostics if d.code == "E401")


# --- blast radius ---------------------------------------------------------------------------


def test_the_blast_radius_lists_effectful_destructive_and_open_world_steps(registry):
    text = (
        'get(id: "a")\ndecide(when: true, then: { purge(id: "a") })\nnotify(text: "x")\n'
        'agent(prompt: "p", output_schema: {type: "object"}, tools: ["get", "search"])\n'
        'agent(prompt: "p", output_schema: {type: "object"}, tools: ["notify"])'
    )
    radius = blast_radius(cost_of(text, registry).resolution, registry)
    assert radius.effectful == (("2/then.1", "purge"), ("3", "notify"), ("5", "agent"))
    assert radius.destructive == (("2/then.1", "purge"),)
    assert radius.open_world == (("2/then.1", "purge"), ("3", "notify"), ("5", "agent"))


# --- the property: no run costs more than the most -------------------------------------------


@dataclass
class ToolSpec:
    name: str
    pipe: bool
    returns_list: bool
    max_items: int | None
    at_most: bool  # `returns_at_most = "limit"`
    maximum: int | None
    default: int | None
    read_only: bool
    usd: float | None

    def longest(self, limit) -> float:
        """The most items a call with this `limit` ("args": only known at run time) may return."""
        bounds = [] if self.max_items is None else [self.max_items]
        if self.at_most:
            if limit == "args":
                value = self.maximum
            elif limit is None:
                value = self.default if self.default is not None else self.maximum
            else:
                value = limit
            bounds += [] if value is None else [value]
        return min(bounds, default=math.inf)


@dataclass
class PlanSpec:
    """A plan declared under `[plans.NAME]`, which agents may call as the tool `plan__NAME`."""

    name: str
    pipelines: list

    @property
    def tool(self) -> str:
        return f"plan__{self.name}"


@dataclass
class StepSpec:
    kind: str  # call, map, filter_do, filter_infer, filter_where, reduce, decide, agent, exit
    tool: ToolSpec | None = None
    limit: int | str | None = None
    over: tuple = ()  # ("literal", n), ("ref", step number) or ("pipe",)
    body: list = field(default_factory=list)  # pipelines: lists of StepSpec
    other: list | None = None  # a decide's else
    infer: bool = False
    concurrency: int | None = None
    agent_tools: list | None = None  # names; None: every tool
    iterations: int | None = None

    @property
    def makes_list(self) -> bool:
        return self.kind in ("map", "filter_do", "filter_infer", "filter_where") or (
            self.kind == "call" and self.tool.returns_list
        )


def render_registry(tools: list[ToolSpec], declared: list[PlanSpec] = (), folder: Path | None = None) -> str:
    """planc.toml for `tools` and the `declared` plans, whose files are written in `folder`."""
    out = []
    for plan in declared:
        (folder / f"{plan.name}.plan").write_text(render(plan.pipelines), encoding="utf-8")
        out += [f"[plans.{plan.name}]", f'file = "{plan.name}.plan"', 'params = { n = { type = "integer" } }', ""]
    for tool in tools:
        limit = {"type": "integer", "minimum": 0}
        limit.update({key: value for key, value in (("maximum", tool.maximum), ("default", tool.default)) if value is not None})
        params = {"limit": limit, **({"items": {"type": "array"}} if tool.pipe else {})}
        returns = (
            {"type": "array", **({"maxItems": tool.max_items} if tool.max_items is not None else {})}
            if tool.returns_list
            else {"type": "object"}
        )
        out += [
            f"[tools.{tool.name}]",
            f"params = {_toml(params)}",
            f"returns = {_toml(returns)}",
            f"effects = {{ read_only = {str(tool.read_only).lower()} }}",
        ]
        out += ['pipe = "items"'] if tool.pipe else []
        out += ['returns_at_most = "limit"'] if tool.at_most else []
        out += [f"cost = {{ usd = {tool.usd} }}"] if tool.usd is not None else []
        out.append("")
    return "\n".join(out)


def _toml(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + " }"
    return f'"{value}"' if isinstance(value, str) else str(value)


def render(pipelines) -> str:
    return "\n".join(" |> ".join(render_step(step) for step in pipeline) for pipeline in pipelines)


def render_step(step: StepSpec) -> str:
    args = []
    if step.kind == "call":
        if step.limit is not None:
            args.append(f"limit: {'$args.n' if step.limit == 'args' else step.limit}")
        return f"{step.tool.name}({', '.join(args)})"
    if step.over and step.over[0] == "literal":
        args.append(f"over: [{', '.join(str(n) for n in range(step.over[1]))}]")
    elif step.over and step.over[0] == "ref":
        args.append(f"over: ${step.over[1]}")
    if step.concurrency is not None:
        args.append(f"concurrency: {step.concurrency}")
    if step.kind in ("map", "reduce", "filter_do"):
        args.append(f"do: {{ {render(step.body)} }}")
    name = {"filter_do": "filter", "filter_infer": "filter", "filter_where": "filter"}.get(step.kind, step.kind)
    if step.kind == "filter_infer":
        args.append('infer: "Keep {item}?"')
    elif step.kind == "filter_where":
        args.append("where: item != null")
    elif step.kind in ("decide", "exit"):
        args.append('infer: "Now?"' if step.infer else "when: true")
        if step.kind == "decide":
            args.append(f"then: {{ {render(step.body)} }}")
            if step.other is not None:
                args.append(f"else: {{ {render(step.other)} }}")
    elif step.kind == "agent":
        args += ['prompt: "Go"', 'output_schema: {type: "object"}']
        if step.agent_tools is not None:
            args.append(f"tools: [{', '.join(f'{chr(34)}{name}{chr(34)}' for name in step.agent_tools)}]")
        if step.iterations is not None:
            args.append(f"max_iterations: {step.iterations}")
    return f"{name}({', '.join(args)})"


@st.composite
def tool_specs(draw, name: str) -> ToolSpec:
    returns_list = draw(st.booleans())
    maximum = draw(st.none() | st.integers(0, 6))
    return ToolSpec(
        name,
        pipe=draw(st.booleans()),
        returns_list=returns_list,
        max_items=draw(st.none() | st.integers(0, 5)) if returns_list else None,
        at_most=returns_list and draw(st.booleans()),
        maximum=maximum,
        default=draw(st.none() | st.integers(0, 6 if maximum is None else maximum)),
        read_only=draw(st.booleans()),
        usd=draw(st.sampled_from([None, 0.0, 0.01, 0.25])),
    )


@st.composite
def plans(draw):
    """Tools, the plans declared beside them (whose agents call tools), and a plan whose agents may call
    both."""
    tools = [draw(tool_specs(f"t{number}")) for number in range(draw(st.integers(1, 4)))]
    # A declared plan's agents name their tools: one offered every tool could call its own plan again.
    declared = [PlanSpec(f"p{number}", draw(_steps(tools, None))) for number in range(draw(st.integers(0, 2)))]
    return tools, draw(_steps(tools, declared)), declared


@st.composite
def _steps(draw, tools, declared):
    top: list = []  # top-level steps in order: what `$n` reads
    return [draw(_pipeline(tools, top, 0, declared)) for _ in range(draw(st.integers(1, 4)))]


@st.composite
def _pipeline(draw, tools, top, depth, declared):
    """A step, and maybe a step that takes its result from the pipe; top-level steps join `top`."""
    head = draw(_step(tools, top, depth, False, declared))
    pipeline = [head]
    if head.makes_list and draw(st.booleans()):
        pipeline.append(draw(_step(tools, top, depth, True, declared)))
    if depth == 0:
        top.extend(pipeline)
    return pipeline


@st.composite
def _block(draw, tools, top, depth, declared):
    return [draw(_pipeline(tools, top, depth + 1, declared)) for _ in range(draw(st.integers(1, 2)))]


@st.composite
def _step(draw, tools, top, depth, piped, declared):
    kinds = ["call", "map", "filter_do", "filter_infer", "filter_where", "reduce"]
    if not piped:
        kinds += ["decide", "agent", "exit"]
    if depth >= 2:
        kinds = [kind for kind in kinds if kind in ("call", "filter_infer", "filter_where", "agent", "exit")]
    kind = draw(st.sampled_from(kinds))
    if kind == "call":
        choices = [tool for tool in tools if tool.pipe or not piped]
        if not choices:
            kind = "filter_where"
        else:
            tool = draw(st.sampled_from(choices))
            limits = [None, "args", *range(0, (6 if tool.maximum is None else tool.maximum) + 1)]
            return StepSpec("call", tool=tool, limit=draw(st.sampled_from(limits)))
    step = StepSpec(kind)
    if kind in ("map", "filter_do", "filter_infer", "filter_where", "reduce"):
        refs = [("ref", number) for number, earlier in enumerate(top, start=1) if earlier.makes_list]
        literals = st.integers(0, 4).map(lambda n: ("literal", n))
        step.over = ("pipe",) if piped else draw(st.sampled_from(refs) | literals if refs else literals)
    if kind in ("map", "filter_do", "reduce"):
        step.body = draw(_block(tools, top, depth, declared))
    if kind == "map":
        step.concurrency = draw(st.none() | st.integers(1, 3))
    if kind == "decide":
        step.infer = draw(st.booleans())
        step.body = draw(_block(tools, top, depth, declared))
        step.other = draw(st.none() | _block(tools, top, depth, declared))
    if kind == "exit":
        step.infer = draw(st.booleans())
    if kind == "agent":
        names = [tool.name for tool in tools] + [plan.tool for plan in declared or ()]
        named = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True) | st.just(["t*"])
        step.agent_tools = draw(named if declared is None else st.none() | named)
        step.iterations = draw(st.none() | st.integers(1, 4))
    return step


@dataclass
class Spent:
    calls: float = 0
    inferences: float = 0
    usd: float = 0

    def add(self, other: Spent, times: float = 1) -> None:
        for name in ("calls", "inferences", "usd"):
            each = getattr(other, name)
            setattr(self, name, getattr(self, name) + (0 if each == 0 or times == 0 else each * times))


def _matched(step: StepSpec, tools: list[ToolSpec], declared: list[PlanSpec]) -> list:
    """The tools and declared plans the agent `step` may call."""
    if step.agent_tools == ["t*"]:
        return tools
    every = [*tools, *declared]
    if step.agent_tools is None:
        return every
    return [tool for tool in every if getattr(tool, "tool", tool.name) in step.agent_tools]


def _one_call(called, tools) -> Spent:
    """What one call of a tool costs, or the most one run of a declared plan may spend."""
    if isinstance(called, PlanSpec):
        return most(called.pipelines, tools, {}, top=True)
    return Spent(1, 0, called.usd or 0)


def most(pipelines, tools, top_lengths: dict, top: bool, declared=()) -> Spent:
    """What the costliest run of `pipelines` could spend: every list at its longest, no exit.

    `top_lengths` holds the longest result of each top-level step, by number, for `$n`; `declared` are
    the plans an agent may call.
    """
    spent = Spent()
    for pipeline in pipelines:
        length = None
        for step in pipeline:
            length = _most_step(step, tools, top_lengths, length, spent, declared)
            if top:
                top_lengths[len(top_lengths) + 1] = length
    return spent


def _over_length(step: StepSpec, top_lengths, piped_length):
    kind, *rest = step.over
    return rest[0] if kind == "literal" else top_lengths[rest[0]] if kind == "ref" else piped_length


def _most_step(step: StepSpec, tools, top_lengths, piped_length, spent: Spent, declared):
    if step.kind == "call":
        spent.add(Spent(1, 0, step.tool.usd or 0))
        return step.tool.longest(step.limit) if step.tool.returns_list else None
    if step.kind == "decide":
        then = most(step.body, tools, top_lengths, False, declared)
        other = most(step.other or [], tools, top_lengths, False, declared)
        spent.add(
            Spent(max(then.calls, other.calls), max(then.inferences, other.inferences) + step.infer, max(then.usd, other.usd))
        )
        return None
    if step.kind == "exit":
        spent.add(Spent(0, int(step.infer), 0))
        return None
    if step.kind == "agent":
        rounds = step.iterations or 8
        calls = [_one_call(called, tools) for called in _matched(step, tools, declared)]
        worst = Spent(*(max((getattr(call, name) for call in calls), default=0) for name in ("calls", "inferences", "usd")))
        spent.add(Spent(0, rounds + 1, 0))  # its rounds, and the repair role's fix-up
        spent.add(worst, times=rounds)
        return None
    length = _over_length(step, top_lengths, piped_length)
    if step.kind == "filter_infer":
        spent.add(Spent(0, 1, 0), times=length)
    elif step.kind != "filter_where":
        spent.add(most(step.body, tools, top_lengths, False, declared), times=length)
    return None if step.kind == "reduce" else length


class Exited(Exception):
    """An `exit` ended the run."""


def run(pipelines, tools, top_lengths: dict, draw, spent: Spent, top: bool, declared=()) -> None:
    """One run of `pipelines` with random choices: list lengths, branches, exits, agent rounds."""
    for pipeline in pipelines:
        length = None
        for step in pipeline:
            length = _run_step(step, tools, top_lengths, length, draw, spent, declared)
            if top:
                top_lengths[len(top_lengths) + 1] = length


def _run_step(step: StepSpec, tools, top_lengths, piped_length, draw, spent: Spent, declared):
    if step.kind == "call":
        spent.add(Spent(1, 0, step.tool.usd or 0))
        return draw(st.integers(0, min(step.tool.longest(step.limit), 4))) if step.tool.returns_list else None
    if step.kind == "decide":
        spent.add(Spent(0, int(step.infer), 0))
        branch = step.body if draw(st.booleans()) else step.other or []
        run(branch, tools, top_lengths, draw, spent, False, declared)
        return None
    if step.kind == "exit":
        spent.add(Spent(0, int(step.infer), 0))
        if draw(st.booleans()):
            raise Exited
        return None
    if step.kind == "agent":
        matched = _matched(step, tools, declared)
        rounds = draw(st.integers(1, step.iterations or 8))
        spent.add(Spent(0, rounds + int(draw(st.booleans())), 0))  # and maybe the repair role's fix-up
        for _ in range(rounds if matched else 0):
            if not draw(st.booleans()):  # this round calls no tool
                continue
            called = draw(st.sampled_from(matched))
            if isinstance(called, ToolSpec):
                spent.add(Spent(1, 0, called.usd or 0))
                continue
            try:  # an exit in a declared plan ends that plan, and the agent goes on
                run(called.pipelines, tools, {}, draw, spent, True)
            except Exited:
                pass
        return None
    length = _over_length(step, top_lengths, piped_length)
    kept = 0
    for _ in range(length):
        if step.kind == "filter_infer":
            spent.add(Spent(0, 1, 0))
        elif step.kind != "filter_where":
            run(step.body, tools, top_lengths, draw, spent, False, declared)
        kept += draw(st.booleans()) if step.kind.startswith("filter") else 1
    return None if step.kind == "reduce" else kept


PROPERTY = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def checked(tools, pipelines, declared):
    """The check of `pipelines` against `tools` and the `declared` plans (written to a folder of their own)."""
    with tempfile.TemporaryDirectory(prefix="planc-cost-") as folder:
        registry = registry_from_text(render_registry(tools, declared, Path(folder)), Path(folder) / "planc.toml")
        return planc.check(render(pipelines), registry=registry)


@PROPERTY
@given(plans())
def test_the_most_is_never_below_what_the_costliest_run_spends(plan):
    tools, pipelines, declared = plan
    text = render(pipelines)
    result = checked(tools, pipelines, declared)
    assert not [d for d in result.diagnostics if d.is_error], (text, result.diagnostics)
    cost = result.cost.total
    worst = most(pipelines, tools, {}, True, declared)
    assert cost.calls.high >= worst.calls, text
    assert cost.inferences.high >= worst.inferences, text
    assert cost.usd.high >= worst.usd - 1e-9, text
    if math.inf in (worst.calls, worst.inferences):
        assert "W500" in [d.code for d in result.diagnostics] + [
            d.code for plan in result.context.plans.values() for d in plan.diagnostics
        ], text


@PROPERTY
@given(plans(), st.data())
def test_every_run_spends_within_the_range(plan, data):
    tools, pipelines, declared = plan
    text = render(pipelines)
    cost = checked(tools, pipelines, declared).cost.total
    spent = Spent()
    try:
        run(pipelines, tools, {}, data.draw, spent, True, declared)
    except Exited:
        pass
    assert cost.calls.low <= spent.calls <= cost.calls.high, text
    assert cost.inferences.low <= spent.inferences <= cost.inferences.high, text
    assert cost.usd.low - 1e-9 <= spent.usd <= cost.usd.high + 1e-9, text


def test_the_property_covers_agents_that_call_declared_plans():
    """The plans the properties draw include agents offered declared plans that spend inferences."""
    tools = [ToolSpec("t0", False, False, None, False, None, None, True, 0.01)]
    inner = PlanSpec("p0", [[StepSpec("filter_infer", over=("literal", 2))]])
    agent = StepSpec("agent", agent_tools=["plan__p0"], iterations=2)
    cost = checked(tools, [[agent]], [inner]).cost.total
    assert (cost.inferences.low, cost.inferences.high) == (1, 3 + 2 * 2)
    assert most([[agent]], tools, {}, True, [inner]).inferences == 7
