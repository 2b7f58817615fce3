"""From a task to a checked plan (`planc plan`, `planc.plan`): the model writes, planc checks, and the
diagnostics go back into the same conversation until the plan checks or the rounds run out.

Round one sends the system prompt for the registry and the task to the `planner` model role
(falling back to `default`). Each reply is extracted (a fenced block, or the lines that are
steps), checked with everything `planc check` uses (registry, policy, principal, budgets), and,
when it has errors, answered with the repair rendering of its diagnostics. Every inference goes
through the recorder when there is one, at the step path `plan`, so the run store keeps the whole
exchange and a replay reproduces it with no model.

The system prompt and the check of each round are made with the shapes the run store has learned of the
tools' results by then (`shapes`, read anew each round), so a round sees what calls made since the
last one returned. That reading is recorded like a call (tool `planc:learned_shapes`, input the round),
so a replay is shown the same shapes the run was.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import attrs

from planc.backend.calls.dispatch import recorded_call
from planc.backend.calls.hooks import Call, Skip
from planc.backend.models.model_calls import StepModel
from planc.diagnostics.render_repair import render_repair
from planc.passes.check import CheckResult, check
from planc.passes.cost.budget import Budget
from planc.passes.policy.load import Policy
from planc.planning.prompt import forbidden, system_prompt
from planc.registry.loading.registry import Registry
from planc.registry.tools.learned_shapes import LearnedShape
from planc.registry.tools.tool import Effects, Tool

if TYPE_CHECKING:
    from planc.backend.calls.run_view import Recorder

ROLE = "planner"
ROUNDS = 3
PATH = "plan"  # the step path the planning inferences are recorded at
GRAMMAR_FORMATS = ("lark", "gbnf")
REPAIR_OPENING = "Your plan has "  # how every repair message begins (diagnostics.render_repair)
# Reading the run store's learned shapes at a round, recorded like a call so that a replay reads the same.
READ_SHAPES = Tool(
    "planc:learned_shapes",
    provider="control",
    labels=(),
    effects=Effects(read_only=True, idempotent=True, destructive=False, open_world=False),
)


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


async def plan_async(
    task: str,
    *,
    registry: Registry | None,
    policy: Policy | None = None,
    principal: str | None = None,
    budget: Budget = Budget(),
    role: str = ROLE,
    rounds: int = ROUNDS,
    grammar: str | None = None,
    recorder: Recorder | None = None,
    shapes: Callable[[], Mapping[str, LearnedShape]] | None = None,
) -> Planned:
    """Ask the `role` model for a plan that does `task`, repairing it in the same conversation up to
    `rounds` times in all. `grammar` ("lark" or "gbnf") sends the plan language's grammar, specialised to
    the registry, with each request, for an endpoint that constrains its output to it. `shapes` gives the
    shapes learned of the tools' results (`RunStore.learned_shapes`), read at each round; a replay's
    recorder answers it from the record."""
    from planc.backend.models.client import ModelClient

    if rounds < 1:
        raise ValueError("planning needs at least one round")
    if registry is None:
        raise ValueError("planning needs a registry: the tools to plan with and the models to ask")
    from planc.backend.models.client import role_config

    messages: list[dict] = [{"role": "system", "content": ""}, {"role": "user", "content": task}]
    model = StepModel(lambda: ModelClient.for_role(registry, role), role, PATH, recorder, config=role_config(registry, role))
    # The tools the policy always forbids are left out of the grammar as they are out of the prompt.
    refused = forbidden(list(registry.tools.values()), policy, principal)
    extra = grammar_request(registry.without(refused), grammar) if grammar is not None else None
    done: list[Round] = []
    try:
        for number in range(1, rounds + 1):
            learned = await learned_registry(registry, shapes, recorder, number)
            messages[0] = {
                "role": "system",
                "content": system_prompt(learned, fenced=grammar is None, policy=policy, principal=principal, task=task),
            }
            reply = await model.chat(messages, extra=extra)
            text = reply.content or ""
            if grammar is not None:
                text = complete_pipelines(text)
            checked = check(
                "" if echoes(text, messages[-1]["content"]) else text,
                extract_plan=True,
                registry=learned,
                policy=policy,
                principal=principal,
                max_usd=budget.usd,
                max_calls=budget.calls,
                max_inferences=budget.inferences,
            )
            if checked.ok or number == rounds:
                done.append(Round(text, checked))
                break
            repair = render_repair(checked.source, checked.diagnostics)
            done.append(Round(text, checked, repair))
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": repair}]
    finally:
        await model.aclose()
    return Planned(task, tuple(done))


async def learned_registry(
    registry: Registry, shapes: Callable[[], Mapping[str, LearnedShape]] | None, recorder: Recorder | None, number: int
) -> Registry:
    """`registry` with the shapes `shapes()` gives now, read for round `number` (and recorded, or answered by
    the record); as it is when no tool learns a shape or there is nothing to read them from."""
    if shapes is None or not any(tool.learns for tool in registry.tools.values()):
        return registry
    call = Call(PATH, READ_SHAPES, {"round": number})
    replayed = recorder.replayed(call, None) if recorder is not None else None
    if isinstance(replayed, Skip):  # a read is never approved (Proceed): it is no tool call
        read = cast(dict, replayed.result)  # recorded as `now` gives it
    else:

        async def now() -> dict:
            return {name: {"schema": dict(shape.schema), "calls": shape.calls} for name, shape in shapes().items()}

        read = await recorded_call(recorder, call, now, what="the learned shapes", explain=lambda error: error, limit_bytes=None)
    return registry.learning({name: LearnedShape(name, kept["schema"], kept["calls"]) for name, kept in read.items()})


def complete_pipelines(text: str) -> str:
    r"""A reply written under the decoder grammar, without the pipeline the token limit cut off, and
    without a loop: from the first pipeline that repeats an earlier one word for word, the rest goes.

    Under the grammar every pipeline ends with a newline and the next one starts at the beginning of
    a line with its first step's label or tool (a block's closing `}` is on a line of its own,
    indented as its step), so a reply that does not end with a newline stopped in its last pipeline: what is before
    that one's first line is the plan the model finished (maybe nothing). A greedy decoder that has
    written a pipeline again is in a loop it leaves only at its token limit (with a label, the loop
    is an error at every turn, E205): what it wrote before the loop is its plan.

    >>> complete_pipelines('a()\nb(x: 1)\n  |> c(y: "unfini')
    'a()\n'
    >>> complete_pipelines('a()\n')
    'a()\n'
    >>> complete_pipelines('x = a()\nb(y: $x)\nx = a()\nb(y: $x)\nx = a()\nb(y')
    'x = a()\nb(y: $x)\n'
    >>> complete_pipelines('d(then: {\n  a()\n  b()\n})\nd(then: {\n  c()\n  b()\n})\n') .count('d(')
    2
    """
    if not text.endswith("\n"):
        starts = [m.start() for m in re.finditer(r"\n(?=[A-Za-z_])", text)]
        text = text[: starts[-1] + 1] if starts else ""
    pipelines = re.split(r"(?<=\n)(?=[A-Za-z_])", text)  # a pipeline's first line begins with a name
    written: list[str] = []
    for pipeline in pipelines:
        if pipeline in written:
            break
        written.append(pipeline)
    return "".join(written)


def echoes(reply: str, repair: str) -> bool:
    r"""Whether `reply` repeats a repair message (a line of its prose, or most of it) rather than answering
    it: small models do, and the plan lines the message quotes would then be checked as the answer.
    The first message, the task, cannot be echoed: a task may well be a plan.

    >>> sent = "Your plan has 1 problem. Fix it and send the whole corrected plan again.\n\n1. x"
    >>> echoes("Your plan has 1 problem. Fix it and send the whole corrected plan again.", sent)
    True
    >>> echoes("search(query: \"disk\")", sent)
    False
    """
    if not repair.startswith(REPAIR_OPENING):
        return False
    prose = {line.strip() for line in repair.splitlines() if len(line.strip()) > 30 and "`" not in line}
    return any(line.strip() in prose for line in reply.splitlines())


def plan(task: str, **options: Any) -> Planned:
    """`plan_async` run to its end; the options are the same.

    A ModelError when the model cannot be reached or answered (transient errors are tried again first).
    Inside a running event loop, await `plan_async` instead (a RuntimeError says so).
    """
    from planc.backend.state.interrupts import refuse_inside_a_loop

    coroutine = plan_async(task, **options)
    refuse_inside_a_loop(coroutine)
    return asyncio.run(coroutine)


def grammar_request(registry: Registry | None, grammar: str) -> Mapping:
    """The request fields that carry the grammar: llama.cpp's `grammar` for GBNF, the `structured_outputs`
    grammar of vLLM (and other servers built on llguidance) for its Lark dialect."""
    if grammar not in GRAMMAR_FORMATS:
        raise ValueError(f"the grammar formats are {', '.join(GRAMMAR_FORMATS)}, not {grammar!r}")
    from planc.decoding import export_grammar

    text = export_grammar(registry=registry, format=grammar)
    return {"grammar": text} if grammar == "gbnf" else {"structured_outputs": {"grammar": text}}
