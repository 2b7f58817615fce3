"""Tool declarations: planc.toml, the control steps, MCP servers (through the lock file) and plans.

One folder per job: `provenance/` (labels), `tools/` (the Tool and its kinds), `steps/` (the
built-in steps), `settings/` (what planc.toml declares, typed), `mcp/` (servers and their lock)
and `loading/` (planc.toml read into a Registry).

The names below load their modules when first used, so a check with no planc.toml never reads TOML.
"""

from importlib import import_module

_WHERE = {
    "ConfigError": "planc.registry.settings.errors",
    "find_config": "planc.registry.loading.config",
    "load_registry": "planc.registry.loading.config",
    "registry_from_text": "planc.registry.loading.config",
    "Registry": "planc.registry.loading.registry",
    "Cost": "planc.registry.tools.tool",
    "Effects": "planc.registry.tools.tool",
    "Tool": "planc.registry.tools.tool",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'planc.registry' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
