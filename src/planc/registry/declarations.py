"""What planc.toml declares besides tools, as typed values, with every default in one place.

`config.py` turns each table into one of these when the file is loaded, so a
mistake is a `file:line` error before anything runs, and nothing downstream
reads a raw TOML table or supplies a default of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

MCP_TIMEOUT_S = 60.0  # a call of an MCP server's tool
MCP_START_TIMEOUT_S = 30.0  # starting an MCP server and listing its tools
MODEL_TIMEOUT_S = 60.0  # one chat completion
MODEL_PROVIDERS = ("openai",)  # any OpenAI-compatible chat-completions endpoint
DEFAULT_MODEL_ROLE = "default"  # the `[models.*]` table a role without its own falls back to


@attrs.frozen
class McpServer:
    """`[mcp.NAME]`: a server started over stdio, whose tools come from planc.lock.json."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = attrs.field(factory=dict)  # over a minimal inherited environment
    trust_annotations: bool = False  # take the tools' MCP annotations as declared effects
    timeout_s: float = MCP_TIMEOUT_S  # a tool call's


@attrs.frozen
class ModelConfig:
    """`[models.NAME]`: where the model of a role (or `default`) answers."""

    name: str  # the table's name: the role itself, or "default"
    base_url: str
    model: str
    provider: str = MODEL_PROVIDERS[0]
    api_key_env: str | None = None  # the environment variable holding the API key
    timeout_s: float = MODEL_TIMEOUT_S


@attrs.frozen
class PlanDeclaration:
    """`[plans.NAME]`: a plan file callable as the tool `plan__NAME`."""

    name: str
    file: Path  # absolute: the table's `file`, from the folder of planc.toml
    written: str  # `file` as planc.toml writes it, for messages
    params: Mapping[str, Mapping] = attrs.field(factory=dict)  # name -> JSON Schema; they type `$args`
    returns: Mapping | None = None
    description: str = ""
