"""`planc diff --config`: the changes whose steps may change the world, by the effects the registry
declares (planc.toml, `@planc.tool`, an MCP server's annotations in the lock), listed first."""

from __future__ import annotations

import json

import pytest
from cli import invoke
from tool_project import tool_project

# Every tool appends its name to a file when it is called: a diff calls none.
TOOLS = """
import os
import planc

def _called(name):
    with open(os.environ["PLANC_TEST_CALLS"], "a") as log:
        log.write(name + "\\n")

@planc.tool(read_only=True, deterministic=True, open_world=False)
def search(query: str, limit: int = 20) -> list:
    _called("search")
    return []

@planc.tool(destructive=False, open_world=False)
def notify(channel: str, text: str) -> dict:
    _called("notify")
    return {}

@planc.tool(destructive=True, open_world=False)
def delete_incident(id: str) -> dict:
    _called("delete_incident")
    return {}

def page(who: str) -> dict:
    _called("page")
    return {}
"""

TOML = """
[tools.search]
provider = "python:{module}:search"

[tools.notify]
provider = "python:{module}:notify"

[tools.delete_incident]
provider = "python:{module}:delete_incident"

[tools.page]
provider = "python:{module}:page"
params = {{ who = {{ type = "string" }} }}
effects = {{ read_only = false, destructive = false, open_world = true }}

[mcp.clock]
command = ["clock-server"]
trust_annotations = true
"""

A = """hits = search(query: "sev2", limit: 50)
notify(channel: "#ops", text: "{$hits}")
delete_incident(id: "INC-1")
"""
B = """hits = search(query: "sev2", limit: 100)
now = clock__now()
notify(channel: "#ops", text: "{$hits} at {$now}")
map(over: $hits, do: { delete_incident(id: item.id) })
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    from planc.registry.mcp.lock import entry

    now = entry("now", "The time now", {"type": "object", "properties": {}}, None, {"readOnlyHint": True})
    lock = {"format": "planc.lock", "version": 1, "servers": {"clock": {"command": ["clock-server"], "tools": {"now": now}}}}
    files = {"planc.lock.json": json.dumps(lock), "a.plan": A, "b.plan": B}
    with tool_project(tmp_path, "risktools", TOOLS, TOML, files):
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.txt"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def changes(result) -> list[tuple]:
    return [
        (change["kind"], change["step_a"], change["step_b"], change["tool"], change["risk"])
        for change in json.loads(result.stdout)["changes"]
    ]


def test_each_change_carries_the_risk_its_steps_declare(project):
    result = invoke("diff", "a.plan", "b.plan", "--config", "planc.toml", "--format", "json")
    assert result.exit_code == 1, result.output
    assert changes(result) == [
        ("changed", "1", "1", "search", []),  # read-only, and not open-world
        ("added", None, "2", "clock__now", ["open-world"]),  # the server's readOnlyHint, trusted
        ("changed", "2", "3", "notify", ["effectful"]),
        ("removed", "3", None, "delete_incident", ["effectful", "destructive"]),
        ("added", None, "4", "map", ["effectful", "destructive"]),  # what its block does
    ]
    assert not (project / "calls.txt").exists()  # nothing ran


def test_the_review_lists_the_risky_changes_first_each_marked(project):
    result = invoke("diff", "a.plan", "b.plan", "--config", "planc.toml")
    assert result.exit_code == 1, result.output
    assert (
        result.stdout
        == """--- a.plan
+++ b.plan
! + step 2          now = clock__now()
                      risk: open-world
! ~ step 3 (was 2)  notify(channel: "#ops", text: "{$hits} at {$now}")
                      risk: effectful
                      text: "{$hits}" -> "{$hits} at {$now}"
! - step 3          delete_incident(id: "INC-1")
                      risk: effectful, destructive
! + step 4          map(over: $hits, do: { delete_incident(id: item.id) })
                      risk: effectful, destructive
  ~ step 1          hits = search(query: "sev2", limit: 100)
                      limit: 50 -> 100
5 changes: 2 added, 1 removed, 2 changed; 4 risky
"""
    )
    assert not (project / "calls.txt").exists()


def test_without_config_nothing_is_marked_and_no_planc_toml_is_read(project):
    (project / "planc.toml").write_text("[tools.search\n", encoding="utf-8")  # not even valid TOML
    text = invoke("diff", "a.plan", "b.plan")
    assert text.exit_code == 1 and text.stderr == ""
    assert (
        text.stdout
        == """--- a.plan
