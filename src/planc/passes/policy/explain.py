"""`planc policy explain`: per step, what the policy decided and which policies decided it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planc.passes.check import CheckResult
from planc.passes.policy.decide import Decision
from planc.passes.policy.load import Policy

if TYPE_CHECKING:
    from rich.table import Table


def explain_json(result: CheckResult, policy: Policy, principal: str) -> dict:
    """`{"policy", "principal", "steps": [{"step", "tool", "allowed", "decided_by", "errors", "problem", "request"}]}`.

    A step whose tool is unknown has `allowed: null`: it was not put to the policy.
    """
    assert result.resolution is not None and result.policy is not None, "a plan that parsed is explained"
    steps = []
    for step, path in result.resolution.paths.items():
        decision = result.policy.decisions.get(step)
        entry = {"step": path, "tool": step.tool.text, "allowed": decision.allowed if decision else None}
        if decision is not None:
            entry |= {
                "decided_by": [{"id": rule.name, "effect": rule.effect, "line": rule.line} for rule in decision.policies],
                "errors": list(decision.errors),
                "problem": decision.problem,
                "request": decision.request,
            }
        steps.append(entry)
    return {"policy": str(policy.path), "principal": principal, "steps": steps}


def explain_table(result: CheckResult, policy: Policy, principal: str) -> Table:
    """The same as a rich table."""
    from rich.table import Table
    from rich.text import Text  # names and messages are plain text, never markup

    table = Table(title=Text(f"{policy.path} for {principal}"), title_justify="left")
    for column in ("step", "tool", "decision", "decided by", "notes"):
        table.add_column(column)
    assert result.resolution is not None and result.policy is not None, "a plan that parsed is explained"
    for step, path in result.resolution.paths.items():
        decision = result.policy.decisions.get(step)
        if decision is None:
            table.add_row(path, step.tool.text, "-", "", "unknown tool: not judged")
            continue
        verdict = Text("allow", "green") if decision.allowed else Text("deny", "bold red")
        table.add_row(path, step.tool.text, verdict, Text(_decided_by(decision, policy)), Text("\n".join(_notes(decision))))
    return table


def _decided_by(decision: Decision, policy: Policy) -> str:
    if decision.failed:  # they deny because they could not be evaluated, whatever their effect
        return "\n".join(f"{rule.name} (line {rule.line}): could not be evaluated" for rule, _ in decision.failed)
    if decision.policies:
        return "\n".join(f"{rule.effect} {rule.name} (line {rule.line})" for rule in decision.policies)
    return "" if decision.problem else f"no permit in {policy.path.name}"


def _notes(decision: Decision) -> list[str]:
    context = decision.request["context"]
    notes = [f"run time: {', '.join(context['dynamic'])}"] if context["dynamic"] else []
    if context["in_loop"]:
        notes.append("once per item")
    if decision.problem:
        notes.append(decision.problem)
    return notes + list(decision.errors)
