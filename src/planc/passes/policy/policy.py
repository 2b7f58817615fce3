"""Policy: every step, nested ones included, is put to the Cedar policy before anything runs.

A step is the request docs/policy.md describes: the principal, the
action `Action::"call"`, the resource `Tool::"<name>"` with the tool's effects, and a
context with the literal arguments, the names of those only known at run time, the
step path, whether the step runs once per item, and where its values came from (the flow
pass's labels of each argument and of its control). A deny is E400 at the step's tool.
Without a policy the pass does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

import attrs

from planc.analysis.agent_tools import call_effects
from planc.analysis.literals import NOT_LITERAL, literal_value
from planc.diagnostics import Diagnostic
from planc.passes.context import CheckContext
from planc.registry.provenance.labels import UNTRUSTED_ONLY
from planc.registry.tools.tool import Tool
from planc.syntax import ast
from planc.syntax.steps import step_blocks

if TYPE_CHECKING:  # Cedar's side is imported when a plan is judged: a check without a policy never loads it
    from planc.passes.flow.flow import CallFlow
    from planc.passes.policy.decide import Ask, Decision
    from planc.passes.resolve.resolve import Resolution

# The control steps whose blocks run once per item: a step inside one is `in_loop`.
LOOPS = frozenset({"map", "filter", "reduce"})


@attrs.frozen
class PolicyFacts:
    """What the policy said about each step it judged."""

    decisions: dict  # Step -> Decision


def policy(plan: ast.Plan, context: CheckContext) -> tuple[PolicyFacts, list[Diagnostic]]:
    """Judge every step of `plan` by `context.policy`.

    >>> from pathlib import Path
    >>> from planc.passes.policy.load import policy_from_text
    >>> from planc.passes.context import Facts
    >>> from planc.passes.flow.flow import flow
    >>> from planc.passes.resolve.resolve import resolve
    >>> from planc.syntax.parser import parse
    >>> rules = policy_from_text('@id("no-loops")\\nforbid(principal, action, resource) when { context.in_loop };'
    ...                          '\\npermit(principal, action, resource);', Path("policy.cedar"))
    >>> plan = parse('map(over: [1, 2], do: { notify(text: "hi") })').plan
    >>> context = CheckContext(policy=rules)
    >>> context = attrs.evolve(context, facts=Facts(resolution=resolve(plan, context)[0]))
    >>> context = attrs.evolve(context, facts=attrs.evolve(context.facts, flow=flow(plan, context)[0]))
    >>> [(d.code, d.message, d.step) for d in policy(plan, context)[1]]
    [('E400', 'calling `notify` is forbidden by policy `no-loops` (for User::"anonymous")', '1/do.1')]
    """
    if context.policy is None:
        return PolicyFacts({}), []
    from planc.passes.policy.decide import decide_all
    from planc.passes.policy.denial import denial, flow_blame

    asked: list[tuple[ast.Step, Ask, tuple | None]] = []
    flows = context.learned("flow").calls
    _judge(plan, context.learned("resolution"), context, asked, flows)
    # Every step's request decided together: Cedar takes them in batches, as most of a request's
    # cost is the call into Cedar. Each is still its own request, with its own decision.
    decided = decide_all(context.policy, context.principal, [ask for _, ask, _ in asked])
    decisions: dict[ast.Step, Decision] = {}
    diagnostics: list[Diagnostic] = []
    for (step, ask, caller), decision in zip(asked, decided):
        if caller is None:
            decisions[step] = decision
        if not decision.allowed:
            blame = flow_blame(context.policy, context.principal, ask, flows.get(ask.step))
            diagnostics.append(
                denial(
                    step, ask.step, decision, context.principal, context.policy, caller, blame=blame, approvals=context.approvals
                )
            )
    return PolicyFacts(decisions), diagnostics


def _judge(
    plan: ast.Plan,
    resolution: Resolution,
    context: CheckContext,
    asked: list,
    flows: Mapping[str, CallFlow],
    caller: tuple[ast.Step, str, bool, str] | None = None,
) -> None:
    """Put every step of `plan` (its facts in `resolution`), and every step of the declared plans it
    calls, to the policy as part of the call: under the caller's principal, inside its loops, at paths
    under its own. Each is appended to `asked` as (step, its Ask, its caller).

    `caller` is, for the steps of a declared plan, (the calling step, its path, whether it runs per
    item, the plan's file as written): a denial there is the calling step's error.
    """
    from planc.passes.policy.decide import Ask

    prefix, in_caller_loop = (caller[1] + "/", caller[2]) if caller else ("", False)
    for step, piped, in_loop in _calls(plan.pipelines, in_loop=in_caller_loop):
        # Without a registry any tool name is accepted, and judged by the conservative effects.
        tool = resolution.tools.get(step) or (Tool(step.tool.text) if context.registry is None else None)
        if tool is None:  # an unknown tool, already reported by resolve
            continue
        if tool.name == "agent" and tool.kind == "control":  # judged by what the tools it may call may do
            tool = attrs.evolve(tool, effects=call_effects(step, tool, context.registry, resolution.targets, context.plans))
        args, dynamic = _arguments(step, tool, piped)
        path = prefix + resolution.paths[step]
        call = flows.get(path)
        sources: Mapping[str, frozenset[str]]
        if call is None:  # not walked by the flow pass: nothing is known of where its values came from
            sources, control = {name: UNTRUSTED_ONLY for name in (*args, *dynamic)}, UNTRUSTED_ONLY
        else:
            sources, control = call.sources, call.control
        asked.append((step, Ask(tool, args, path, in_loop, dynamic, sources, control), caller))
        declared = context.plans.get(tool.address) if tool.kind == "plan" else None
        if declared is not None and declared.ok:
            assert context.registry is not None and declared.plan is not None and declared.resolution is not None
            written = context.registry.plans[tool.address].written
            at = caller[0] if caller else step
            _judge(
                declared.plan,
                declared.resolution,
                context,
                asked,
                flows,
                (at, path, in_loop, written) if caller is None else (at, path, in_loop, caller[3]),
            )


def _calls(pipelines: Iterable[ast.Pipeline], in_loop: bool) -> Iterator[tuple[ast.Step, bool, bool]]:
    """(step, whether a result is piped into it, whether it runs per item) for every step, in text order."""
    for pipeline in pipelines:
        for position, step in enumerate(pipeline.steps):
            yield step, position > 0, in_loop
            for block, _ in step_blocks(step):
                yield from _calls(block.pipelines, in_loop or step.tool.text in LOOPS)


def _arguments(step: ast.Step, tool: Tool, piped: bool) -> tuple[dict, list[str]]:
    """The literal arguments of `step`, and the names of those only known at run time.

    A block or a condition is neither: its steps are judged one by one.
    """
    args: dict = {}
    dynamic = [tool.pipe] if piped and tool.pipe else []
    for arg in step.args:
        name = arg.name.text
        if tool.param_kind(name) != "value":
            continue
        value = literal_value(arg.value)
        if value is NOT_LITERAL:
            dynamic.append(name)
        else:
            args[name] = value
    return args, dynamic
