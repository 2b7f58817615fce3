"""Tool declarations: planc.toml, the control steps, MCP servers (through the lock file) and plans."""

from planc.registry.config import (
    ConfigError,
    find_config,
    load_registry,
    registry_from_text,
)
from planc.registry.registry import Registry
from planc.registry.tool import Cost, Effects, Tool

__all__ = ["ConfigError", "Cost", "Effects", "Registry", "Tool", "find_config", "load_registry", "registry_from_text"]
