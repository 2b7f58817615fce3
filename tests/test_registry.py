"""planc.toml: loading, its errors, and the resolve checks a registry makes possible."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from cli import invoke

import planc
from planc.registry import ConfigError, find_config, load_registry, registry_from_text

TOML = """
[tools.search]
description = "Full-text search over incidents"
provider = "python:incidents.tools:search"
pipe = "query"
params = { query = { type = "string" }, limit = { type = "integer", minimum = 1, default = 20 } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
returns_at_most = "limit"
effects = { read_only = true, deterministic = true, idempotent = true, destructive = false, open_world = false }
cost = { usd = 0.0, latency_ms = 40 }

[tools.summarize]
pipe = "items"
params = { items = { type = "array" }, style = { enum = ["bullets", "prose"] } }
required = ["items"]

[tools.notify]
params = { channel = { type = "string" }, text = { type = "string" } }
required = ["channel", "text"]
"""


@pytest.fixture(scope="module")
def registry():
    return registry_from_text(TOML, Path("planc.toml"))


def found(text, registry):
    return [
        (d.code, d.span.start.line, d.span.start.column, d.span.text(text))
        for d in planc.check(text, registry=registry).diagnostics
    ]


def test_the_design_example_loads(registry):
    search = registry.tools["search"]
    assert search.pipe == "query" and search.returns_at_most == "limit" and search.required == ("query",)
    assert search.effects.read_only and not search.effects.destructive and search.cost.latency_ms == 40
    notify = registry.tools["notify"]
    assert notify.effects.destructive and notify.effects.open_world and not notify.effects.read_only


def test_a_valid_plan_has_no_diagnostics(registry):
    assert found('search(query: "x", limit: 5) |> summarize(style: "bullets")', registry) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ('serch(query: "x")', [("E200", 1, 1, "serch")]),
        ('search(querry: "x")', [("E202", 1, 1, "search"), ("E201", 1, 8, "querry")]),
        ('summarize(style: "prose")', [("E202", 1, 1, "summarize")]),
        ('search(query: "a") |> notify(channel: "#x", text: "y")', [("E209", 1, 23, "notify")]),
        ('search(query: "a") |> summarize(items: [], style: "prose")', [("E209", 1, 33, "items")]),
        (
            'search(query: "a") |> filter(over: [{x: 2}], where: x > 1, infer: "y")',
            [("E209", 1, 30, "over"), ("E303", 1, 60, "infer")],
        ),
        ('decide(then: { search(query: "a") })', [("E303", 1, 1, "decide")]),
    ],
)
def test_signature_errors_point_at_the_name(registry, text, expected):
    assert found(text, registry) == expected


def test_hints_name_the_closest_tool_and_parameter(registry):
    (unknown,) = planc.check('serch(query: "x")', registry=registry).diagnostics
    assert "`search`" in unknown.hints[0]
    misspelled = [d for d in planc.check('search(query: "x", limt: 3)', registry=registry).diagnostics]
    assert [d.code for d in misspelled] == ["E201"] and "`limit`" in misspelled[0].hints[0]


def test_agent_tool_patterns_must_match_a_tool(registry):
    text = 'agent(prompt: "x", output_schema: {type: "object"}, tools: ["search", "sum*", "linear__*"])'
    assert found(text, registry) == [("E208", 1, 79, '"linear__*"')]


def test_without_a_registry_any_tool_is_accepted():
    assert planc.check('anything(at: "all")').ok


@pytest.mark.parametrize(
    "toml, line, words",
    [
        ("[tools.x\n", 1, "not valid TOML"),
        ("[tools.map]\n", 1, "reserved"),
        ('[tools.x]\nparams = { a = { type = "string" } }\npipe = "b"\n', 3, "names no parameter"),
        ('[tools.x]\nparams = { a = { type = "strin" } }\n', 2, "not a valid JSON Schema"),
        ("[tools.x]\nfoo = 1\n", 2, "unknown key `foo`"),
        ('[tools.x]\nrequired = ["a"]\n', 2, "names no parameter"),
        ('[tools.x]\neffects = { read_only = "yes" }\n', 2, "true or false"),
        ('[mcp.x]\ncommand = ["x"]\n[tools.x__y]\n', 3, "the MCP server `x`'s"),
        ("[tools.plan__y]\n", 1, "declared plans"),
        ('[plans.x__y]\nfile = "x.plan"\n', 1, "`__`"),
        ('[mcp.git]\ncommand = "mcp-server-git"\n', 2, "list of strings"),
        ("colour = 1\n", 1, "unknown key `colour`"),
        ('\npolcy = "p.cedar"\n[tools.x]\n', 2, "did you mean `policy`?"),
        ("[tools.x]\n[modles.default]\n", 2, "did you mean `models`?"),
        ('[mcp.x]\ncommand = ["x"]\nenv = { A = 1 }\n', 3, "`env` must be a table"),
        ("store = 5\n", 1, "`store` must be a path"),
        ('[models.default]\nprovider = "http://x"\nbase_url = "http://x/v1"\nmodel = "m"\n', 2, "not supported"),
        (
            '[tools.x]\nprovider = "python:m:f"\nparams = { key = {} }\nidempotency_key = "key"\n',
            3,
            "cannot be one of the `params` a plan gives too",
        ),
        ('[tools.x]\nprovider = "python:m:f"\nparams = {}\nidempotency_key = 5\n', 4, "must name a parameter"),
        ('[tools.x]\nprovider = "http://x"\nidempotency_key = "key"\n', 3, "`idempotency_keys = true`"),
        ('[mcp.x]\ncommand = ["x"]\nidempotency_keys = "yes"\n', 3, "`idempotency_keys` must be true or false"),
    ],
)
def test_a_malformed_planc_toml_says_where_and_what(toml, line, words):
    with pytest.raises(ConfigError) as error:
        registry_from_text(toml, Path("planc.toml"))
    assert error.value.line == line and words in error.value.message


def test_the_config_is_found_upward_and_errors_are_clean(tmp_path, monkeypatch):
    (tmp_path / "planc.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    assert find_config(tmp_path / "deep" / "er") == tmp_path / "planc.toml"
    monkeypatch.chdir(tmp_path / "deep" / "er")
    (tmp_path / "deep" / "er" / "p.plan").write_text('serch(query: "x")\n', encoding="utf-8")
    result = invoke("check", "--format", "line", "p.plan")
    assert result.exit_code == 1 and "E200" in result.output
    (tmp_path / "bad.toml").write_text("[tools.x\n", encoding="utf-8")
    result = invoke("check", "--config", str(tmp_path / "bad.toml"), "p.plan")
    assert result.exit_code == 2 and "bad.toml:1" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("provider", ["plan:nope", "control", "pure"])
def test_a_tool_cannot_claim_to_be_planc_s_own_step_or_a_declared_plan(tmp_path, monkeypatch, provider):
    """A `[tools]` table whose provider is a declared plan's or planc's own steps' is refused where it is
    written: checked, such a tool was taken for a plan that does not exist, or a step with no rules, and
    `planc check` ended in a traceback."""
    (tmp_path / "planc.toml").write_text(f'[tools.x]\nprovider = "{provider}"\n', encoding="utf-8")
    (tmp_path / "p.plan").write_text("x()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "p.plan")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "planc.toml:2" in result.output and "planc's own steps and declared plans" in result.output


def test_registry_list_shows_tools_and_effects(tmp_path):
    (tmp_path / "planc.toml").write_text(TOML, encoding="utf-8")
    import json

    result = invoke("registry", "list", "--config", str(tmp_path / "planc.toml"), "--format", "json")
    listed = {tool["name"]: tool for tool in json.loads(result.output)["tools"]}
    assert listed["search"]["effects"]["read_only"] is True and listed["notify"]["required"] == ["channel", "text"]
    table = invoke("registry", "list", "--config", str(tmp_path / "planc.toml"))
    assert table.exit_code == 0 and "summarize" in table.output


def test_plans_that_call_each_other_in_a_cycle(tmp_path):
    (tmp_path / "plans").mkdir()
    (tmp_path / "planc.toml").write_text(
        textwrap.dedent("""
        [plans.a]
        file = "plans/a.plan"
        [plans.b]
        file = "plans/b.plan"
        params = { limit = { type = "integer", default = 5 } }
    """),
        encoding="utf-8",
    )
    (tmp_path / "plans" / "a.plan").write_text("plan__b(limit: 3)\n", encoding="utf-8")
    (tmp_path / "plans" / "b.plan").write_text("plan__a()\n", encoding="utf-8")
    registry = load_registry(tmp_path / "planc.toml")
    (e210,) = planc.check("plan__a()", registry=registry).diagnostics
    assert e210.code == "E210" and "a -> b -> a" in e210.message
    (tmp_path / "plans" / "b.plan").write_text("reshape(value: 1)\n", encoding="utf-8")
    registry = load_registry(tmp_path / "planc.toml")  # a registry reads its plans' files once
    assert planc.check("plan__a()", registry=registry).ok
    assert [d.code for d in planc.check("plan__b(limt: 1)", registry=registry).diagnostics] == ["E201"]


def test_a_declared_plans_params_type_its_args(tmp_path):
    (tmp_path / "plans").mkdir()
    (tmp_path / "planc.toml").write_text(
        TOML + '\n[plans.triage]\nfile = "plans/triage.plan"\nparams = { limit = { type = "integer", default = 20 } }\n',
        encoding="utf-8",
    )
    plan = tmp_path / "plans" / "triage.plan"
    plan.write_text(
        'search(query: "x", limit: $args.limit)\nsearch(query: $args.limit)\nsearch(query: "{$args.lim}")\n', encoding="utf-8"
    )
    result = invoke("check", "--format", "line", "--config", str(tmp_path / "planc.toml"), str(plan))
    errors = [line for line in result.output.splitlines() if ": E" in line]
    assert [line.split(": ")[1].split()[0] for line in errors] == ["E300", "E301"]
    assert ":2:15:" in errors[0] and ":3:22:" in errors[1]


SPY = """
import os

def append(text: str) -> str:
    with open(os.environ["PLANC_TEST_SPY"], "a", encoding="utf-8") as file:
        file.write(text + "\\n")
    return text
"""


@pytest.mark.parametrize("command", ["check", "run"])
def test_a_bad_models_table_is_refused_before_any_step(tmp_path, monkeypatch, command):
    """A mistake in `[models.*]` is `file:line` and exit 2 for check and run, and no tool is called,
    even when the plan reaches an `agent` only after an effectful step."""
    module = f"spy_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(SPY, encoding="utf-8")
    (tmp_path / "planc.toml").write_text(
        textwrap.dedent(f"""
        [tools.append]
        provider = "python:{module}:append"
        params = {{ text = {{ type = "string" }} }}
        required = ["text"]

        [models.default]
        base_url = 5
        model = "m"
    """),
        encoding="utf-8",
    )
    (tmp_path / "p.plan").write_text(
        'append(text: "first")\nagent(prompt: "go", output_schema: {type: "object"})\n', encoding="utf-8"
    )
    spy = tmp_path / "spy.log"
    monkeypatch.setenv("PLANC_TEST_SPY", str(spy))
    monkeypatch.chdir(tmp_path)
    result = invoke(command, "p.plan")
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'planc.toml'}:8: `base_url` of model `default` must be a string, not int" in result.output
    assert "Traceback" not in result.output
    assert not spy.exists()
    sys.modules.pop(module, None)


def test_a_tool_name_with_a_double_underscore_is_allowed_when_no_server_owns_it():
    """Plans written for graph-style registries call tools like `builtin__git_diff`."""
    registry = registry_from_text('[tools.builtin__git_diff]\nparams = { path = { type = "string" } }\n', Path("planc.toml"))
    assert planc.check('builtin__git_diff(path: "a.py")', registry=registry).diagnostics == ()
