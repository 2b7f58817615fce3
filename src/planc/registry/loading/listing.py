"""`planc registry list`: the tools as data and as a rich table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from planc.registry.loading.registry import Registry
from planc.registry.tools.signatures import type_text
from planc.registry.tools.tool import Tool

if TYPE_CHECKING:
    from rich.table import Table


def registry_json(registry: Registry) -> dict:
    """Every declared tool (control steps aside): parameters, pipe, returns, effects, cost, where it takes
    each call's idempotency key, and the labels its results carry."""
    return {
        "config": str(registry.source) if registry.source else None,
        "tools": [_tool_json(registry.tools[name]) for name in sorted(registry.tools)],
    }


def _tool_json(tool: Tool) -> dict:
    return {
        "name": tool.name,
        "description": tool.description,
        "provider": tool.provider,
        "params": dict(tool.params),
        "required": list(tool.required),
        "pipe": tool.pipe,
        "returns": tool.returns,
        "returns_at_most": tool.returns_at_most,
        "effects": attrs.asdict(tool.effects.normalised(), filter=lambda field, _: bool(field.eq)),
        "cost": attrs.asdict(tool.cost),
        "idempotency_key": tool.idempotency_key,
        "labels": sorted(tool.labels),
    }


def registry_table(registry: Registry) -> Table:
    from rich.table import Table

    table = Table(title=f"tools in {registry.source}" if registry.source else "tools")
    for column in ("tool", "parameters", "pipe", "effects", "labels", "provider"):
        table.add_column(column)
    for name in sorted(registry.tools):
        tool = registry.tools[name]
        params = ", ".join(f"{p}{'*' if p in tool.required else ''}: {type_text(s)}" for p, s in tool.params.items())
        table.add_row(
            name, params, tool.pipe or "", _effects(tool), ", ".join(sorted(tool.labels)) or "none (trusted)", tool.provider
        )
    return table


def _effects(tool: Tool) -> str:
    flags = attrs.asdict(tool.effects.normalised(), filter=lambda field, _: bool(field.eq))
    return " ".join(name.replace("_", "-") for name, on in flags.items() if on) or "none"
