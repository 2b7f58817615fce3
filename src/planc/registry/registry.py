"""The registry: every tool a plan may call, by name."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from planc.registry.builtins import CONTROL_STEPS
from planc.registry.tool import Tool


@attrs.frozen
class Registry:
    """Declared tools (planc.toml, the MCP lock, plans); the control steps are always there too."""

    tools: Mapping[str, Tool] = attrs.field(factory=dict)
    source: Path | None = None  # the planc.toml it was loaded from
    mcp: Mapping[str, Mapping] = attrs.field(factory=dict)  # server name -> its [mcp.NAME] table
    plans: Mapping[str, Mapping] = attrs.field(factory=dict)  # plan name -> its [plans.NAME] table
    models: Mapping[str, Mapping] = attrs.field(factory=dict)
    policy: str | None = None
    store: str | None = None

    def lookup(self, name: str) -> Tool | None:
        return CONTROL_STEPS.get(name) or self.tools.get(name)

    def names(self) -> list[str]:
        return sorted({*CONTROL_STEPS, *self.tools})

    def plan_arguments(self, file: Path) -> Mapping[str, Mapping] | None:
        """The `params` that type `$args` when `file` is a plan declared under `[plans.NAME]`."""
        folder = self.source.parent if self.source else Path.cwd()
        for table in self.plans.values():
            if (folder / table["file"]).resolve() == file.resolve():
                return table.get("params", {})
        return None
