"""`planc.check`: parse a plan and run the passes over it, in order."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from planc.diagnostics import Diagnostic, sort_key
from planc.gc_pause import gc_paused
from planc.passes.cost.budget import Budget
from planc.passes.context import CheckContext
from planc.passes.cost.cost import CostReport, cost
from planc.passes.policy.policy import PolicyFacts, policy
from planc.passes.resolve.resolve import Resolution, resolve
from planc.passes.resolve.signatures import name_parameters
from planc.passes.types.types import Typing, types
from planc.passes.policy.load import DEFAULT_PRINCIPAL, Policy
from planc.registry.registry import Registry
from planc.syntax.ast import Plan
from planc.syntax.extract import extract
from planc.syntax.parser import parse

# The passes, in the order they run. Each is `pass(plan, context) -> (facts, diagnostics)`;
# a pass finds the facts of the passes before it in `context.facts`, by pass name.
PASSES = (resolve, types, policy, cost)


@attrs.frozen
class CheckResult:
    source: str
    plan: Plan | None
    diagnostics: tuple[Diagnostic, ...]
    resolution: Resolution | None = None
    typing: Typing | None = None
    policy: PolicyFacts | None = None
    cost: CostReport | None = None
    context: CheckContext | None = None  # what it was checked with (registry, policy, ...), for `recheck`

    @property
    def ok(self) -> bool:
        return self.plan is not None and not any(d.is_error for d in self.diagnostics)

    @property
    def steps(self) -> int:
        return len(self.resolution.paths) if self.resolution else 0


def check(source: str, *, extract_plan: bool = False, registry: Registry | None = None,
          arguments: Mapping[str, Mapping] | None = None, policy: Policy | None = None,
          principal: str = DEFAULT_PRINCIPAL, max_usd: float | None = None, max_calls: int | None = None,
          max_inferences: int | None = None) -> CheckResult:
    """Check plan text without running anything.

    With `extract_plan`, the plan is first taken out of a model reply; spans
    still point into `source`. Without a `registry` only the control steps are
    known and any other tool name is accepted. `arguments` (JSON Schema per run
    argument) types `$args`, as a plan's declared `params` do. With a `policy`
    (`planc.policy.load_policy`), every step is judged as a call by `principal`.
    `max_usd`, `max_calls` and `max_inferences` are budgets: a plan that may
    cost more is E401.

    >>> check('search(query: "x") |> summarize(style: bullets)').diagnostics[0].code
    'E206'
    """
    with gc_paused():
        context = CheckContext(source=source, registry=registry, arguments=arguments, policy=policy,
                               principal=principal, budget=Budget(max_usd, max_calls, max_inferences))
        return _check(source, extract_plan, context)


def _check(source: str, extract_plan: bool, context: CheckContext) -> CheckResult:
    text = extract(source) if extract_plan else source
    parsed = parse(text)
    if parsed.plan is None:
        diagnostics = parsed.diagnostics
        if context.registry is not None:
            diagnostics = [name_parameters(d, text, context.registry) if d.code == "E102" else d for d in diagnostics]
        return CheckResult(source, None, tuple(diagnostics), context=context)
    diagnostics = list(parsed.diagnostics)
    for run_pass in PASSES:
        result, found = run_pass(parsed.plan, context)
        context = attrs.evolve(context, facts={**context.facts, run_pass.__name__: result})
        diagnostics.extend(found)
    diagnostics.sort(key=sort_key)
    facts = context.facts
    return CheckResult(source, parsed.plan, tuple(diagnostics), resolution=facts["resolve"], typing=facts["types"],
                       policy=facts["policy"], cost=facts["cost"], context=context)


def recheck(checked: CheckResult, source: str) -> CheckResult:
    """Check `source` as `checked` was checked: with the same registry, arguments, policy, principal and budgets.

    >>> recheck(check("a()", max_calls=1), "a()\\nb()").diagnostics[0].code
    'E401'
    """
    with gc_paused():
        return _check(source, False, attrs.evolve(checked.context, source=source, facts={}))
