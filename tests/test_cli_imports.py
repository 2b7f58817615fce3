"""What `planc` imports: a command's module only when that command runs, the package's API names
on first use, and nothing a command does not use (docs/performance.md, start-up)."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner

import planc
from planc.cli import COMMANDS, main

PLAN = 'search(query: "outages", limit: 5)\n  |> summarize(style: "bullets")\n'

# Loaded by none of `planc check --format json` and `planc fmt`: each only where it is used.
NOT_FOR_A_CHECK = (
    "rich",
    "jsonschema",
    "cedarpy",
    "httpx",
    "mcp",
    "difflib",
    "asyncio",
    "sqlite3",
    "tomllib",
    "planc.backend.run.interpreter",
    "planc.optimize.optimize",
    "planc.cli.run_commands",
    "planc.cli.store_commands",
    "hashlib",
    "planc.passes.policy.decide",
)


def test_every_command_is_listed_and_loads_under_its_name():
    context = click.Context(main)
    assert main.list_commands(context) == sorted(COMMANDS)
    for name in COMMANDS:
        assert main.get_command(context, name).name == name


def test_an_unknown_command_is_exit_2_with_the_close_names():
    result = CliRunner().invoke(main, ["chek", "plan.plan"])
    assert result.exit_code == 2
    assert "No such command 'chek'. Did you mean 'check'?" in result.output


def loaded_by(code: str, cwd) -> set[str]:
    """The modules loaded by a fresh interpreter running `code`."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60)
    return set(json.loads(done.stderr.splitlines()[-1]))


def loaded_by_command(args: list[str], cwd) -> set[str]:
    return loaded_by(f"from planc.cli import main\ntry:\n    main({args!r})\nexcept SystemExit:\n    pass", cwd)


def test_check_as_json_loads_only_what_it_uses(tmp_path):
    (tmp_path / "plan.plan").write_text(PLAN, encoding="utf-8")
    modules = loaded_by_command(["check", "--format", "json", "plan.plan"], tmp_path)
    assert "planc.passes.check" in modules
    assert sorted(modules.intersection(NOT_FOR_A_CHECK)) == []


def test_fmt_loads_none_of_the_passes(tmp_path):
    (tmp_path / "plan.plan").write_text(PLAN, encoding="utf-8")
    modules = loaded_by_command(["fmt", "plan.plan"], tmp_path)
    assert "planc.syntax.format" in modules
    assert sorted(name for name in modules if name.startswith("planc.passes")) == []
    assert sorted(modules.intersection(NOT_FOR_A_CHECK)) == []


def test_the_package_api_loads_on_first_use(tmp_path):
    imported = {"attrs", "planc.passes", "planc.syntax", "importlib.metadata"}  # the version's metadata too
    assert loaded_by("import planc", tmp_path).intersection(imported) == set()
    assert "importlib.metadata" in loaded_by("import planc\nplanc.__version__", tmp_path)
    assert "planc.passes.check" not in loaded_by("from planc import parse", tmp_path)
    assert set(planc.__all__) <= set(dir(planc))
    from planc import check, save_plan

    assert planc.check is check and planc.save_plan is save_plan
    assert check(PLAN).ok


def test_a_run_loads_no_opentelemetry_unless_it_is_traced(tmp_path, monkeypatch):
    (tmp_path / "planc.toml").write_text("", encoding="utf-8")
    (tmp_path / "plan.plan").write_text("reshape(value: 1)\n", encoding="utf-8")
    store = str(tmp_path / "runs.sqlite")
    modules = loaded_by_command(["run", "plan.plan", "--store", store], tmp_path)
    assert "planc.backend.run.interpreter" in modules
    assert sorted(name for name in modules if name.startswith("opentelemetry")) == []
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")  # the SDK's own switch: no spans, so none to send anywhere
    traced = loaded_by_command(["run", "plan.plan", "--store", store, "--otel"], tmp_path)
    assert "planc.backend.report.traces" in traced
