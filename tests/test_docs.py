"""The documentation says what the code does: the diagnostics index is generated and current,
and every documented example reports its code."""

import json
from pathlib import Path

import pytest

import planc
from planc.diagnostics.codes import CODES
from planc.explain import check_example, render_markdown, with_control_steps

ROOT = Path(__file__).resolve().parents[1]


def test_diagnostics_doc_is_current():
    assert (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8") == render_markdown(), (
        "docs/diagnostics.md is stale: run `make docs`"
    )


def test_control_step_reference_is_current():
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert page == with_control_steps(page), "docs/language.md's control steps are stale: run `make docs`"


@pytest.mark.parametrize("code", sorted(CODES))
def test_example_reports_its_code(code):
    result = check_example(CODES[code])  # against the example's planc.toml, when it has one
    assert code in [d.code for d in result.diagnostics]


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_a_section(code):
    assert f"\n## {code}\n" in (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")


def test_embedded_example_checks_clean_against_its_registry():
    from planc.registry import load_registry

    registry = load_registry(ROOT / "examples" / "incidents" / "planc.toml")
    source = (ROOT / "examples" / "incidents" / "triage.plan").read_text(encoding="utf-8")
    assert planc.check(source, registry=registry).diagnostics == ()


def _fenced(text: str, info: str) -> list[str]:
    import re

    return re.findall(rf"```{info}\n(.*?)```", text, re.S)


def test_the_agent_examples_check_clean_and_the_cost_example_is_what_planc_says(tmp_path, monkeypatch):
    import sqlite3

    from cli import invoke

    from planc.registry import load_registry

    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    section = page[page.index("\n## Agents\n") : page.index("\n## Step paths\n")]
    [toml] = _fenced(section, "toml")
    (tmp_path / "planc.toml").write_text(toml + '\n[plans.ask_twice]\nfile = "ask_twice.plan"\n', encoding="utf-8")
    (tmp_path / "ask_twice.plan").write_text('filter(over: ["disk", "memory"], infer: "Is {item} urgent?")\n')
    with sqlite3.connect(tmp_path / "findings.sqlite") as db:
        db.execute("CREATE TABLE findings (id TEXT, summary TEXT, status TEXT)")
    db.close()
    registry = load_registry(tmp_path / "planc.toml")
    examples = _fenced(section, "plan")
    assert len(examples) == 3
    for example in examples:
        assert planc.check(example, registry=registry).diagnostics == (), example

    cost_page = (ROOT / "docs" / "cost.md").read_text(encoding="utf-8")
    [shown] = [block for block in _fenced(cost_page, "") if block.startswith("$ planc check --max-inferences 3")]
    command, *output = shown.splitlines(keepends=True)
    plan = next(line for line in output if line.startswith("1 | ")).removeprefix("1 | ")
    (tmp_path / "plan.plan").write_text(plan, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke(*command.split()[2:])
    assert result.exit_code == 1 and result.stderr + result.stdout == "".join(output)


README = ROOT / "README.md"


def test_the_readmes_plan_gets_the_diagnostics_the_readme_shows_and_runs_once_fixed(tmp_path, monkeypatch):
    """The first screen of README.md: a model's plan, what `planc check` says of it, and its run once fixed."""
    import re

    from cli import invoke

    text = README.read_text(encoding="utf-8")
    plan, shown = re.findall(r"```\n(.*?)```", text, re.DOTALL)[:2]
    example = ROOT / "examples" / "incidents"
    checked = planc.check(plan, registry=planc.load_registry(example / "planc.toml"))
    for diagnostic in checked.diagnostics:
        start = diagnostic.span.start
        assert f"{diagnostic.severity.value}[{diagnostic.code}]: {diagnostic.message}\n" in shown
        assert f" --> disk.plan:{start.line}:{start.column} (step {diagnostic.step})\n" in shown
        assert f"  = fix: replace `{diagnostic.span.text(plan)}` with `{diagnostic.fix.replacement}`\n" in shown
    assert [d.code for d in checked.diagnostics] == ["W503", "E301"]
    fixed = plan
    for diagnostic in sorted(checked.diagnostics, key=lambda d: -d.span.start_offset):
        fixed = fixed[: diagnostic.span.start_offset] + diagnostic.fix.replacement + fixed[diagnostic.span.end_offset :]
    (tmp_path / "disk.plan").write_text(fixed, encoding="utf-8")
    monkeypatch.setenv("PLANC_INCIDENTS_DB", str(tmp_path / "incidents.sqlite"))
    result = invoke("run", tmp_path / "disk.plan", "--config", example / "planc.toml", "--store", tmp_path / "runs.sqlite")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["text"].startswith("1 open: - INC-1244 (sev 4, open, ")
