"""The tools an `agent` step may call (its `tools` and its `check`), the conversation it continues, and what
calling them may do."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from planc.registry.loading.registry import Registry
from planc.registry.steps.agent import continued
from planc.registry.steps.builtins import agent_check, agent_patterns
from planc.registry.tools.tool import Effects, Tool
from planc.syntax import ast


def agent_tools(
    step: ast.Step, registry: Registry | None, targets: Mapping | None = None, plans: Mapping | None = None
) -> list[Tool] | None:
    """The registry's tools that the agent `step` may call; None when they are not known before it runs.

    `tools` names them, or matches them with `*` patterns; without `tools` the
    agent may call every tool, unless it continues a conversation: then it offers
    the tools of the conversation's first step (found through `targets`, the
    resolve pass's; without them, every tool). Without a registry, or with a
    `tools` list that is not literal, they are unknown. With `plans` (the
    declared plans checked with the plan), a declared plan that is not among
    them, or has errors, is left out: it cannot run (it leads back to itself).
    """
    if registry is None:
        return None
    first = conversation_start(step, targets) if targets is not None and step.arg("tools") is None else None
    patterns = agent_patterns(first if first is not None else step)
    if patterns is None:
        return None
    return [tool for tool in matching_tools(registry, patterns) if runnable(tool, plans)]


def agent_check_tool(step: ast.Step, registry: Registry | None) -> Tool | None:
    """The tool the agent `step`'s `check` names, when it has one the registry knows."""
    name = agent_check(step)
    return registry.tools.get(name) if registry is not None and name is not None else None


def runnable(tool: Tool, plans: Mapping | None) -> bool:
    """Whether `tool` can be called in a run whose declared plans are `plans` (None: any can)."""
    if plans is None or tool.kind != "plan":
        return True
    checked = plans.get(tool.address)
    return checked is not None and checked.ok


def conversation_start(step: ast.Step, targets: Mapping) -> ast.Step | None:
    """The agent step whose conversation `step` continues, followed back to the step that began it; None
    when `step` does not continue one (or its `continue` is not a reference to an agent step).

    >>> from planc.passes.check import check
    >>> plan = 'a = agent(prompt: "x", output_schema: {type: "object"})\\n' \\
    ...        'b = agent(prompt: "y", output_schema: {type: "object"}, continue: $a)\\n' \\
    ...        'agent(prompt: "z", output_schema: {type: "object"}, continue: $b)'
    >>> result = check(plan)
    >>> [step.label.text for step in (conversation_start(s, result.resolution.targets)
    ...                               for p in result.plan.pipelines for s in p.steps) if step is not None]
    ['a', 'a']
    """
    first = None
    while True:
        earlier = continued(step, targets)
        if earlier is None:
            return first
        first = step = earlier


def matching_tools(registry: Registry, patterns: Iterable[str]) -> list[Tool]:
    """The registry's tools whose names match any of `patterns` (names, or names with `*`)."""
    return [
        registry.tools[name] for name in sorted(registry.tools) if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    ]


def call_effects(
    step: ast.Step, tool: Tool, registry: Registry | None, targets: Mapping | None = None, plans: Mapping | None = None
) -> Effects:
    """What calling `tool` at `step` may do, as every reader takes it: its declared effects, normalised; for an
    `agent` step, what the tools it may call (and its check) may do, so an agent with read-only tools, or
    none, is read-only."""
    if tool.name == "agent" and tool.kind == "control":
        return agent_effects(agent_tools(step, registry, targets, plans), agent_check_tool(step, registry))
    return tool.effects.normalised()


def agent_effects(tools: list[Tool] | None, check: Tool | None = None) -> Effects:
    """What an agent that may call `tools` and `check` may do: what any of them may do (None: anything)."""
    if tools is None:
        return Effects()
    every = [tool.effects.normalised() for tool in (*tools, *([check] if check is not None else []))]
    return Effects(
        read_only=all(e.read_only for e in every),
        deterministic=False,  # a model answers
        idempotent=all(e.idempotent for e in every),
        destructive=any(e.destructive for e in every),
        open_world=any(e.open_world for e in every),
    )
