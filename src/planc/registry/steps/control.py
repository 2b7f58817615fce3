"""What every control step's declaration is made of (each is one module of this folder, named after
its step, holding `STEP`): its signature, built like a tool's; its type rule, its cost rule and its
flow rule; and the pieces those share.

- The type rule is `result(inputs, literals) -> schema | None`: the type of its result from the
  types of its inputs (`then`/`else`/`do` the types of their blocks' results) and its literal
  inputs.
- The cost rule is `cost(coster, step) -> run`: what it costs itself and what it runs, with the cost
  pass's walk (`planc.passes.cost.cost.Coster`).
- The flow rule is `flow(walk, step, env, views, control) -> labels`: what its result carries
  besides what any call's result carries (its arguments' labels and its control labels), and what
  the steps in its blocks are given; `views` holds the labels of its value arguments (its piped
  input under its pipe parameter), `control` the labels that decide whether it runs. Blocks are
  walked with `walk.block` (once) or `walk.loop` (once per item). None: it carries only what any
  call carries. Its run-time handler (`backend/run/steps/`) adds the same labels from what really
  ran.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from planc.registry.provenance.control import Decided, Loop
from planc.registry.provenance.expressions import Env, expr_labels
from planc.registry.provenance.labels import NO_LABELS, LabelView, union
from planc.registry.tools.schemas import LIST
from planc.registry.tools.tool import BLOCK, CONDITION, Effects, Tool
from planc.syntax import ast
from planc.syntax.steps import deciding

if TYPE_CHECKING:  # the flow pass's walk, which a flow rule is handed
    from planc.passes.flow.flow import PlanEnv, Walk

__all__ = [
    "ANY",
    "BLOCK",
    "CONDITION",
    "CONTROL",
    "ITEM_FIELDS",
    "LIST",
    "STRING",
    "ControlStep",
    "condition_labels",
    "deciding_value",
    "keep_bound",
    "looped",
    "signature",
]

# What a filter condition binds: a bare name there is a field of the item.
ITEM_FIELDS = "fields of the item"

ANY: dict = {}
STRING = {"type": "string"}
CONTROL = Effects(read_only=True, deterministic=True, idempotent=True, destructive=False, open_world=False)


@attrs.frozen
class ControlStep:
    """One control step, declared once: what the resolve, types, cost and flow passes know of it."""

    tool: Tool  # its signature: parameters (conditions, blocks), pipe, groups, what blocks bind
    result: Callable[[Mapping, Mapping], Mapping | None]  # its type rule
    cost: Callable  # its cost rule: (the cost pass's walk, the step) -> what it and its blocks cost
    flow: Callable | None  # its flow rule; None: its result carries only what any call's carries
    rank: int  # its place in the language reference (docs/language.md) and in `CONTROL_STEPS`


def signature(
    name: str,
    description: str,
    params: Mapping[str, Mapping],
    required: Sequence[str] = (),
    pipe: str | None = None,
    one_of: Sequence[tuple[str, ...]] = (),
    at_most_one: Sequence[tuple[str, ...]] = (),
    required_when: Sequence[tuple[str, object, str]] = (),
    binds: Mapping[str, tuple[str, ...]] | None = None,
    effects: Effects = CONTROL,
) -> Tool:
    """A control step's signature, as a tool's: planc runs it itself, and its result carries no
    label of its own."""
    return Tool(
        name=name,
        params=params,
        required=tuple(required),
        pipe=pipe,
        one_of=tuple(one_of),
        at_most_one=tuple(at_most_one),
        required_when=tuple(required_when),
        binds=binds or {},
        effects=effects,
        provider="control",
        description=description,
        labels=(),
    )


def condition_labels(step: ast.Step, env: Env) -> frozenset[str]:
    """The labels of what decides: the `when` condition, or the `infer` question put to the judge."""
    decides = deciding_value(step)
    return expr_labels(decides, env) if decides is not None else NO_LABELS


def deciding_value(step: ast.Step) -> ast.Expr | None:
    arg = deciding(step)
    return arg.value if arg is not None else None


def looped(walk: Walk, step: ast.Step, env: PlanEnv, inner: PlanEnv, loop: Loop, control: frozenset[str]) -> LabelView:
    """Walk `step`'s `do` block, once per item of the list `loop` goes over, which decides how often
    every step in it runs."""
    where = f"the list that `{step.tool.text}` at step {env.paths.get(step, '?')} goes over"
    decider = Decided(step.tool, loop.control, f"how many items {where} has, and in what order")
    inside = union(control, loop.control)
    return walk.decided_by(decider, lambda: walk.loop(step, "do", inner, inside))


def keep_bound(result: dict, over: object) -> dict:
    """`result` with the list bound of `over`: a map or filter has at most as many items."""
    if isinstance(over, Mapping) and isinstance(over.get("maxItems"), int):
        result["maxItems"] = over["maxItems"]
    return result
