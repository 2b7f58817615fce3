"""The registry: every tool a plan may call, by name, and the rest of what planc.toml declares."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from pathlib import Path

import attrs

from planc.registry.loading.declared_plans import DeclaredPlans
from planc.registry.settings.declarations import (
    Budgets,
    Executor,
    Limits,
    McpServer,
    McpServing,
    ModelConfig,
    PlanDeclaration,
)
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.registry.tools.learned_shapes import LearnedShape
from planc.registry.tools.tool import Tool
from planc.syntax.printer import WIDTH

WRITABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # a step's tool, as the grammar's NAME


@attrs.frozen
class Registry:
    """Declared tools (planc.toml, the MCP lock, plans); the control steps are always there too."""

    tools: Mapping[str, Tool] = attrs.field(factory=dict)
    source: Path | None = None  # the planc.toml it was loaded from
    servers: Mapping[str, McpServer] = attrs.field(factory=dict)  # `[mcp.NAME]`
    plans: DeclaredPlans = attrs.field(factory=DeclaredPlans, eq=False)  # `[plans.NAME]`
    models: Mapping[str, ModelConfig] = attrs.field(factory=dict)  # `[models.NAME]`
    policy: Path | None = None  # `policy`: the Cedar policy file, from the folder of planc.toml
    store: Path | None = None  # `store`: the run store, from the folder of planc.toml
    limits: Limits = Limits()  # `[limits]`
    budget: Budgets = Budgets()  # `[budget]`
    principal: str | None = None  # `principal`: who plans run for, unless a command says
    principals: tuple[Mapping, ...] = ()  # `[principals]`: entities with attributes and groups, for the policy
    executor: Executor = Executor()  # `[executor]`: where the calls of `map` items are made, unless a command says
    mcp_server: McpServing = McpServing()  # `[mcp_server]`: what `planc mcp` makes of its clients' plans
    fmt_width: int = WIDTH  # `[fmt] width`: the line width `planc fmt` keeps plans within

    def lookup(self, name: str) -> Tool | None:
        return CONTROL_STEPS.get(name) or self.tools.get(name)

    def learning(self, shapes: Mapping[str, LearnedShape]) -> Registry:
        """This registry with the shapes the run store learned (`RunStore.learned_shapes`) given to the tools
        that learn them (`Tool.learns`); the others are as they are."""
        learned = {
            name: attrs.evolve(tool, learned=shapes[name]) for name, tool in self.tools.items() if name in shapes and tool.learns
        }
        return attrs.evolve(self, tools={**self.tools, **learned}) if learned else self

    def without(self, names: Collection[str]) -> Registry:
        """This registry without the tools `names` (the control steps stay)."""
        return attrs.evolve(self, tools={name: tool for name, tool in self.tools.items() if name not in names})

    def names(self) -> list[str]:
        """Every name a plan can call a tool by: what hints suggest, completion offers and grammars allow."""
        return sorted(name for name in {*CONTROL_STEPS, *self.tools} if WRITABLE.match(name))

    @property
    def folder(self) -> Path:
        """The folder of planc.toml: where its relative paths start, and what tools import from."""
        return self.source.parent if self.source is not None else Path.cwd()

    def plan_arguments(self, file: Path) -> Mapping[str, Mapping] | None:
        """The `params` that type `$args` when `file` is a plan declared under `[plans.NAME]`."""
        declared: PlanDeclaration | None = self.plans.for_file(file)
        return declared.params if declared is not None else None
