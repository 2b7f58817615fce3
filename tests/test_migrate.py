"""`planc migrate`: stored plans compiled by an older planc, brought up to date through the CLI.

The fixture `incidents_count_v2.json` was written by `planc compile` of the planc before pure steps
(stored plan version 2), against the incidents example, when its tool `tally` was called `count`:
`count` is a built-in step now, so the plan's text must change as well as its format.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import invoke

from planc.store.stored import VERSION

TESTS = Path(__file__).resolve().parent
EXAMPLE = TESTS.parent / "examples" / "incidents"
FIXTURE = TESTS / "fixtures" / "incidents_count_v2.json"


@pytest.fixture
def example(tmp_path, monkeypatch):
    """A copy of the incidents example with the old plan beside it, as the working directory."""
    folder = tmp_path / "incidents"
    shutil.copytree(EXAMPLE, folder)
    shutil.copy(FIXTURE, folder / "old.json")
    monkeypatch.chdir(folder)
    monkeypatch.delenv("PLANC_STORE", raising=False)
    return folder


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runs_in(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def test_an_older_plan_is_refused_to_run_with_the_command_that_migrates_it(example):
    result = invoke("run", "old.json", "--store", "runs.sqlite")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr == (
        f"error: old.json: stored plan is version 2, and this planc runs version {VERSION}: "
        "`planc migrate old.json` rewrites it, then run it again\n"
    )
    assert runs_in(example / "runs.sqlite") == 0  # nothing ran, nothing recorded
    assert digest(example / "old.json") == digest(FIXTURE)


def test_a_plan_compiled_before_count_was_a_built_in_step_migrates_and_runs(example):
    migrated = invoke("migrate", "old.json")
    assert migrated.exit_code == 0, migrated.output
    assert migrated.stderr.splitlines() == [
        "old.json: version 2 -> 3",
        "old.json: version 3 -> 4: `count` is a built-in step now: its calls (step 1) call `tally`",
        "old.json: version 4 -> 5",
    ]
    stored = json.loads((example / "old.json").read_text(encoding="utf-8"))
    assert stored["version"] == VERSION and "tally(query: " in stored["source"] and "count(" not in stored["source"]
    assert sorted(stored["registry"]["tools"]) == ["search", "tally"]
    ran = invoke("run", "old.json", "--store", "runs.sqlite")
    assert ran.exit_code == 0, ran.output
    result = json.loads(ran.stdout)
    (example / "tally.plan").write_text('tally(query: "\\"disk full\\"")\n', encoding="utf-8")
    counted = invoke("run", "tally.plan", "--store", "runs.sqlite")
    assert counted.exit_code == 0, counted.output
    assert result["incidents"] == json.loads(counted.stdout) > 0 and len(result["first"]) == 3
    again = invoke("migrate", "old.json")  # up to date: nothing to do, nothing written
    assert again.exit_code == 0 and again.stderr == "old.json: up to date\n"
    assert json.loads((example / "old.json").read_text(encoding="utf-8")) == stored


def test_a_plan_two_tools_could_have_become_is_refused_unstamped(example):
    toml = example / "planc.toml"
    text = toml.read_text(encoding="utf-8")
    tally = text[text.index("[tools.tally]") : text.index("\n\n", text.index("[tools.tally]"))]
    toml.write_text(text + "\n" + tally.replace("[tools.tally]", "[tools.tally_again]") + "\n", encoding="utf-8")
    before = digest(example / "old.json")
    result = invoke("migrate", "old.json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(
        "error: old.json: step 1 calls `count`, a tool when the plan was compiled and a "
        "built-in step now, and the tools `tally`, `tally_again` of "
    )
    assert "so which one the plan means is ambiguous: split them" in result.stderr
    assert result.stderr.endswith("; it is left as it was\n")
    assert digest(example / "old.json") == before  # not a version stamped, not a byte changed
    assert invoke("run", "old.json", "--store", "runs.sqlite").exit_code == 1


def test_a_plan_whose_tool_no_tool_is_now_is_refused_naming_what_to_change(example):
    toml = example / "planc.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('"How many incidents match a query"', '"How many incidents match"'),
        encoding="utf-8",
    )
    before = digest(example / "old.json")
    result = invoke("migrate", "old.json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "no tool of" in result.stderr and "has the declaration `count` had: rename the tool in planc.toml" in result.stderr
    assert digest(example / "old.json") == before


def test_migrate_refuses_plan_text_and_goes_on_to_the_next_file(example):
    shutil.copy(FIXTURE, example / "second.json")
    result = invoke("migrate", "triage.plan", "old.json")
    assert result.exit_code == 2 and "triage.plan: not a stored plan" in result.stderr
    assert digest(example / "old.json") == digest(FIXTURE)  # a usage error: no file is touched after it
    tampered = (example / "second.json").read_text(encoding="utf-8").replace("disk full", "disk fall", 1)
    (example / "second.json").write_text(tampered, encoding="utf-8")
    both = invoke("migrate", "second.json", "old.json")
    assert both.exit_code == 1 and "second.json: stored plan was modified after it was compiled" in both.stderr
    assert json.loads((example / "old.json").read_text(encoding="utf-8"))["version"] == VERSION
    assert (example / "second.json").read_text(encoding="utf-8") == tampered


def test_a_run_recorded_with_an_older_plan_replays_its_plan_brought_up_to_date_in_memory(example):
    assert invoke("migrate", "old.json").exit_code == 0
    ran = invoke("run", "old.json", "--store", "runs.sqlite")
    assert ran.exit_code == 0, ran.output
    with sqlite3.connect(example / "runs.sqlite") as db:  # as a planc of version 2 plans recorded it
        db.execute("UPDATE runs SET plan = ?", (FIXTURE.read_text(encoding="utf-8"),))
    replayed = invoke("replay", "last", "--store", "runs.sqlite")
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == ran.stdout
    with sqlite3.connect(example / "runs.sqlite") as db:  # a record is never rewritten
        assert json.loads(db.execute("SELECT plan FROM runs").fetchone()[0])["version"] == 2
