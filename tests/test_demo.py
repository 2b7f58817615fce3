"""The embedded example runs on a fresh clone: `planc run examples/incidents/<plan>`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli import planc_completed, planc_executable

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "incidents"


def planc(*args, database: Path) -> subprocess.CompletedProcess:
    """The real `planc` console script, from the repository root, against a database of the test's own."""
    env = {
        "PATH": str(Path(planc_executable()).parent),
        "PLANC_INCIDENTS_DB": str(database),
        "HOME": str(database.parent),
        "PLANC_STORE": str(database.parent / "runs.sqlite"),
    }
    return planc_completed(*args, cwd=ROOT, env=env)


def outbox(database: Path) -> list[tuple]:
    with sqlite3.connect(database) as connection:
        return connection.execute("select kind, recipient from outbox order by id").fetchall()


def test_the_triage_plan_runs_and_prints_its_result(tmp_path):
    database = tmp_path / "incidents.sqlite"
    result = planc("run", "examples/incidents/triage.plan", database=database)
    assert result.returncode == 0, result.stderr
    posted = json.loads(result.stdout)
    assert posted["kind"] == "notify" and posted["recipient"] == "#incidents" and "open incidents" in posted["text"]
    assert outbox(database) == [("notify", "#incidents")]


def test_a_plan_the_policy_denies_exits_1_and_changes_nothing(tmp_path):
    database = tmp_path / "incidents.sqlite"
    assert planc("run", "examples/incidents/triage.plan", database=database).returncode == 0
    before = outbox(database)
    result = planc("run", "examples/incidents/close_stale.plan", database=database)
    assert result.returncode == 1 and "E400" in result.stderr and result.stdout == ""
    assert outbox(database) == before
    with sqlite3.connect(database) as connection:
        assert connection.execute("select count(*) from incidents where status = 'resolved'").fetchone()[0] > 0


@pytest.mark.parametrize("plan", ["digest.plan", "gate.plan"])
def test_the_other_example_plans_run(tmp_path, plan):
    result = planc("run", f"examples/incidents/{plan}", database=tmp_path / "incidents.sqlite")
    assert result.returncode == 0, result.stderr
    json.loads(result.stdout)


def test_the_planning_demo_repairs_the_scripted_models_plan_and_runs_it(tmp_path):
    database = tmp_path / "incidents.sqlite"
    env = {"PATH": str(Path(planc_executable()).parent), "PLANC_INCIDENTS_DB": str(database), "HOME": str(tmp_path)}
    done = subprocess.run(
        [str(Path(planc_executable()).with_name("python")), "examples/incidents/plan_demo.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Did you mean `limit`?" in done.stdout and "--- round 2: the model answered" in done.stdout
    assert '--- the checked plan\ndisk = search(query: "disk", limit: 50)' in done.stdout
    assert outbox(database) == [("notify", "#incidents")]
