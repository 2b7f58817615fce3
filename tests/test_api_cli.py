"""The Python API and the command line agree: a project opened with `planc.load_project` checks and runs a
plan as `planc check` and `planc run` do, with the same registry, policy, principal, budget and store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli import invoke
from tool_project import tool_project

import planc
from planc.corpus import load_cases
from planc.diagnostics.render_line import render_line

ROOT = Path(__file__).resolve().parents[1]
FLAGS = {"max_calls": "--max-calls", "max_usd": "--max-usd", "max_inferences": "--max-inferences"}


def verdicts():
    """(name, planc.toml, plan text, budget) for every corpus case checked against a planc.toml, and every
    example plan."""
    found = []
    for case in load_cases(ROOT / "corpus"):
        if case.registry is not None and case.source_b is None and not case.extract:
            found.append((case.location, case.registry.source, case.source, case.budget))
    for plan in sorted((ROOT / "examples").rglob("*.plan")):
        found.append((str(plan.relative_to(ROOT)), None, plan.read_text(encoding="utf-8"), {}))
    return found


VERDICTS = verdicts()


def test_every_cli_verdict_is_the_apis(tmp_path, monkeypatch):
    """`planc check` on each plan (exit code and every diagnostic) is `load_project(...).check` on it: one
    command per planc.toml and budget, given all its plans."""
    assert len(VERDICTS) > 200
    monkeypatch.chdir(tmp_path)
    groups: dict = {}
    for number, (name, config, text, budget) in enumerate(VERDICTS):
        if config is None:  # an example plan, checked where it lies
            path = ROOT / name
        else:
            path = tmp_path / f"case{number}.plan"
            path.write_text(text, encoding="utf-8")
        groups.setdefault((config or path.parent / "planc.toml", tuple(sorted(budget.items()))), []).append((path, text))
    for (config, budget), plans in groups.items():
        options = ["--config", config] + [str(part) for key, value in budget for part in (FLAGS[key], value)]
        cli = invoke("check", "--format", "line", *options, *(path for path, _ in plans))
        project = planc.load_project(config=config)
        checked = [project.check(text, path=path, **dict(budget)) for path, text in plans]
        api = "".join(render_line(d, str(path)) + "\n" for (path, _), result in zip(plans, checked) for d in result.diagnostics)
        assert (cli.exit_code, cli.stdout) == (0 if all(result.ok for result in checked) else 1, api), config


TOOLS = """
import os


def send(to):
    with open(os.environ["PLANC_TEST_SPY"], "a", encoding="utf-8") as spy:
        spy.write(f"send {to}\\n")
    return to
"""

TOML = """
policy = "policy.cedar"
principal = 'User::"mallory"'
store = "records/runs.sqlite"

[budget]
max_calls = 2

[tools.send]
provider = "python:{module}:send"
params = {{ to = {{ type = "string" }} }}
required = ["to"]

[plans.greet]
file = "greet.plan"
params = {{ who = {{ type = "string", default = "bob" }} }}
"""

POLICY = """
@id("mallory-may-not-send-to-eve")
forbid(principal == User::"mallory", action, resource == Tool::"send") when { context.args has to && context.args.to == "eve" };
permit(principal, action, resource);
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "apitools", TOOLS, TOML, {"policy.cedar": POLICY, "greet.plan": "send(to: $args.who)\n"}):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
        monkeypatch.delenv("PLANC_STORE", raising=False)
        yield tmp_path


@pytest.mark.parametrize(
    "text, codes",
    [
        ('send(to: "eve")\n', ["E400"]),  # the policy planc.toml names, for the principal it names
        ('send(to: "a")\nsend(to: "b")\nsend(to: "c")\n', ["E401"]),  # its [budget]
        ('send(to: "a")\n', []),
    ],
)
def test_the_api_checks_with_what_planc_toml_says_as_the_cli_does(project, text, codes):
    (project / "p.plan").write_text(text, encoding="utf-8")
    cli = invoke("check", "--format", "json", "p.plan")
    assert cli.stdout, cli.output
    assert [d["code"] for d in json.loads(cli.stdout)["diagnostics"]] == codes, cli.output
    assert [d.code for d in planc.load_project(project).check(text).diagnostics] == codes
    registry = planc.load_registry(project / "planc.toml")  # a registry alone keeps its policy and principal too
    assert [d.code for d in planc.check(text, registry=registry).diagnostics] == codes


def test_a_project_runs_into_the_store_the_cli_reads_with_declared_params(project):
    opened = planc.load_project(project / "greet.plan")
    assert opened.store == project / "records" / "runs.sqlite"
    checked = opened.check((project / "greet.plan").read_text(encoding="utf-8"), path=project / "greet.plan")
    assert opened.run(checked).value == "bob"  # its declared default, as `planc run greet.plan` gives it
    with pytest.raises(planc.backend.state.values.RunError, match="no parameter `whom`"):
        opened.run(checked, arguments={"whom": "x"})
    listed = invoke("runs", "--format", "json")
    assert listed.exit_code == 0 and [run["status"] for run in json.loads(listed.stdout)] == ["ok"]
    assert invoke("run", "greet.plan").exit_code == 0
    with sqlite3.connect(project / "records" / "runs.sqlite") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    db.close()
    assert (project / "spy.log").read_text(encoding="utf-8").splitlines() == ["send bob", "send bob"]
