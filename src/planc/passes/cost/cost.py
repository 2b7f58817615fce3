"""Cost: what a plan may cost before it runs, per step and in total, as ranges [least, most].

Counted: tool calls, model inferences, dollars and latency (the sequential
sum, and the critical path). A tool call costs its declared `cost` (nothing
when it declares none, but it is still a call). Control steps are free
themselves, and the pure steps (`sum`, `split`, ...) are free; what control steps run is not:

- `map`, `filter` (with `do`) and `reduce` run their block once per item, as
  many times as the list may have items (`list_bounds.py`); `map` runs up to
  `concurrency` items at once, so its critical path is one per wave.
- A call of a tool whose MCP server may sample a model (`[mcp.NAME] sampling`)
  costs up to its `samples_per_call` inferences too.
- `filter`, `decide` and `exit` with `infer` cost one inference per
  evaluation (per item for `filter`).
- `decide` costs its condition and then one of its branches: the least of
  the branches' least, the most of their most.
- `agent` makes 1 to `max_iterations` rounds (default 8), one inference
  each, and one more inference when its answer needs the `repair` role's
  fix-up; an inference of a priced model (`[models.ROLE]`
  `input_usd_per_million`, `output_usd_per_million`) costs up to its prompt
  as written (a byte a token) and `max_tokens` out, and has no bound without
  `max_tokens`; and, one per round, up to `max_iterations` calls of the tools it
  may call (the costliest of them each time: a declared plan costs what its
  own plan may cost). With a `check`, it calls the check up to `repairs + 1`
  times, and each repair adds a round. A step that continues a conversation
  costs its own turn: the turns before it are counted at their own steps.
- After a step that may `exit`, the steps that follow may not run: their
  least is nothing.

- W500: `map`, `filter` or `reduce` spends calls or inferences per item of a
  list with no known bound; the most is then unbounded. Not for a list planc
  knows nothing of (from a tool it does not know, of an unknown type): as
  with types, the unknown passes.
- E401: the most exceeds a budget of the check (`budget.py`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import attrs

from planc.analysis.agent_tools import agent_check_tool, agent_effects, agent_tools
from planc.analysis.literals import literal_value
from planc.analysis.reads import reads
from planc.diagnostics import Diagnostic, sort_key
from planc.diagnostics.build import diagnostic
from planc.passes.context import CheckContext
from planc.passes.cost.budget import over_budget
from planc.passes.cost.cost_range import UNBOUNDED, CostRange, Range
from planc.passes.cost.list_bounds import ListBounds, largest_argument
from planc.registry.settings.declarations import DEFAULT_MODEL_ROLE
from planc.registry.steps.builtins import CONTROL_DECLARATIONS, CONTROL_STEPS
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution
    from planc.passes.types.types import Typing
    from planc.registry.tools.tool import Tool

ONE = Range(1, 1)
NO_BOUND = CostRange(*(Range(0, UNBOUNDED) for _ in range(5)))
REPAIR_ROLE = "repair"  # the role of an agent's one fix-up of an answer that does not fit its schema


@attrs.frozen
class CostReport:
    """What the cost pass learned: the cost of one run of each step, and of the plan.

    A step inside a block costs what one run of it costs (one item of a `map`);
    the step holding the block counts every run.
    """

    steps: dict  # Step -> CostRange
    total: CostRange


@attrs.frozen
class Run:
    """The cost of running some steps, and what their place among their siblings depends on."""

    cost: CostRange = CostRange()
    may_exit: bool = False  # an `exit` in them may end the plan
    ordered: bool = False  # they have effects or may exit: they keep their place among their siblings


def cost(plan: ast.Plan, context: CheckContext) -> tuple[CostReport, list[Diagnostic]]:
    """The cost of `plan`; uses the resolve and types passes' facts.

    >>> from planc.passes.check import check
    >>> checked = check('map(over: [1, 2, 3], do: { search(q: "{item}") })')
    >>> checked.cost.total.to_json()["calls"], checked.diagnostics
    ([3, 3], ())
    """
    resolution = context.learned("resolution")
    coster = Coster(plan, resolution, context.learned("typing"), context)
    total = coster.sequence(plan.pipelines).cost
    top = [(step, resolution.paths.get(step, ""), coster.steps[step]) for pipeline in plan.pipelines for step in pipeline.steps]
    diagnostics = coster.diagnostics + over_budget(top, context.budget)
    return CostReport(coster.steps, total), sorted(diagnostics, key=sort_key)


class Coster:
    """One walk over the plan, costing each step after the steps inside it."""

    def __init__(self, plan: ast.Plan, resolution: Resolution, typing: Typing, context: CheckContext) -> None:
        self.resolution = resolution
        self.typing = typing
        self.registry = context.registry
        self.plans = context.plans
        self.bounds = ListBounds(plan, resolution, typing)
        self.steps: dict[ast.Step, CostRange] = {}
        self.diagnostics: list[Diagnostic] = []

    def sequence(self, pipelines: Iterable[ast.Pipeline]) -> Run:
        """The cost of a plan's or a block's steps.

        Their critical path is the latest finish: a step starts when what it
        waits for has finished: the steps whose results it reads, every
        ordered step before it, and, when it is ordered itself, every step before it.
        """
        steps = [step for pipeline in pipelines for step in pipeline.steps]
        index = {step: number for number, step in enumerate(steps)}
        # what each step adds, and when it finishes at the least and the most
        counted: list[CostRange] = []
        low: list[float] = []
        high: list[float] = []
        latest: tuple[float, float] = (0, 0)  # the latest finish of all steps so far, and of the ordered ones
        after_ordered = latest
        exited = ordered = False
        for step in steps:
            run = self.step(step)
            cost = run.cost.most_only() if exited else run.cost
            if run.ordered:
                start = latest
            else:
                waits = [index[target] for target in self._waits_for(step) if target in index]
                start = (max([after_ordered[0], *(low[n] for n in waits)]), max([after_ordered[1], *(high[n] for n in waits)]))
            finish = (start[0] + cost.critical_ms.low, start[1] + cost.critical_ms.high)
            low.append(finish[0])
            high.append(finish[1])
            latest = (max(latest[0], finish[0]), max(latest[1], finish[1]))
            if run.ordered:
                after_ordered = (max(after_ordered[0], finish[0]), max(after_ordered[1], finish[1]))
            counted.append(cost)
            exited, ordered = exited or run.may_exit, ordered or run.ordered
        return Run(CostRange.total(counted).with_critical(Range(*latest)), exited, ordered)

    def _waits_for(self, step: ast.Step) -> Iterator[ast.Step]:
        """The steps whose results `step` reads: piped to it, or referenced in it or in its blocks' steps."""
        before = self.bounds.piped_from.get(step)
        if before is not None:
            yield before
        yield from reads(step, self.resolution.targets)

    def step(self, step: ast.Step) -> Run:
        tool = self.resolution.tools.get(step)
        if tool is None:
            run = Run(_call(0, 0), ordered=True)
        elif not tool.builtin:  # a declared plan keeps its place: its calls are not looked into
            run = Run(self.call_cost(tool), ordered=tool.kind == "plan" or not tool.effects.read_only)
        else:
            run = COST_RULES[tool.name](self, step)
        self.steps[step] = run.cost
        return run

    def plan_cost(self, name: str) -> CostRange:
        """What one run of the declared plan `name` may cost: its own total; no bound when it takes part
        in a cycle, or cannot be read or checked."""
        checked = self.plans.get(name)
        return checked.cost.total if checked is not None and checked.ok and checked.cost is not None else NO_BOUND

    # --- what the control steps' cost rules (their declarations, `registry/steps/`) are made of

    def run(self, cost: CostRange | None = None, may_exit: bool = False, ordered: bool = False) -> Run:
        """What a step costs itself (nothing by default), whether it may end the plan, and whether it keeps
        its place among the steps that change something."""
        return Run(CostRange() if cost is None else cost, may_exit, ordered)

    def free(self) -> CostRange:
        """Nothing: no call, no inference, no spend."""
        return CostRange()

    def waves(self, count: Range, concurrency: Range) -> Range:
        """How many waves `count` items take, `concurrency` at once: the critical path's multiplier."""
        return _waves(count, concurrency)

    def agent(self, step: ast.Step) -> Run:
        """An `agent` step's cost: its rounds, its tools' calls and its check, as the module says."""
        most = largest_argument(step, AGENT, "max_iterations", self.typing)
        check = agent_check_tool(step, self.registry)
        repairs = largest_argument(step, AGENT, "repairs", self.typing) if check is not None else 0
        # Each repair of a failed check adds a round; the repair role's one fix-up is an inference of its own.
        rounds = UNBOUNDED if most is None or repairs is None else max(1, most) + repairs
        tools = agent_tools(step, self.registry, self.resolution.targets, self.plans)
        if tools is None:  # each round may call a tool planc knows nothing of
            call = _call(0, 0)
        else:
            call = functools.reduce(CostRange.either, map(self.call_cost, tools), CostRange())
        calls = call.most_only().times(Range(0, rounds))
        checks = (
            self.call_cost(check).most_only().times(Range(0, rounds if repairs is None else repairs + 1))
            if check is not None
            else CostRange()
        )
        ordered = not agent_effects(tools, check).read_only or step.arg("continue") is not None
        model = step.arg("model")
        role = literal_value(model.value) if model is not None else AGENT.params["model"]["default"]
        role = role if isinstance(role, str) else None  # a role only known at run time: the costliest
        each = self.inference_usd(role, step.arg("prompt"))
        fix_up = self.inference_usd(REPAIR_ROLE, step.arg("prompt"), instead=role)
        usd = Range(0, each).times(Range(1, rounds)) + Range(0, fix_up)
        return Run(CostRange(inferences=Range(1, rounds + 1), usd=usd) + calls + checks, ordered=ordered)

    def judged(self, step: ast.Step) -> CostRange:
        """One inference of the `judge` role, on the question `infer` asks."""
        return CostRange(inferences=ONE, usd=Range(0, self.inference_usd("judge", step.arg("infer"))))

    def inference_usd(self, role: str | None, prompt: ast.Arg | None, instead: str | None = None) -> float:
        """The most one inference of the `role` model (`[models.<role>]`, else `[models.default]`, else
        `instead`'s) may cost: the prompt as written (a byte a token at most; what only the run knows, it
        counts then) and `max_tokens` out. Nothing for a model without prices; an unknown role, the costliest."""
        models = self.registry.models if self.registry is not None else {}
        if role is None:
            return max((self.inference_usd(name, prompt) for name in models), default=0.0)
        config = models.get(role, models.get(DEFAULT_MODEL_ROLE, models.get(instead) if instead else None))
        if config is None:
            return 0.0
        written = literal_value(prompt.value) if prompt is not None else None
        return config.most_usd(len(written.encode()) if isinstance(written, str) else 0)

    def call_cost(self, tool: Tool) -> CostRange:
        """What one call of `tool` may cost: a declared plan's own total, else one call at its declared cost (and,
        for a tool of an MCP server that may sample a model, up to `samples_per_call` inferences)."""
        if tool.kind == "plan":
            return self.plan_cost(tool.address)
        server = self.registry.servers.get(tool.server) if self.registry is not None and tool.server else None
        samples = CostRange(inferences=Range(0, server.samples_per_call)) if server and server.sampling else CostRange()
        return _call(tool.cost.usd, tool.cost.latency_ms) + samples

    def _pure(self, step: ast.Step) -> Run:
        return Run()  # computed by planc, in the step: no call, no inference, no spend

    # --- what the control steps run

    def block(self, step: ast.Step, name: str) -> Run:
        arg = step.arg(name)
        return self.sequence(arg.value.pipelines) if arg is not None and type(arg.value) is ast.Block else Run()

    def fan_out(self, step: ast.Step, body: Run) -> Range:
        """How many times `step` runs `body`: once per item of its list; W500 when that has no bound and costs."""
        bound = self.bounds.of_over(step)
        count = bound.count
        if body.may_exit:  # the first item may end the plan
            count = Range(min(count.low, 1), count.high)
        if not count.bounded and not body.cost.free and bound.known:
            at, path, name = step.tool.span, self.resolution.paths.get(step), step.tool.text
            hints = [f"the list has no known length: {bound.why}"] if bound.why else []
            hints.append(
                "bound it: pass a literal list, give the tool that makes it a limit (its `returns_at_most`), "
                "or declare `maxItems` in its `returns`"
            )
            if step.arg("infer") is None:
                self.diagnostics.append(diagnostic("W500", "block", at, step=path, hints=hints, tool=name))
            else:
                self.diagnostics.append(diagnostic("W500", "infer", at, step=path, hints=hints, tool=name))
        return count

    def concurrency(self, step: ast.Step) -> Range:
        """How many items `map` runs at once: [least, most]."""
        arg = step.arg("concurrency")
        if arg is None:
            return ONE
        value = literal_value(arg.value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return Range(value, value)
        return Range(1, UNBOUNDED)


AGENT = CONTROL_STEPS["agent"]

# The cost rule of each built-in step: what it costs itself, and what it runs; each control step's from its
# declaration (`registry/steps/`), and a pure step is free.
COST_RULES = {**{name: step.cost for name, step in CONTROL_DECLARATIONS.items()}, **dict.fromkeys(PURE_STEPS, Coster._pure)}


@functools.lru_cache(maxsize=1024)  # one per distinct declared cost, shared by every call
def _call(usd: float, ms: float) -> CostRange:
    """One tool call that costs `usd` dollars and takes `ms` milliseconds."""
    return CostRange(ONE, usd=Range(usd, usd), sequential_ms=Range(ms, ms), critical_ms=Range(ms, ms))


def _waves(count: Range, concurrency: Range) -> Range:
    """How many rounds of up to `concurrency` items `count` items take, one round after the other."""
    least = 0 if count.low == 0 else max(1, math.ceil(count.low / concurrency.high))
    most = count.high if not count.bounded else math.ceil(count.high / concurrency.low)
    return Range(least, most)
