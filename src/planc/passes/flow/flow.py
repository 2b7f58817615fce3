"""Flow: the labels every call's arguments carry, and the labels that decide whether it runs.

A walk in text order over the plan, into blocks and into the declared plans it calls (under the
caller's path, with `$args` carrying the labels of the caller's arguments). The plan's own literals and
`$args` carry the labels of whoever wrote it (`CheckContext.written_by`); a declared plan's literals were
written by the project, and carry none. A step's result
carries the labels its tool declares, those of every argument it was given, and its control
labels; the control steps have their own rule each, in their declarations (`rules.py`). What the walk computes is an
estimate that a run can only lower: an agent is taken to have read everything it may call, both
branches of a `decide` to have run, every `exit` to have been asked before the steps after it.
The policy pass reads it: each request's `context.sources` and `context.control`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

import attrs

from planc.analysis.result_labels import (
    answers_depend,
    decided_calls,
    fails_on,
    failure_control,
    kept_input,
    result_view,
)
from planc.diagnostics import Diagnostic
from planc.passes.context import CheckContext
from planc.passes.flow.secret_control import secret_control
from planc.passes.resolve.resolve import ARGS
from planc.registry.provenance.control import Decided
from planc.registry.provenance.expressions import (
    ArgsView,
    View,
    carriers,
    expr_labels,
    expr_view,
    writes_text,
)
from planc.registry.provenance.labels import NO_LABELS, UNTRUSTED_ONLY, LabelView, union, union_all, view_of
from planc.registry.steps.control import condition_labels
from planc.registry.tools.tool import Tool
from planc.syntax import ast
from planc.syntax.printer import print_expr

if TYPE_CHECKING:
    from planc.passes.resolve.resolve import Resolution

T = TypeVar("T")


@attrs.frozen
class CallFlow:
    """What one step (at one step path) is given, as labels."""

    step: ast.Step
    tool: Tool | None
    sources: Mapping[str, frozenset[str]]  # each value argument (the piped one too) -> its labels
    control: frozenset[str]  # the labels of the conditions that decide whether it runs
    result: LabelView  # what its result carries
    env: PlanEnv = attrs.field(eq=False, repr=False)  # what its arguments were read in, for `carriers`
    # What decides whether it runs: the conditions of the `decide`s around it and of the `exit`s
    # before it, each with what it was read in, and the loops around it and the declared plans
    # called before it (`Decided`): where its control labels come from.
    deciders: tuple = attrs.field(default=(), eq=False, repr=False)
    # The labels its possible failure adds to the control of the steps after it (`failure_control`):
    # those of `RECORDED` it was given, as a failure here ends the run.
    fails: frozenset[str] = NO_LABELS

    def carriers(self, argument: str) -> list[tuple[ast.Expr, frozenset[str], str]]:
        """The references in `argument` that carry labels: (node, labels, where the value came from)."""
        arg = self.step.arg(argument)
        if arg is None:  # the piped input
            return []
        return [(node, labels, self.env.origin(node)) for node, labels in carriers(arg.value, self.env)]

    def control_carriers(self) -> list[tuple[ast.Expr | ast.Name, frozenset[str], str]]:
        """The references in the conditions that decide whether it runs that carry labels, and the
        loops and declared plans that decide it."""
        found: list[tuple[ast.Expr | ast.Name, frozenset[str], str]] = []
        for decider in self.deciders:
            if type(decider) is Decided:
                if decider.labels:
                    found.append((decider.node, decider.labels, decider.origin))
                continue
            expr, env = decider
            found.extend((node, labels, env.origin(node)) for node, labels in carriers(expr, env))
        return found


@attrs.frozen
class FlowFacts:
    """The flow of every step of the plan and of the declared plans it calls, by step path."""

    calls: Mapping[str, CallFlow] = attrs.field(factory=dict)

    def into_effects(self) -> list[dict]:
        """Each labelled value that reaches an argument of a call that may change the world (its tool is not
        read-only), and each such call whose running labelled data decides (`argument` ""), in step order:
        what a reviewer looks at first. Control steps are left out: what they run is listed itself.

        >>> from planc.passes.check import check
        >>> from planc.registry.loading.registry import Registry
        >>> registry = Registry(tools={"read": Tool("read"), "send": Tool("send", {"to": {}}, labels=[])})
        >>> check('read() |> send(to: $1.iban)', registry=registry).facts.flow.into_effects()
        [{'step': '2', 'tool': 'send', 'argument': 'to', 'labels': ['untrusted'], 'from': ['`$1.iban`, which `read` returned at step 1']}]
        """
        found = []
        for path, call in self.calls.items():
            tool = call.tool
            if tool is None or tool.effects.read_only or tool.builtin:
                continue
            for argument, labels in call.sources.items():
                if labels:
                    origins = [origin for _, _, origin in call.carriers(argument)] or [f"the input piped into `{tool.name}`"]
                    found.append(
                        {"step": path, "tool": tool.name, "argument": argument, "labels": sorted(labels), "from": origins}
                    )
            if call.control:
                found.append(
                    {
                        "step": path,
                        "tool": tool.name,
                        "argument": "",
                        "labels": sorted(call.control),
                        "from": [origin for _, _, origin in call.control_carriers()],
                    }
                )
        return found


@attrs.frozen
class PlanEnv:
    """What the expressions of one plan (or block) read, before a run: each earlier step's estimate."""

    targets: Mapping  # the resolve pass's Ref -> Step or ARGS
    paths: Mapping  # Step -> its path in this walk
    tools: Mapping  # Step -> Tool
    results: dict  # Step -> LabelView, shared by the blocks of one plan
    args: ArgsView
    calls: Mapping = attrs.field(factory=dict)  # the walk's CallFlow of each step path
    bindings: Mapping[str, LabelView] = attrs.field(factory=dict)
    fields: LabelView | None = None  # the current item, in a filter condition
    binder: ast.Step | None = None  # the control step whose block binds `item`, `index`, `accumulator` here
    written: frozenset[str] = NO_LABELS  # what the plan's own literals carry: the labels of whoever wrote it

    def bind(self, **views: LabelView) -> PlanEnv:
        return attrs.evolve(self, bindings={**self.bindings, **views})

    def bound_by(self, step: ast.Step) -> PlanEnv:
        return attrs.evolve(self, binder=step)

    def with_fields(self, item: LabelView) -> PlanEnv:
        return attrs.evolve(self, fields=item)

    def ref_view(self, ref: ast.Ref) -> View:
        target = self.targets.get(ref)
        if target == ARGS:
            return self.args
        return self.results.get(target) or LabelView(UNTRUSTED_ONLY)  # not known: fail closed

    def name_view(self, head: str) -> LabelView:
        if head in self.bindings:
            return self.bindings[head]
        return self.fields.field(head) if self.fields is not None else LabelView(UNTRUSTED_ONLY)

    def origin(self, node: ast.Expr, depth: int = 0) -> str:
        """Where the value `node` reads came from, in words: the step and tool that returned it, and, when
        that tool passed on labels it was given, where those came from."""
        written = print_expr(node)
        if writes_text(node):
            return f"`{written}`, which the plan's author wrote"
        if isinstance(node, ast.Ref):
            target = self.targets.get(node)
            if target == ARGS:
                return f"`{written}`, an argument of the plan"
            if target is None:  # resolve reports it; what it would read is not known, so it counts as untrusted
                return f"`{written}`, which reads no step before it"
            tool = self.tools.get(target)
            name = tool.name if tool is not None else target.tool.text
            said = f"`{written}`, which `{name}` returned at step {self.paths.get(target, '?')}"
            call = self.calls.get(self.paths.get(target))
            if call is None or depth >= 4 or tool is None or expr_labels(node, self) <= tool.labels:
                return said
            for argument, labels in call.sources.items():
                found = call.carriers(argument) if labels else []
                if found:
                    return f"{said}, from {call.env.origin(found[0][0], depth + 1)}"
            return said
        if self.binder is None:
            return f"`{written}`, bound by the block it is in"
        step = self.binder
        what = "the accumulator" if isinstance(node, ast.Path) and node.head.text == "accumulator" else "an item"
        return f"`{written}`, {what} of the list that `{step.tool.text}` at step {self.paths.get(step, '?')} goes over"


