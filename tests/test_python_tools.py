"""Python functions as tools: `@planc.tool` and `provider = "python:module:function"`."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import planc
from planc.registry import registry_from_text

MODULE = '''
from typing import Literal, Optional, TypedDict
import planc

IMPORTED = True

class Incident(TypedDict):
    id: str
    severity: int

@planc.tool(read_only=True, deterministic=True, idempotent=True, pipe="items", returns_at_most="limit")
def rank(items: list[Incident], by: Literal["severity", "age"] = "severity", limit: int = 10,
         note: Optional[str] = None) -> list[Incident]:
    """Rank incidents."""
    return items[:limit]

def plain(text: str, times: int) -> str:
    return text * times
'''


@pytest.fixture
def toolbox(tmp_path, monkeypatch):
    module = f"toolbox_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield module
    sys.modules.pop(module, None)


def registry(text: str):
    return registry_from_text(textwrap.dedent(text), Path("planc.toml"))


def test_type_hints_become_the_parameters(toolbox):
    tools = registry(f'[tools.rank]\nprovider = "python:{toolbox}:rank"\n').tools
    rank = tools["rank"]
    assert rank.required == ("items",)
    assert rank.params["by"] == {"enum": ["severity", "age"], "default": "severity"}
    assert rank.params["items"]["items"]["properties"]["severity"] == {"type": "integer"}
    assert rank.params["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert rank.pipe == "items" and rank.returns_at_most == "limit"
    assert rank.effects.read_only and rank.effects.deterministic and not rank.effects.destructive
    assert rank.returns["type"] == "array"


def test_a_plain_function_is_a_tool_with_conservative_effects(toolbox):
    plain = registry(f'[tools.repeat]\nprovider = "python:{toolbox}:plain"\n').tools["repeat"]
    assert plain.required == ("text", "times")
    assert plain.params["times"] == {"type": "integer"}
    assert plain.effects.destructive and not plain.effects.read_only


def test_checking_against_derived_parameters(toolbox):
    reg = registry(f'[tools.rank]\nprovider = "python:{toolbox}:rank"\n')
    result = planc.check('rank(items: [], byy: "age")', registry=reg)
    assert [(d.code, d.span.start.column) for d in result.diagnostics] == [("E201", 17)]


def test_a_fully_declared_tool_is_not_imported(toolbox):
    reg = registry(f"""
        [tools.rank]
        provider = "python:{toolbox}:rank"
        params = {{ items = {{ type = "array" }} }}
    """)
    assert reg.tools["rank"].params == {"items": {"type": "array"}}
    assert toolbox not in sys.modules


def test_a_provider_that_cannot_be_imported_is_a_config_error(tmp_path):
    with pytest.raises(planc.registry.ConfigError) as error:
        registry('[tools.rank]\nprovider = "python:no_such_module_here:rank"\n')
    assert "no_such_module_here" in str(error.value) and error.value.line == 2  # the `provider` line


def test_what_planc_toml_says_of_a_tool_declared_in_code_is_kept(toolbox):
    """A tool whose parameters come from its function keeps the effects, cost and description of its table."""
    plain = registry(f"""
        [tools.repeat]
        provider = "python:{toolbox}:plain"
        description = "Repeat a text"
        effects = {{ read_only = true, deterministic = true }}
        cost = {{ usd = 0.25, latency_ms = 7 }}
        timeout_s = 3
    """).tools["repeat"]
    assert plain.required == ("text", "times")  # still from the signature
    assert plain.description == "Repeat a text"
    assert plain.effects.read_only and plain.effects.deterministic and plain.effects.declared
    assert (plain.cost.usd, plain.cost.latency_ms, plain.timeout_s) == (0.25, 7, 3)
    ranked = registry(f'[tools.rank]\nprovider = "python:{toolbox}:rank"\neffects = {{ read_only = false }}\n')
    assert not ranked.tools["rank"].effects.read_only  # the table wins over the decorator


def test_a_tool_module_beside_planc_toml_is_imported_from_there(tmp_path):
    """Checking imports a `@planc.tool` module from the folder of planc.toml, as running does."""
    module = f"beside_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    (tmp_path / "planc.toml").write_text(f'[tools.rank]\nprovider = "python:{module}:rank"\n', encoding="utf-8")
    try:
        assert str(tmp_path) not in sys.path
        tool = planc.registry.load_registry(tmp_path / "planc.toml").tools["rank"]
        assert tool.pipe == "items" and tool.required == ("items",)
    finally:
        sys.modules.pop(module, None)
        while str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
