"""E400: why the policy denied a call, in the same words at check time and at run time.

The policy pass reports it at the step's tool; the interpreter, which asks the policy again
with the real values before every call, stops the run with its message.
"""

from __future__ import annotations

from planc.diagnostics import Diagnostic
from planc.diagnostics.build import diagnostic
from planc.passes.policy.decide import Decision
from planc.passes.policy.load import Policy
from planc.syntax import ast

UNEVALUATED = ("a policy that cannot be evaluated for a call denies it: a value of another type than the policy "
               "expects (a decimal for a whole number, a set for a string) is the usual cause")


def denial(step: ast.Step, path: str, decision: Decision, principal: str, policy: Policy,
           caller: tuple[ast.Step, str, bool, str] | None = None, tool: str | None = None) -> Diagnostic:
    """E400 at `step`'s tool (step path `path`) for the call `decision` denied, asked by `principal` of `policy`.

    `caller` is, for a step of a declared plan, (the calling step, its path, whether it runs per
    item, the plan's file as written): the error is then the calling step's. `tool` names the tool called
    when it is not the step's own (a call an `agent` step's model chose).
    """
    hints = [rule.reason for rule in decision.policies if rule.reason and rule.effect == "forbid"]
    if not decision.policies and not decision.problem:
        hints.append("a call is allowed only when some `permit` policy matches it and no `forbid` policy does")
    if decision.failed:
        hints.append(UNEVALUATED)
    dynamic = decision.request["context"]["dynamic"]
    if dynamic:
        listed = ", ".join(f"`{arg}`" for arg in dynamic)
        hints.append(f"{listed} {'is' if len(dynamic) == 1 else 'are'} only known at run time: "
                     "named in `context.dynamic`, with no value in `context.args`")
    at, tool = step.tool.span, tool or step.tool.text
    if caller is not None:  # a step of a declared plan: the error is the calling step's
        where = step.tool.span.start
        hints.insert(0, f"step {path} is `{tool}` in {caller[3]}, line {where.line}, column {where.column}, "
                        f"which this step runs")
        at = caller[0].tool.span
    names = " and ".join(f"`{rule.name}`" for rule in decision.policies)
    if len(decision.failed) > 1:
        errors = "; ".join(f"`{rule.name}`: {error}" for rule, error in decision.failed)
        return diagnostic("E400", "unevaluated_many", at, step=path, hints=hints, tool=tool, names=names,
                          principal=principal, errors=errors)
    if decision.failed:
        return diagnostic("E400", "unevaluated", at, step=path, hints=hints, tool=tool, names=names,
                          principal=principal, error=decision.failed[0][1])
    if len(decision.policies) > 1:
        return diagnostic("E400", "forbidden_many", at, step=path, hints=hints, tool=tool, names=names,
                          principal=principal)
    if decision.policies:
        return diagnostic("E400", "forbidden", at, step=path, hints=hints, tool=tool, names=names, principal=principal)
    if decision.problem:
        return diagnostic("E400", "unjudged", at, step=path, hints=hints, tool=tool, principal=principal,
                          problem=decision.problem)
    return diagnostic("E400", "no_permit", at, step=path, hints=hints, tool=tool, principal=principal,
                      policy=policy.path.name)
