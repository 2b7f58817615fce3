"""What every pass may consult besides the tree."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from planc.passes.cost.budget import Budget
from planc.passes.policy.load import DEFAULT_PRINCIPAL, Policy
from planc.registry.registry import Registry


@attrs.frozen
class CheckContext:
    """The inputs of a check. Later passes add the policy and budgets.

    Without a registry only the control steps are known, and a plan may call any
    other tool with any arguments: `planc check` still catches every syntax and
    reference error.

    `facts` holds what the passes that already ran learned, by pass name
    (`"resolve"` -> its `Resolution`): `planc.check` adds each pass's facts
    before the next pass runs, so a pass reads the earlier ones from here.

    `arguments` types the plan's `$args`: the JSON Schema of each run argument,
    when the plan being checked is declared under `[plans.NAME]` with `params`.
    None (the default) leaves `$args.NAME` untyped.

    `policy` (a loaded Cedar policy file) judges every step as a call by
    `principal` (a Cedar entity, `User::"anonymous"` by default); None: no policy pass.

    `budget` is the most the plan may cost (`--max-usd`, `--max-calls`,
    `--max-inferences`); the cost pass reports E401 past it.
    """

    source: str = ""
    registry: Registry | None = None
    facts: Mapping[str, object] = attrs.field(factory=dict)
    arguments: Mapping[str, Mapping] | None = None
    policy: Policy | None = None
    principal: str = DEFAULT_PRINCIPAL
    budget: Budget = Budget()
