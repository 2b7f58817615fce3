"""The tools an `agent` step may call, and what calling them may do."""

from __future__ import annotations

import fnmatch

from planc.registry.registry import Registry
from planc.registry.tool import Effects, Tool
from planc.syntax import ast


def agent_tools(step: ast.Step, registry: Registry | None) -> list[Tool] | None:
    """The registry's tools that the agent `step` may call; None when they are not known before it runs.

    `tools` names them, or matches them with `*` patterns; without `tools` the
    agent may call every tool. Without a registry, or with a `tools` list that
    is not literal, they are unknown.
    """
    if registry is None:
        return None
    arg = step.arg("tools")
    if arg is None:
        return matching_tools(registry, ["*"])
    if type(arg.value) is not ast.ListExpr:
        return None
    patterns = [item.text for item in arg.value.items if type(item) is ast.String]
    if None in patterns or len(patterns) != len(arg.value.items):
        return None
    return matching_tools(registry, patterns)


def matching_tools(registry: Registry, patterns) -> list[Tool]:
    """The registry's tools whose names match any of `patterns` (names, or names with `*`)."""
    return [registry.tools[name] for name in sorted(registry.tools)
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]


def agent_effects(tools: list[Tool] | None) -> Effects:
    """What an agent that may call `tools` may do: what any of them may do (None: anything)."""
    if tools is None:
        return Effects()
    every = [tool.effects for tool in tools]
    return Effects(read_only=all(e.read_only for e in every), deterministic=False,  # a model answers
                   idempotent=all(e.idempotent for e in every), destructive=any(e.destructive for e in every),
                   open_world=any(e.open_world for e in every))