def flow(plan: ast.Plan, context: CheckContext) -> tuple[FlowFacts, list[Diagnostic]]:
    """The labels of every call of `plan`: its arguments', its control's and its result's.

    >>> from planc.passes.check import check
    >>> from planc.registry.loading.registry import Registry
    >>> registry = Registry(tools={"read": Tool("read"), "send": Tool("send", {"to": {}}, labels=[])})
    >>> facts = check('read() |> send(to: $1.iban)', registry=registry).facts.flow
    >>> sorted(facts.calls["2"].sources["to"]), sorted(facts.calls["2"].result.whole())
    (['untrusted'], ['untrusted'])
    """
    from planc.passes.flow.rules import FLOW_RULES

    walk = Walk(context, FLOW_RULES)
    resolution = context.learned("resolution")
    walk.plan(plan, resolution, {}, "", NO_LABELS, context.written_by)
    return FlowFacts(walk.calls), secret_control(walk.calls)


class Walk:
    """One walk of a plan and the declared plans it calls."""

    def __init__(self, context: CheckContext, rules: Mapping) -> None:
        self.context, self.rules, self.registry = context, rules, context.registry
        self.calls: dict[str, CallFlow] = {}
        self.gates = NO_LABELS  # the conditions of the `exit`s asked so far in the plan being walked
        self.deciders: tuple = ()  # what decides what runs (CallFlow.deciders) where the walk is
        self.exits = NO_LABELS  # what the `exit`s of the plan being walked may end it with
        self._carried: dict[str, frozenset[str]] = {}  # a tool's name -> what any call of it may return
        # A tool's name -> what decided its calls walked so far: what its later answers carry, when
        # they may depend on the calls before (`answers_depend`); `grew` counts each time one grows.
        self.called: dict[str, frozenset[str]] = {}
        self.grew = 0

    def plan(
        self,
        plan: ast.Plan,
        resolution: Resolution,
        args: Mapping[str, LabelView],
        prefix: str,
        control: frozenset[str],
        written: frozenset[str] = NO_LABELS,
    ) -> tuple[LabelView, frozenset[str]]:
        """Walk `plan` (its facts in `resolution`) with `$args` carrying `args` (and `written` those
        it does not name), its literals `written`; what its result carries, and what decided its
        `exit`s."""
        paths = {step: prefix + path for step, path in resolution.paths.items()}
        env = PlanEnv(resolution.targets, paths, resolution.tools, {}, ArgsView(args, written), self.calls, written=written)
        saved = self.gates, self.exits, self.deciders
        self.gates = self.exits = NO_LABELS
        try:
            last = self.pipelines(plan.pipelines, env, control)
            return last.adding(union(self.gates, self.exits)), self.gates
        finally:
            self.gates, self.exits, self.deciders = saved

    def decided_by(self, decider: tuple | Decided, walk_inside: Callable[[], T]) -> T:
        """`walk_inside()` with `decider` (a condition and what it is read in, or a `Decided`) among
        what decides what runs."""
        saved = self.deciders
        self.deciders = (*saved, decider)
        try:
            return walk_inside()
        finally:
            self.deciders = saved

    def pipelines(self, pipelines: Iterable[ast.Pipeline], env: PlanEnv, control: frozenset[str]) -> LabelView:
        last = LabelView()
        for pipeline in pipelines:
            piped = None
            for step in pipeline.steps:
                last = env.results[step] = self.step(step, env, piped, control)
                piped = last
        return last

    def block(self, step: ast.Step, name: str, env: PlanEnv, control: frozenset[str]) -> LabelView:
        """Walk the block of `step`'s argument `name` (none: nothing); what its result carries."""
        arg = step.arg(name)
        if arg is None or not isinstance(arg.value, ast.Block):
            return LabelView()
        return self.pipelines(arg.value.pipelines, env, control)

    def loop(self, step: ast.Step, name: str, env: PlanEnv, control: frozenset[str]) -> LabelView:
        """Walk a block that runs once per item: again while an `exit` in it adds control, or a call in
        it adds to what a tool's later answers carry, since a later item runs after an earlier one."""
        while True:
            before = self.gates, self.grew
            result = self.block(step, name, env, control)
            if (self.gates, self.grew) == before:
                return result

    def step(self, step: ast.Step, env: PlanEnv, piped: LabelView | None, control: frozenset[str]) -> LabelView:
        resolution_tool = env.tools.get(step)
        tool = resolution_tool or (Tool(step.tool.text) if self.registry is None else None)
        control = union(control, self.gates)
        views: dict[str, LabelView] = {}
        for arg in step.args:  # what a control step reads per item (`infer` of a filter) is its rule's
            name = arg.name.text
            if tool is None or (tool.param_kind(name) == "value" and not tool.binds.get(name)):
                views[name] = expr_view(arg.value, env)
        if piped is not None and tool is not None and tool.pipe and tool.pipe not in views:
            views[tool.pipe] = piped
        sources = {name: view.whole() for name, view in views.items()}
        fails = NO_LABELS
        if tool is None:  # an unknown tool, reported by resolve: what it returns is not known
            result = LabelView(union(UNTRUSTED_ONLY, control))
        else:  # what any call's result carries, and what the step's own rule adds
            added = NO_LABELS
            block: LabelView | None = None
            if tool.builtin and tool.name in self.rules:
                found = self.rules[tool.name](self, step, env, views, control)
                if isinstance(found, LabelView):  # a `map`'s block: what each of its results carries
                    block, found = found, found.whole()
                added = found
            elif tool.kind == "plan":
                added = self.declared_plan(step, tool, env, views, control)
            elif answers_depend(tool):
                added = self.count(tool, decided_calls(sources, control))
            kept = kept_input(tool)
            result = result_view(step, tool, sources, control, added, views.get(kept) if kept else None, block)
            asked = added if tool.name == "filter" or step.arg("infer") is None else condition_labels(step, env)
            fails = failure_control(tool.labels, fails_on(step, tool, sources, control, added, asked), caught=False)
        path = env.paths[step]
        self.calls[path] = CallFlow(step, tool, sources, control, result, env, self.deciders, fails)
        if fails:  # whether it fails decides whether every later step of its plan runs
            self.gates = union(self.gates, fails)
            origin = f"whether `{tool.name if tool else step.tool.text}` at step {path} fails, on what it is given"
            self.deciders = (*self.deciders, Decided(step.tool, fails, origin))
        return result

    def declared_plan(
        self, step: ast.Step, tool: Tool, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]
    ) -> frozenset[str]:
        """A call of `plan__NAME`: its steps walked under the caller's path with `$args` carrying the
        caller's arguments; what its result carries from its own steps."""
        checked = self.context.plans.get(tool.address)
        if checked is None or not checked.ok:  # not walked (a cycle, errors): what it returns is not known
            return UNTRUSTED_ONLY
        # `$args` carries each argument's labels whole, as a run passes them on with the call.
        args = {name: LabelView(view.whole()) for name, view in views.items()}
        assert checked.plan is not None and checked.resolution is not None  # it checked without errors
        path = env.paths[step] + "/"
        result, gates = self.plan(checked.plan, checked.resolution, args, path, control)
        # What decided its `exit`s (and so whether it failed) decides whether the caller's later
        # steps run, as an `exit` written in the caller does.
        self.gates = union(self.gates, gates)
        if gates:
            origin = f"the `exit`s of `{tool.name}`, called at step {env.paths[step]}"
            self.deciders = (*self.deciders, Decided(step.tool, gates, origin))
        return result.whole()

    def count(self, tool: Tool, decided: frozenset[str]) -> frozenset[str]:
        """Count a call of `tool` that `decided` decided: what decided its calls walked before it."""
        earlier = self.called.get(tool.name, NO_LABELS)
        now = union(earlier, decided)
        if now != earlier:
            self.called[tool.name] = now
            self.grew += 1
        return earlier

    def agent_calls(self, step: ast.Step, targets: Mapping, decided: frozenset[str]) -> frozenset[str]:
        """Count the calls the agent `step` may make (`decided`: what it read and was given decides
        them): what decided the calls of those tools walked before, which their answers carry."""
        earlier = NO_LABELS
        for tool in self.offered(step, targets):
            if answers_depend(tool):
                earlier = union(earlier, self.count(tool, decided))
        return earlier

    def callable(self, step: ast.Step, targets: Mapping) -> list[Tool]:
        """The tools the agent `step` may call (every tool, when they are not known before it runs);
        none without a registry."""
        from planc.analysis.agent_tools import agent_tools

        if self.registry is None:
            return []
        found = agent_tools(step, self.registry, targets, self.context.plans)
        return list(self.registry.tools.values()) if found is None else list(found)

    def offered(self, step: ast.Step, targets: Mapping) -> list[Tool]:
        """The tools the agent `step` may call, and those the declared plans among them call, at any
        depth."""
        tools = self.callable(step, targets)
        seen: dict[str, Tool] = {}
        while tools:
            tool = tools.pop()
            if tool.name in seen:
                continue
            seen[tool.name] = tool
            checked = self.context.plans.get(tool.address) if tool.kind == "plan" else None
            if checked is not None and checked.ok and checked.resolution is not None:
                tools += checked.resolution.tools.values()
        return list(seen.values())

    def carried(self, tool: Tool) -> frozenset[str]:
        """What any call of `tool` may return, whatever its arguments: its labels and its parts'
        (`x-labels`), and for a declared plan those of every tool it may call, at any depth (what an
        agent calling it may read)."""
        found = self._carried.get(tool.name)
        if found is not None:
            return found
        self._carried[tool.name] = UNTRUSTED_ONLY  # a plan reached again while it is looked into
        found = view_of(tool.labels, tool.returns).whole()  # the parts its `returns` labels too
        if tool.kind == "plan":
            checked = self.context.plans.get(tool.address)
            if checked is None or not checked.ok:
                found = union(found, UNTRUSTED_ONLY)
            else:
                assert checked.resolution is not None  # it checked without errors
                for inner_step, inner in checked.resolution.tools.items():
                    is_agent = inner.kind == "control" and inner.name == "agent"
                    found = union(
                        found, self.may_read(inner_step, checked.resolution.targets) if is_agent else self.carried(inner)
                    )
        self._carried[tool.name] = found
        return found

    def may_read(self, step: ast.Step, targets: Mapping) -> frozenset[str]:
        """What the agent `step` may read from the tools it may call and its check: all they may return
        (every tool's, when they are not known before it runs)."""
        from planc.analysis.agent_tools import agent_check_tool

        if self.registry is None:
            return UNTRUSTED_ONLY
        tools = self.callable(step, targets)
        check = agent_check_tool(step, self.registry)
        return union_all(self.carried(tool) for tool in (*tools, *([check] if check is not None else [])))
