"""`RunSpec.from_record`: the one place a run's recorded options are read, each older record read
with the defaults its version implies, and a record this planc cannot read refused with one line."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import invoke

from planc.backend.run.spec import SPEC_VERSION, ReadFiles, RunSpec
from planc.passes.cost.budget import Budget
from planc.registry.settings.declarations import Executor
from planc.store.run_store import RunStore

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ANONYMOUS = 'User::"anonymous"'


def test_the_runs_of_a_version_10_store_read_as_they_ran():
    """Store schema 10 recorded its options without a version (0): every key but `optimize` and
    `client`."""
    store = RunStore(FIXTURES / "store_v10.sqlite", read_only=True)
    try:
        runs = [store.run(row["id"]) for row in store.runs()]
    finally:
        store.close()
    assert len(runs) == 3
    for run in runs:
        spec = RunSpec.from_record(run)
        assert (spec.principal, spec.written_by, spec.approvals, spec.approve) == (
            ANONYMOUS,
            frozenset(),
            False,
            False,
        )
        assert spec.budget == Budget() and spec.executor == Executor() and spec.optimize is False
        assert spec.arguments == run["arguments"] and spec.config == "/tmp/w40/storefix/planc.toml"
        assert spec.read == ReadFiles(
            config=run["options"]["read"]["config"],
            lock=None,
            policy=run["options"]["read"]["policy"],
        )
        assert sorted(spec.code_tools) == ["notify", "search"] and (spec.finish, spec.query) == (
            "output",
            None,
        )


# The options as each earlier planc recorded them, oldest first: the keys it had, no version.
EARLIER = [
    {"config": "/p/planc.toml", "policy": None, "finish": "output", "query": None},
    {
        "config": "/p/planc.toml",
        "policy": "/p/policy.cedar",
        "finish": "solver",
        "query": "why?",
        "approve": True,
        "budget": [1.5, 10, None],
        "principal": 'User::"ops"',
    },
    {
        "config": "/p/planc.toml",
        "policy": None,
        "finish": "output",
        "query": None,
        "approve": False,
        "budget": [None, None, None],
        "returns": {"type": "object"},
        "executor": {"kind": "ray", "address": "auto"},
        "principal": ANONYMOUS,
        "read": {"config": "c1", "lock": "l1", "policy": None},
        "principals": [],
        "code_tools": {},
        "approvals": True,
        "written_by": ["untrusted"],
        "client": "mcp",
    },
]


def test_each_earlier_shape_of_the_options_reads_with_its_defaults():
    oldest, approved, mcp = (RunSpec.from_record({"id": "r", "options": options, "arguments": {"a": 1}}) for options in EARLIER)
    assert oldest == RunSpec(arguments={"a": 1}, config="/p/planc.toml")  # every other choice its default
    assert (approved.principal, approved.approve, approved.budget, approved.policy) == (
        'User::"ops"',
        True,
        Budget(1.5, 10, None),
        "/p/policy.cedar",
    )
    assert (approved.finish, approved.query, approved.read) == ("solver", "why?", None)
    assert (mcp.written_by, mcp.approvals, mcp.client, mcp.returns) == (
        frozenset({"untrusted"}),
        True,
        "mcp",
        {"type": "object"},
    )
    assert mcp.executor == Executor("ray", "auto") and mcp.read == ReadFiles("c1", "l1", None)


def test_a_planned_run_takes_its_budget_from_its_planning():
    planned = {
        "task": "t",
        "role": "planner",
        "rounds": 3,
        "grammar": None,
        "run": True,
        "budget": [None, 4, None],
        "output": None,
    }
    spec = RunSpec.from_record({"id": "r", "options": {"config": "/p/planc.toml", "planned": planned}})
    assert spec.budget == Budget(None, 4, None) and spec.planned == planned


def test_what_a_spec_records_reads_back_the_same():
    spec = RunSpec(
        principal='User::"alice"',
        principals=({"uid": 'User::"alice"', "attrs": {}, "parents": []},),
        written_by=frozenset({"untrusted", "mail"}),
        approvals=True,
        approve=True,
        budget=Budget(0.5, 3, 2),
        optimize=True,
        arguments={"n": [1, 2]},
        returns={"type": "array"},
        config="/p/planc.toml",
        policy="/p/other.cedar",
        read=ReadFiles("c", None, "p"),
        code_tools={"t": {"name": "t"}},
        executor=Executor("ray", "ray://h:1"),
        finish="none",
        client="mcp",
        clock={"start": "2026-01-01T00:00:00Z", "step_ms": 1},
    )
    record = spec.to_record()
    assert record["spec"] == SPEC_VERSION
    assert RunSpec.from_record({"id": "r", "options": record, "arguments": {"n": [1, 2]}}) == spec


def test_a_run_a_newer_planc_recorded_is_refused_in_one_line(tmp_path, monkeypatch):
    """A record whose options are of a later version: resume, replay and approve say so, and run
    nothing."""
    store = tmp_path / "newer.store"  # not *.sqlite: the replay of every store passes it by
    shutil.copy(FIXTURES / "store_v10.sqlite", store)
    opened = RunStore(store)  # brought up to this planc's schema
    [first, *_] = [row["id"] for row in opened.runs()]
    opened.close()
    with sqlite3.connect(store) as db:
        db.execute(
            "UPDATE runs SET options = json_set(options, '$.spec', ?), status = 'interrupted' WHERE id = ?",
            (SPEC_VERSION + 1, first),
        )
    reader = RunStore(store, read_only=True)
    try:
        record = reader.run(first)
    finally:
        reader.close()
    with pytest.raises(ValueError, match="recorded by a newer planc"):
        RunSpec.from_record(record)
    monkeypatch.chdir(tmp_path)
    for command in ("resume", "replay"):
        refused = invoke(command, first, "--store", store)
        assert refused.exit_code == 1 and "Traceback" not in refused.output
        assert refused.stderr == (
            f"error: run {first} was recorded by a newer planc (options version "
            f"{SPEC_VERSION + 1}); upgrade planc to continue it\n"
        )
