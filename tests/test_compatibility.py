"""What docs/compatibility.md promises a user between versions, held: a run store an earlier planc wrote
opens, lists, shows, replays and answers `planc stats`; a lock an earlier planc wrote resolves its tools; the
Python API's names and the CLI's exit codes and JSON are the ones the page lists. (Every stored plan of an
earlier version loading and migrating is tests/test_stored.py's; the plan language's identity corpus is
tests/test_roundtrip.py's.)"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import invoke

import planc
from planc.store.run_store import SCHEMA_VERSION

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
COMPATIBILITY = TESTS.parent / "docs" / "compatibility.md"
# Each run store a released planc wrote, by its schema's version: the runs of tests/fixtures/store_project's
# triage.plan with `query` disk, down (its search fails) and memory. A new schema adds the store written
# before it (`write_store_fixture`), and every one stays here.
STORES = sorted(FIXTURES.glob("store_v*.sqlite"), key=lambda path: int(path.stem.removeprefix("store_v")))
RUNS = {"disk": ("ok", 0), "down": ("failed", 1), "memory": ("ok", 0)}


def write_store_fixture(folder: Path) -> Path:  # by hand, for a new schema: the runs recorded by this planc
    """The store of this planc's schema, recorded by `planc run` in a copy of the store project in `folder`."""
    import subprocess
    import sys

    shutil.copytree(FIXTURES / "store_project", folder, dirs_exist_ok=True)
    for query in RUNS:
        subprocess.run(
            [Path(sys.executable).with_name("planc"), "run", "triage.plan", "--arg", f"query={query}"],
            cwd=folder,
            capture_output=True,
        )
    written = FIXTURES / f"store_v{SCHEMA_VERSION}.sqlite"
    shutil.copyfile(folder / ".planc" / "runs.sqlite", written)
    return written


@pytest.fixture(params=STORES, ids=lambda path: path.stem)
def store(request, tmp_path) -> Path:
    """A copy of a committed store (opening it brings it up to this schema: the committed file stays as it is)."""
    copy = tmp_path / "runs.sqlite"
    shutil.copyfile(request.param, copy)
    return copy


def test_the_first_release_wrote_a_store_of_schema_10_and_it_is_kept():
    assert STORES[0].name == "store_v10.sqlite"


def test_a_store_an_earlier_planc_wrote_opens_lists_shows_and_replays(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no planc.toml: each run replays against the files it kept
    listed = invoke("runs", "--store", store, "--format", "json")
    assert listed.exit_code == 0, listed.output
    runs = json.loads(listed.stdout)
    assert [run["status"] for run in runs] == [status for status, _ in RUNS.values()]
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # brought up to this schema
    for run, (query, (status, code)) in zip(runs, RUNS.items()):
        shown = invoke("show-run", run["id"], "--store", store, "--format", "json")
        assert shown.exit_code == 0, shown.output
        record = json.loads(shown.stdout)
        assert record["arguments"] == {"query": query} and record["status"] == status
        replayed = invoke("replay", run["id"], "--store", store)
        assert replayed.exit_code == code and "Traceback" not in replayed.output
        if status == "ok":
            assert json.loads(replayed.stdout) == record["output"] == {"sent": 2}
        else:
            assert "step 1: `search` failed: ValueError: the index is down" in replayed.stderr


def test_planc_stats_reads_a_store_an_earlier_planc_wrote(store):
    result = invoke("stats", "--store", store, "--format", "json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["runs"]["count"] == 3 and found["runs"]["by_status"] == {"failed": 1, "ok": 2}
    assert found["failures"]["calls_by_tool"] == {"search": {"failed": 1}}
    assert found["costs"]["search"]["calls"] == {"estimated": [3, 3], "made": 3}


LOCK_TOML = """
[mcp.time]
command = ["mcp-server-time"]
trust_annotations = true
"""


def test_a_lock_an_earlier_planc_wrote_resolves_its_tools_offline(tmp_path):
    """tests/fixtures/planc.lock.json, written by `planc registry sync` against mcp-server-time: no server runs."""
    (tmp_path / "planc.toml").write_text(LOCK_TOML, encoding="utf-8")
    shutil.copyfile(FIXTURES / "planc.lock.json", tmp_path / "planc.lock.json")
    (tmp_path / "p.plan").write_text('time__get_current_time(timezone: "Europe/Paris")\n', encoding="utf-8")
    checked = invoke("check", "--format", "json", tmp_path / "p.plan")
    assert checked.exit_code == 0 and json.loads(checked.stdout)["diagnostics"] == []
    listed = json.loads(invoke("registry", "list", "--config", tmp_path / "planc.toml", "--format", "json").stdout)
    assert {tool["name"] for tool in listed["tools"]} >= {"time__get_current_time", "time__convert_time"}


def listed_names(heading: str) -> list[str]:
    """The names docs/compatibility.md lists in backquotes in the paragraph after `heading`."""
    text = COMPATIBILITY.read_text(encoding="utf-8")
    start = text.index(heading)
    paragraph = text[start : text.index("\n\n", text.index("\n\n", start) + 2)]
    return re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", paragraph.split("\n", 1)[1])


def test_the_python_api_is_the_names_the_page_lists():
    assert sorted(listed_names("### The Python API")) == sorted(planc.__all__)


def test_the_exit_codes_are_the_ones_the_page_lists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.plan").write_text("reshape(value: 1)\n", encoding="utf-8")
    (tmp_path / "bad.plan").write_text("reshape(value: )\n", encoding="utf-8")
    (tmp_path / "stop.plan").write_text('exit(status: "error", message: "no")\n', encoding="utf-8")
    assert invoke("check", "good.plan").exit_code == 0
    assert invoke("check", "bad.plan").exit_code == 1
    assert invoke("check", "missing.plan").exit_code == 2
    assert invoke("run", "stop.plan", "--store", tmp_path / "runs.sqlite").exit_code == 4
    text = COMPATIBILITY.read_text(encoding="utf-8")
    for code in ("0", "1", "2", "4", "130"):
        assert f"`{code}`" in text


def test_check_json_has_the_fields_the_page_promises(tmp_path):
    (tmp_path / "p.plan").write_text('reshape(value: "{$9}")\n', encoding="utf-8")
    (report,) = [json.loads(invoke("check", "--format", "json", tmp_path / "p.plan").stdout)]
    assert set(report) >= {"file", "ok", "diagnostics", "steps", "cost"}
    assert set(report["diagnostics"][0]) >= {"code", "severity", "message", "span", "step", "hints", "fix"}
