"""E400: why the policy denied a call, in the same words at check time and at run time.

The policy pass reports it at the step's tool (at an argument, when the `forbid` that denied the call
reads it); the interpreter, which asks the policy again
with the real values before every call, stops the run with its message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from planc.diagnostics import Diagnostic, Span
from planc.diagnostics.build import diagnostic
from planc.passes.policy.decide import Ask, Decision, blamed_labels
from planc.passes.policy.load import Policy
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.passes.flow.flow import CallFlow

UNEVALUATED = (
    "a policy that cannot be evaluated for a call denies it: a value of another type than the policy "
    "expects (a decimal for a whole number, a set for a string) is the usual cause"
)


def denial(
    step: ast.Step,
    path: str,
    decision: Decision,
    principal: str,
    policy: Policy,
    caller: tuple[ast.Step, str, bool, str] | None = None,
    tool: str | None = None,
    blame: Blame | None = None,
    approvals: bool = False,
) -> Diagnostic:
    """E400 at `step`'s tool (step path `path`) for the call `decision` denied, asked by `principal` of `policy`;
    at the argument a `forbid` that denied it reads, when it reads one of the step's (`context.args.org`).

    `caller` is, for a step of a declared plan, (the calling step, its path, whether it runs per
    item, the plan's file as written): the error is then the calling step's. `tool` names the tool called
    when it is not the step's own (a call an `agent` step's model chose). `blame` is, for a call denied
    for where its values came from, the argument and its labels (`flow_denial`); with `approvals` such a
    call is a warning (W505), as a person will decide.
    """
    if blame is not None and not decision.failed and not decision.problem:
        return flow_denial(step, path, decision, principal, policy, caller, blame, approvals, tool)
    hints = [rule.reason for rule in decision.policies if rule.reason and rule.effect == "forbid"]
    if not decision.policies and not decision.problem:
        hints.append("a call is allowed only when some `permit` policy matches it and no `forbid` policy does")
    if decision.failed:
        hints.append(UNEVALUATED)
    dynamic = decision.request["context"]["dynamic"]
    if dynamic:
        listed = ", ".join(f"`{arg}`" for arg in dynamic)
        hints.append(
            f"{listed} {'is' if len(dynamic) == 1 else 'are'} only known at run time: "
            "named in `context.dynamic`, with no value in `context.args`"
        )
    # A call an agent's model chose has arguments of its own, not the step's: it is reported at the step's tool.
    at, tool = _blamed_argument(step, decision) if tool is None else step.tool.span, tool or step.tool.text
    if caller is not None:  # a step of a declared plan: the error is the calling step's
        where = step.tool.span.start
        hints.insert(0, f"step {path} is `{tool}` in {caller[3]}, line {where.line}, column {where.column}, which this step runs")
        at = caller[0].tool.span
    names = " and ".join(f"`{rule.name}`" for rule in decision.policies)
    if len(decision.failed) > 1:
        errors = "; ".join(f"`{rule.name}`: {error}" for rule, error in decision.failed)
        return diagnostic(
            "E400", "unevaluated_many", at, step=path, hints=hints, tool=tool, names=names, principal=principal, errors=errors
        )
    if decision.failed:
        return diagnostic(
            "E400",
            "unevaluated",
            at,
            step=path,
            hints=hints,
            tool=tool,
            names=names,
            principal=principal,
            error=decision.failed[0][1],
        )
    if len(decision.policies) > 1:
        return diagnostic("E400", "forbidden_many", at, step=path, hints=hints, tool=tool, names=names, principal=principal)
    if decision.policies:
        return diagnostic("E400", "forbidden", at, step=path, hints=hints, tool=tool, names=names, principal=principal)
    if decision.problem:
        return diagnostic(
            "E400", "unjudged", at, step=path, hints=hints, tool=tool, principal=principal, problem=decision.problem
        )
    return diagnostic("E400", "no_permit", at, step=path, hints=hints, tool=tool, principal=principal, policy=policy.path.name)


def _blamed_argument(step: ast.Step, decision: Decision) -> Span:
    """Where a denial points: at the value of the first argument the forbids that denied the call read (an
    organisation the principal does not belong to), else at the step's tool."""
    read = {name for rule in decision.policies if rule.effect == "forbid" for name in rule.reads}
    if decision.allowed or decision.failed or decision.problem:
        return step.tool.span
    return next((arg.value.span for arg in step.args if arg.name.text in read), step.tool.span)


FLOW_HINT = (
    'labels say where a value came from (docs/policy.md, "Where values came from"); only a person lets '
    "such a call through: `planc run --approve` asks before it"
)


@attrs.frozen
class Blame:
    """What a call was denied for: the labels of `argument` ("" for its control labels), and the
    references in it that carry them, each as (node, labels, where the value came from)."""

    argument: str
    labels: frozenset[str]
    carriers: tuple = ()


def flow_denial(
    step: ast.Step,
    path: str,
    decision: Decision,
    principal: str,
    policy: Policy,
    caller: tuple[ast.Step, str, bool, str] | None,
    blame: Blame,
    approvals: bool = False,
    tool: str | None = None,
) -> Diagnostic:
    """E400 for a call denied for where a value came from: at the reference that carries the labels, with
    the step and tool the value came from. With `approvals` (a person will be asked when the run reaches
    it), W505 instead."""
    labels = ", ".join(sorted(blame.labels))
    rules = [f"`{rule.name}`" for rule in decision.policies]
    names = (
        f"polic{'ies' if len(rules) > 1 else 'y'} {' and '.join(rules)}"
        if rules
        else f"{policy.path.name} (no policy of it permits it)"
    )
    hints = [rule.reason for rule in decision.policies if rule.reason and rule.effect == "forbid"]
    for _, carried, origin in blame.carriers:
        what = f"`{blame.argument}` reads {origin}" if blame.argument else f"whether it runs is decided by {origin}"
        hints.append(f"{what} ({', '.join(sorted(carried))})")
    if not approvals:
        hints.append(FLOW_HINT)
    at = blame.carriers[0][0].span if blame.carriers else step.tool.span
    tool = tool or step.tool.text
    if caller is not None:  # a step of a declared plan: the error is the calling step's
        where = step.tool.span.start
        hints.insert(0, f"step {path} is `{tool}` in {caller[3]}, line {where.line}, column {where.column}, which this step runs")
        at = caller[0].tool.span
    said: dict[str, Any] = {"step": path, "hints": hints, "tool": tool, "names": names, "principal": principal, "labels": labels}
    if not blame.argument:
        if approvals:
            return diagnostic("W505", "control", at, **said)
        return diagnostic("E400", "control", at, **said)
    if approvals:
        return diagnostic("W505", "flow", at, argument=blame.argument, **said)
    return diagnostic("E400", "flow", at, argument=blame.argument, **said)


def flow_blame(policy: Policy, principal: str, ask: Ask, call: CallFlow | None) -> Blame | None:
    """What the denial of `ask` is owed to when it is where its values came from (`call` is the flow pass's
    `CallFlow` of the step, for the references that carry the labels); None otherwise."""
    argument = blamed_labels(policy, principal, ask)
    if argument is None:
        return None
    if argument:
        found = call.carriers(argument) if call is not None else []
        return Blame(argument, ask.sources[argument], tuple(found))
    return Blame("", ask.control, tuple(call.control_carriers()) if call is not None else ())
