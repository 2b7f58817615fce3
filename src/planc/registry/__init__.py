"""Tool declarations: planc.toml, the control steps, MCP servers (through the lock file) and plans.

The names below load their modules when first used, so a check with no planc.toml never reads TOML.
"""

from importlib import import_module

_WHERE = {"ConfigError": "planc.registry.errors", "find_config": "planc.registry.config",
          "load_registry": "planc.registry.config", "registry_from_text": "planc.registry.config",
          "Registry": "planc.registry.registry", "Cost": "planc.registry.tool", "Effects": "planc.registry.tool",
          "Tool": "planc.registry.tool"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'planc.registry' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
