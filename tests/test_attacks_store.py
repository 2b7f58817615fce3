"""Attacks on what planc promises about its record: each test breaks one promise's edge on purpose.

Every test runs a project whose tools are spies: each call appends a line to `calls.log` before
it does anything else, so a test counts exactly the calls that were made. Each asserts the exit
code, the run's status (and its calls' outcomes) as the store holds them, and that no traceback
reached the user.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli import invoke
from tool_project import tool_project

TOOLS = '''
import json
from pathlib import Path

SPY = Path(__file__).with_name("calls.log")


def _called(name, **args):
    with open(SPY, "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")


def send(text):
    _called("send", text=text)
    return {"sent": text}
'''

TOML = '''
[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "attackstore", TOOLS, TOML):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        yield tmp_path


def write_plan(project, text: str, name: str = "p.plan") -> str:
    (project / name).write_text(text, encoding="utf-8")
    return name


def calls(project) -> list[dict]:
    """Every call the spies saw, in order."""
    log = project / "calls.log"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def stored_runs(store) -> list[tuple]:
    """(id, status) of every run in `store`, oldest first; none when there is no store."""
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return db.execute("SELECT id, status FROM runs ORDER BY started_at, id").fetchall()


def clean(result) -> None:
    """No traceback reached the user, whatever the command printed."""
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


# --- `planc run --events` into a folder that does not exist


def test_events_into_a_missing_folder_is_one_usage_message_and_nothing_runs(project):
    write_plan(project, 'send(text: "hi")\n')
    result = invoke("run", "p.plan", "--events", "no/such/folder/events.jsonl")
    clean(result)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: --events no/such/folder/events.jsonl: cannot write the events there: No such file or directory"]
    assert calls(project) == []
    assert stored_runs(project / "runs.sqlite") == []  # not even a run left `running`
