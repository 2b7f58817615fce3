"""Small defects a user would notice, each pinned by what must hold: the CLI's answers (and the API's)
say what planc does."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from cli import invoke

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    return tmp_path


# --- 14. what the docs and the messages say is what the code does -------------------------------------

def test_the_sql_tools_documented_effects_are_those_registry_list_shows(folder):
    with sqlite3.connect(folder / "ops.sqlite") as db:
        db.execute("CREATE TABLE t (a TEXT)")
    db.close()
    (folder / "planc.toml").write_text('[tools.rows]\nprovider = "sql:ops.sqlite"\nquery = "SELECT a FROM t"\n',
                                       encoding="utf-8")
    listed = invoke("registry", "list", "--format", "json")
    assert listed.exit_code == 0, listed.output
    [tool] = [tool for tool in json.loads(listed.stdout)["tools"] if tool["name"] == "rows"]
    section = (DOCS / "registry.md").read_text(encoding="utf-8").split("## SQL tools")[1].split("\n## ")[0]
    said = re.search(r"The tool's effects are (.*?)[:.]", " ".join(section.split())).group(1)
    for effect in ("read_only", "deterministic", "idempotent", "destructive", "open_world"):
        word = effect.replace("_", "-")
        assert (f"not {word}" not in said and word in said) == tool["effects"][effect], (effect, said)


def test_w502_says_that_the_run_fills_a_planc_hole_inside_double_braces(folder):
    (folder / "p.plan").write_text('map(over: ["a"], do: { reshape(value: "x {{item}} y") })\n', encoding="utf-8")
    checked = invoke("check", "--format", "line", "p.plan")
    assert checked.exit_code == 0
    assert ("W502 `{{item}}` looks like a hole from another template language; planc fills the `{item}` inside it "
            "and keeps the rest as literal text") in checked.output
    ran = invoke("run", "p.plan")
    assert ran.exit_code == 0 and json.loads(ran.stdout) == ["x {a} y"]  # as the warning says


@pytest.mark.parametrize("command", [("show",), ("show", "--format", "json"), ("show", "--format", "dot"),
                                     ("policy", "explain", "--policy", "policy.cedar")])
def test_show_and_policy_explain_exit_1_on_a_plan_with_errors(folder, command):
    (folder / "policy.cedar").write_text("permit(principal, action, resource);\n", encoding="utf-8")
    (folder / "p.plan").write_text('reshape(value: 1)\nreshape(value: $5)\n', encoding="utf-8")
    result = invoke(*command, "p.plan")
    assert result.exit_code == 1 and "E20" in result.stderr and "Traceback" not in result.output
