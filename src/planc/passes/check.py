"""`planc.check`: parse a plan and run the passes over it, in order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import attrs

from planc.diagnostics import Diagnostic, sort_key
from planc.gc_pause import gc_paused
from planc.passes.context import CheckContext, Facts
from planc.passes.cost.budget import Budget
from planc.passes.cost.cost import CostReport, cost
from planc.passes.flow.flow import FlowFacts, flow
from planc.passes.ignores import apply_ignores
from planc.passes.plan_size import oversized
from planc.passes.policy.load import Policy, principal_of
from planc.passes.policy.policy import PolicyFacts, policy
from planc.passes.resolve.resolve import Resolution, resolve
from planc.passes.resolve.signatures import with_registry_hints
from planc.passes.types.types import Typing, types
from planc.registry.loading.declared_plans import PlanFile
from planc.registry.loading.registry import Registry
from planc.registry.provenance.labels import label_set
from planc.syntax.ast import Plan
from planc.syntax.extract import extract
from planc.syntax.parser import parse

# The passes, in the order they run: each `pass(plan, context) -> (facts, diagnostics)` reads the
# facts of the passes before it from `context.facts`, and its own go into the field named here.
PASSES = (("resolution", resolve), ("typing", types), ("flow", flow), ("policy", policy), ("cost", cost))


@attrs.frozen
class CheckResult:
    source: str
    plan: Plan | None
    diagnostics: tuple[Diagnostic, ...]
    facts: Facts = Facts()
    context: CheckContext | None = None  # what it was checked with (registry, policy, ...), for `recheck`

    @property
    def ok(self) -> bool:
        return self.plan is not None and not any(d.is_error for d in self.diagnostics)

    @property
    def steps(self) -> int:
        return len(self.resolution.paths) if self.resolution else 0

    @property
    def resolution(self) -> Resolution | None:
        return self.facts.resolution

    @property
    def typing(self) -> Typing | None:
        return self.facts.typing

    @property
    def flow(self) -> FlowFacts | None:
        return self.facts.flow

    @property
    def policy(self) -> PolicyFacts | None:
        return self.facts.policy

    @property
    def cost(self) -> CostReport | None:
        return self.facts.cost


def check(
    source: str,
    *,
    extract_plan: bool = False,
    registry: Registry | None = None,
    arguments: Mapping[str, Mapping] | None = None,
    policy: Policy | None = None,
    principal: str | Mapping | None = None,
    max_usd: float | None = None,
    max_calls: int | None = None,
    max_inferences: int | None = None,
    approvals: bool = False,
    written_by: frozenset[str] = frozenset(),
) -> CheckResult:
    """Check plan text without running anything.

    With `extract_plan`, the plan is first taken out of a model reply; spans
    still point into `source`. Without a `registry` only the control steps are
    known and any other tool name is accepted. `arguments` (JSON Schema per run
    argument) types `$args`, as a plan's declared `params` do. With a `policy`
    (`planc.passes.policy.load.load_policy`), every step is judged as a call by
    `principal` (default: the registry's `principal`, else anonymous; a principal with attributes and
    groups is Cedar's entity JSON, `{"uid": 'User::"alice"', "attrs": {...}, "parents": [...]}`, which the policy then judges
    with: a ValueError when it is malformed, a PolicyError when the policy does not fit its attributes);
    without one, the policy the registry's planc.toml names,
    if any, so that no check forgets it. `max_usd`,
    `max_calls` and `max_inferences` are budgets, each defaulting to the
    registry's `[budget]`: a plan that may cost more is E401. With `approvals` (a person
    will be asked during the run), a call the policy refuses only for where its values came
    from is W505 rather than E400. `written_by` are the labels of whoever wrote the plan, which its
    literals and `$args` carry (an MCP client's plan: `planc mcp`).

    >>> check('search(query: "x") |> summarize(style: bullets)').diagnostics[0].code
    'E206'
    """
    policy = named_policy(policy, registry)
    if principal is not None and not isinstance(principal, str):
        from planc.passes.policy.load import with_principals
        from planc.passes.policy.principals import principal_from_json

        entity = principal_from_json(principal)
        policy = with_principals(policy, [entity]) if policy is not None else None
        principal = cast(str, entity["uid"])
    return _checked(
        source,
        extract_plan,
        registry,
        arguments,
        policy,
        principal,
        Budget.of(max_usd, max_calls, max_inferences, registry.budget if registry is not None else None),
        approvals,
        label_set(written_by),
    )


def _checked(
    source: str,
    extract_plan: bool,
    registry: Registry | None,
    arguments: Mapping[str, Mapping] | None,
    policy: Policy | None,
    principal: str | None,
    budget: Budget,
    approvals: bool = False,
    written_by: frozenset[str] = frozenset(),
) -> CheckResult:
    with gc_paused():
        context = CheckContext(
            source=source,
            registry=registry,
            arguments=arguments,
            policy=policy,
            principal=principal_of(principal, registry),
            budget=budget,
            approvals=approvals,
            written_by=written_by,
        )
        return _check(source, extract_plan, context)


def named_policy(policy: Policy | None, registry: Registry | None) -> Policy | None:
    """`policy`, else the policy the registry's planc.toml names (`policy = "..."`), loaded; else None."""
    if policy is None and registry is not None and registry.policy is not None:
        from planc.passes.policy.load import load_policy

        return load_policy(registry.policy, registry.principals)
    return policy


def _check(source: str, extract_plan: bool, context: CheckContext) -> CheckResult:
    too_large = oversized(source, context.registry)
    if too_large is not None:
        return CheckResult(source, None, (too_large,), context=context)
    text = extract(source) if extract_plan else source
    parsed = parse(text)
    if parsed.plan is None:
        diagnostics = parsed.diagnostics
        if context.registry is not None:
            diagnostics = [with_registry_hints(d, text, context.registry) for d in diagnostics]
        return CheckResult(source, None, tuple(diagnostics), context=context)
    diagnostics = list(parsed.diagnostics)
    context = attrs.evolve(context, plans=_called_plans(parsed.plan, context.registry))
    for field, run_pass in PASSES:
        found, reported = run_pass(parsed.plan, context)
        # PASSES pairs each field of Facts with the pass that finds it
        context = attrs.evolve(context, facts=attrs.evolve(context.facts, **{field: found}))  # type: ignore[arg-type]
        diagnostics.extend(reported)
    diagnostics = apply_ignores(diagnostics, parsed.comments, parsed.lines)
    diagnostics.sort(key=sort_key)
    return CheckResult(source, parsed.plan, tuple(diagnostics), context.facts, context)


def _called_plans(plan: Plan, registry: Registry | None) -> dict[str, CheckResult]:
    """The declared plans `plan` calls, directly or through other plans, each checked once per registry
    against its `params`; a plan that takes part in a cycle (E210) is left out."""
    if registry is None or not registry.plans:
        return {}
    called = registry.plans.called_by(plan.pipelines)
    return {
        name: registry.plans.checked(name, lambda file: _check_declared(file, registry))
        for name in registry.plans.reachable(called)
        if registry.plans.cycle_from(name) is None
    }


def _check_declared(file: PlanFile, registry: Registry) -> CheckResult:
    if file.text is None:  # unreadable: no plan, and nothing known of it
        return CheckResult("", None, ())
    # Without a policy: its calls are judged as its caller's, for the caller's principal and in its loops.
    return _checked(file.text, False, registry, file.declaration.params, None, None, Budget.of(None, None, None, registry.budget))


def recheck(checked: CheckResult, source: str) -> CheckResult:
    """Check `source` as `checked` was checked: with the same registry, arguments, policy, principal and budgets.

    >>> recheck(check("a()", max_calls=1), "a()\\nb()").diagnostics[0].code
    'E401'
    """
    assert checked.context is not None, "a plan the check ran on keeps its context"
    with gc_paused():
        return _check(source, False, attrs.evolve(checked.context, source=source, facts=Facts()))


def recheck_arguments(checked: CheckResult, arguments: Mapping[str, Mapping]) -> CheckResult:
    """`checked` checked again with its `$args` typed by `arguments` (the JSON Schema of each run argument),
    as a run of it with those arguments is checked before it starts.

    >>> recheck_arguments(check("take(over: [1], count: $args.n)"), {"n": {"type": "string"}}).diagnostics[0].code
    'E300'
    """
    assert checked.context is not None  # what `check` returned keeps what it was checked with
    context = attrs.evolve(checked.context, arguments=arguments, facts=Facts())
    with gc_paused():
        again = _check(checked.source, False, context)
        # A plan taken out of a model reply (`--extract`, `planc plan`) is taken out again.
        return again if again.plan is not None else _check(checked.source, True, context)
