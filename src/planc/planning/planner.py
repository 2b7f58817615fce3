"""From a task to a checked plan (`planc plan`, `planc.plan`): the model writes, planc checks, and the
diagnostics go back into the same conversation until the plan checks or the rounds run out.

Round one sends the system prompt for the registry and the task to the `planner` model role
(falling back to `default`). Each reply is extracted (a fenced block, or the lines that are
steps), checked with everything `planc check` uses (registry, policy, principal, budgets), and,
when it has errors, answered with the repair rendering of its diagnostics. Every inference goes
through the recorder when there is one, at the step path `plan`, so the run store keeps the whole
exchange and a replay reproduces it with no model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import attrs

from planc.backend.model_calls import StepModel
from planc.diagnostics.render_repair import render_repair
from planc.passes.check import CheckResult, check
from planc.passes.cost.budget import Budget
from planc.passes.policy.load import Policy
from planc.planning.prompt import system_prompt
from planc.registry.registry import Registry

ROLE = "planner"
ROUNDS = 3
PATH = "plan"  # the step path the planning inferences are recorded at
GRAMMAR_FORMATS = ("lark", "gbnf")


@attrs.frozen
class Round:
    """One round of the loop: what the model answered, and the plan in it as checked."""

    reply: str
    checked: CheckResult
    repair: str | None = None  # what went back to the model; None when the plan checked, or no round was left


@attrs.frozen
class Planned:
    """The outcome of planning a task: every round, the last one's plan as checked."""

    task: str
    rounds: tuple[Round, ...]

    @property
    def checked(self) -> CheckResult:
        return self.rounds[-1].checked

    @property
    def ok(self) -> bool:
        return self.checked.ok

    @property
    def text(self) -> str | None:
        """The checked plan in canonical form, its comments kept; None when it did not check."""
        if not self.ok:
            return None
        from planc.syntax.extract import extract
        from planc.syntax.format import format_source
        from planc.syntax.parser import parse

        return format_source(parse(extract(self.checked.source).strip("\n") + "\n"))


async def plan_async(task: str, *, registry: Registry | None, policy: Policy | None = None,
                     principal: str | None = None, budget: Budget = Budget(), role: str = ROLE,
                     rounds: int = ROUNDS, grammar: str | None = None, recorder=None) -> Planned:
    """Ask the `role` model for a plan that does `task`, repairing it in the same conversation up to
    `rounds` times in all. `grammar` ("lark" or "gbnf") sends the plan language's grammar, specialised to
    the registry, with each request, for an endpoint that constrains its output to it."""
    from planc.backend.models import ModelClient

    if rounds < 1:
        raise ValueError("planning needs at least one round")
    if registry is None:
        raise ValueError("planning needs a registry: the tools to plan with and the models to ask")
    messages: list[dict] = [{"role": "system", "content": system_prompt(registry, fenced=grammar is None)},
                            {"role": "user", "content": task}]
    model = StepModel(lambda: ModelClient.for_role(registry, role), role, PATH, recorder)
    extra = grammar_request(registry, grammar) if grammar is not None else None
    done: list[Round] = []
    try:
        for number in range(1, rounds + 1):
            reply = await model.chat(messages, extra=extra)
            text = reply.content or ""
            checked = check(text, extract_plan=True, registry=registry, policy=policy, principal=principal,
                            max_usd=budget.usd, max_calls=budget.calls, max_inferences=budget.inferences)
            if checked.ok or number == rounds:
                done.append(Round(text, checked))
                break
            repair = render_repair(checked.source, checked.diagnostics)
            done.append(Round(text, checked, repair))
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": repair}]
    finally:
        await model.aclose()
    return Planned(task, tuple(done))


def plan(task: str, **options) -> Planned:
    """`plan_async` run to its end; the options are the same.

    A ModelError when the model cannot be reached or answered (transient errors are tried again first).
    """
    return asyncio.run(plan_async(task, **options))


def grammar_request(registry: Registry | None, grammar: str) -> Mapping:
    """The request fields that carry the grammar: llama.cpp's `grammar` for GBNF, the `structured_outputs`
    grammar of vLLM (and other servers built on llguidance) for its Lark dialect."""
    if grammar not in GRAMMAR_FORMATS:
        raise ValueError(f"the grammar formats are {', '.join(GRAMMAR_FORMATS)}, not {grammar!r}")
    from planc.decoding import export_grammar

    text = export_grammar(registry=registry, format=grammar)
    return {"grammar": text} if grammar == "gbnf" else {"structured_outputs": {"grammar": text}}
