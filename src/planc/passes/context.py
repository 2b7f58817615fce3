"""What every pass may consult besides the tree: the inputs of a check, and the facts of earlier passes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from planc.passes.cost.budget import Budget
from planc.passes.policy.load import DEFAULT_PRINCIPAL, Policy
from planc.registry.loading.registry import Registry

if TYPE_CHECKING:  # the facts' types belong to their passes, which import this module
    from planc.passes.check import CheckResult
    from planc.passes.cost.cost import CostReport
    from planc.passes.flow.flow import FlowFacts
    from planc.passes.policy.policy import PolicyFacts
    from planc.passes.resolve.resolve import Resolution
    from planc.passes.types.types import Typing


@attrs.frozen
class Facts:
    """What the passes learned, one field per pass, each filled once the pass has run."""

    resolution: Resolution | None = None
    typing: Typing | None = None
    flow: FlowFacts | None = None
    policy: PolicyFacts | None = None
    cost: CostReport | None = None


@attrs.frozen
class CheckContext:
    """The inputs of a check, and what the passes that already ran learned (`facts`).

    Without a registry only the control steps are known, and a plan may call any
    other tool with any arguments: `planc check` still catches every syntax and
    reference error.

    `arguments` types the plan's `$args`: the JSON Schema of each run argument,
    when the plan being checked is declared under `[plans.NAME]` with `params`.
    None (the default) leaves `$args.NAME` untyped.

    `plans` holds the declared plans this plan calls, directly or through other
    plans, each checked on its own (by name; a plan in a cycle is left out).

    `policy` (a loaded Cedar policy file) judges every step as a call by
    `principal` (a Cedar entity, `User::"anonymous"` by default); None: no policy pass.

    `budget` is the most the plan may cost (`--max-usd`, `--max-calls`,
    `--max-inferences`); the cost pass reports E401 past it.

    `approvals` says that a person will be asked before each call the policy refuses only for where its
    values came from (`planc run --approve`): such a call is then W505, not E400.

    `written_by` are the labels of whoever wrote the plan, which its literals and `$args` carry: none for a
    plan file or a task's plan, those planc.toml gives an MCP client's plan (`planc mcp`).
    """

    source: str = ""
    registry: Registry | None = None
    facts: Facts = Facts()
    arguments: Mapping[str, Mapping] | None = None
    plans: Mapping[str, CheckResult] = attrs.field(factory=dict)
    policy: Policy | None = None
    principal: str = DEFAULT_PRINCIPAL
    budget: Budget = Budget()
    approvals: bool = False  # a person will be asked about each flagged call when the run reaches it
    written_by: frozenset[str] = frozenset()  # what the plan's literals and `$args` carry

    def learned(self, field: str) -> Any:
        """What an earlier pass learned (`resolution`, `typing`, ...). A pass never runs another: the
        check runs them in order, so what a pass reads is always there."""
        found = getattr(self.facts, field)
        if found is None:
            raise ValueError(f"no `{field}` yet: the passes run in the order of planc.passes.check.PASSES")
        return found