+++ b.plan
~ step 1          hits = search(query: "sev2", limit: 100)
                    limit: 50 -> 100
+ step 2          now = clock__now()
~ step 3 (was 2)  notify(channel: "#ops", text: "{$hits} at {$now}")
                    text: "{$hits}" -> "{$hits} at {$now}"
- step 3          delete_incident(id: "INC-1")
+ step 4          map(over: $hits, do: { delete_incident(id: item.id) })
5 changes: 2 added, 1 removed, 2 changed
"""
    )
    data = invoke("diff", "a.plan", "b.plan", "--format", "json")
    assert data.exit_code == 1
    assert all("risk" not in change for change in json.loads(data.stdout)["changes"])


def test_a_planc_toml_with_a_mistake_is_exit_2_with_one_message(project):
    (project / "planc.toml").write_text("[tools.search\n", encoding="utf-8")
    for output in ("text", "json"):
        result = invoke("diff", "a.plan", "b.plan", "--config", "planc.toml", "--format", output)
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.startswith("Error: ") and "planc.toml" in result.stderr
        assert "Traceback" not in result.output
    missing = invoke("diff", "a.plan", "b.plan", "--config", "elsewhere.toml")
    assert missing.exit_code == 2 and missing.stdout == "" and "elsewhere.toml" in missing.stderr


def test_a_tool_the_registry_does_not_declare_counts_at_its_worst(project):
    (project / "c.plan").write_text('mystery(x: 1)\nsearch(query: "a")\n', encoding="utf-8")
    (project / "d.plan").write_text('mystery(x: 2)\nsearch(query: "b")\n', encoding="utf-8")
    result = invoke("diff", "c.plan", "d.plan", "--config", "planc.toml", "--format", "json")
    assert result.exit_code == 1, result.output
    assert changes(result) == [
        ("changed", "1", "1", "mystery", ["effectful", "destructive", "open-world"]),
        ("changed", "2", "2", "search", []),
    ]


def test_a_step_with_a_block_is_as_risky_as_its_blocks_steps(project):
    (project / "c.plan").write_text(
        """hits = search(query: "x")
map(over: $hits, do: { delete_incident(id: item.id) })
map(over: $hits, do: { notify(channel: "#ops", text: item.title) })
decide(when: $hits == [], then: { search(query: "y") }, else: { delete_incident(id: "INC-1") })
""",
        encoding="utf-8",
    )
    (project / "d.plan").write_text(
        """hits = search(query: "x")
map(over: $hits, do: { delete_incident(id: item.key) })
map(over: $hits.open, do: { notify(channel: "#ops", text: item.title) })
decide(when: $hits == [], then: { search(query: "y") })
""",
        encoding="utf-8",
    )
    result = invoke("diff", "c.plan", "d.plan", "--config", "planc.toml", "--format", "json")
    assert result.exit_code == 1, result.output
    assert changes(result) == [
        ("changed", "2/do.1", "2/do.1", "delete_incident", ["effectful", "destructive"]),
        # a new `over` changes what the block notifies about
        ("changed", "3", "3", "map", ["effectful"]),
        # the delete it takes out is in A only
        ("changed", "4", "4", "decide", ["effectful", "destructive"]),
    ]


def test_an_agent_is_as_risky_as_the_tools_it_may_call(project):
    agents = """agent(prompt: "{}", output_schema: {{type: "object"}}, tools: ["search"])
agent(prompt: "{}", output_schema: {{type: "object"}}, tools: ["search", "delete_*"])
"""
    (project / "c.plan").write_text(agents.format("triage", "clean up"), encoding="utf-8")
    (project / "d.plan").write_text(agents.format("triage sev2", "clean up sev2"), encoding="utf-8")
    result = invoke("diff", "c.plan", "d.plan", "--config", "planc.toml", "--format", "json")
    assert result.exit_code == 1, result.output
    assert changes(result) == [("changed", "1", "1", "agent", []), ("changed", "2", "2", "agent", ["effectful", "destructive"])]


def test_the_same_plans_are_the_same_with_config(project):
    (project / "c.plan").write_text("# the same\n" + A, encoding="utf-8")
    text = invoke("diff", "a.plan", "c.plan", "--config", "planc.toml")
    assert text.exit_code == 0
    assert text.stdout == "--- a.plan\n+++ c.plan\nsame: no step was added, removed, changed or moved\n"
    data = invoke("diff", "a.plan", "c.plan", "--config", "planc.toml", "--format", "json")
    assert (data.exit_code, json.loads(data.stdout)) == (0, {"same": True, "changes": []})
