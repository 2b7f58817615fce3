"""MCP tools at run time: `planc run` against the real mcp-server-git (over a
fresh repository) and mcp-server-time, the lock compared with the live servers before the first step,
and a tool's error as a failed step."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli import invoke
from mcp_servers import TIME_SERVER, toml_list
from test_attacks import statuses

from planc.backend.calls.mcp_runtime import needed_servers
from planc.backend.report.events import STAMP
from planc.passes.check import check
from planc.registry import ConfigError, load_registry
from planc.registry.mcp.lock import LOCK_NAME, entry, started_as


@pytest.fixture(scope="module")
def project(mcp_project):
    """A git repository (with an untracked file), a planc.toml declaring the git and time servers, and its
    synced lock (conftest.py)."""
    config, repo, synced = mcp_project
    assert synced.exit_code == 0, synced.output
    branch = subprocess.run(
        ["git", "branch", "--show-current"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    return config, repo, branch


def run_plan(config: Path, folder: Path, text: str, *args: str):
    plan = folder / "p.plan"
    plan.write_text(text, encoding="utf-8")
    return invoke("run", "--config", str(config), str(plan), *args)


def copy_project(project, folder: Path, edit_lock=None, toml=None) -> Path:
    """The project's planc.toml (or `toml`) and lock in `folder`, the lock changed by `edit_lock`; with `toml`, the
    lock says its servers were synced as `toml` starts them (a run refuses a server started otherwise)."""
    config, _, _ = project
    lock = json.loads((config.parent / LOCK_NAME).read_text(encoding="utf-8"))
    (folder / "planc.toml").write_text(toml if toml is not None else config.read_text(encoding="utf-8"), encoding="utf-8")
    if toml is not None:
        for name, server in load_registry(folder / "planc.toml", locked=False).servers.items():
            lock["servers"][name].update(started_as(server))
    if edit_lock is not None:
        edit_lock(lock)
    (folder / LOCK_NAME).write_text(json.dumps(lock), encoding="utf-8")
    return folder / "planc.toml"


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- calls to the real servers ---------------------------------------------------------------


def test_git_status_through_planc_run(project, tmp_path):
    config, repo, branch = project
    result = run_plan(
        config, tmp_path, f'# what changed?\ngit__git_status(repo_path: "{repo}")\n', "--events", str(tmp_path / "events.jsonl")
    )
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert isinstance(status, str) and f"On branch {branch}" in status and "NEW" in status
    started = [
        {field: value for field, value in event.items() if field not in STAMP}
        for event in events(tmp_path / "events.jsonl")
        if event["event"] == "tool_started"
    ]
    assert started == [
        {"event": "tool_started", "step": "1", "tool": "git__git_status", "input": {"repo_path": str(repo)}, "stack": []}
    ]


def test_current_time_through_planc_run(project, tmp_path):
    config, _, _ = project
    result = run_plan(config, tmp_path, '# now\ntime__get_current_time(timezone: "UTC")\n')
    assert result.exit_code == 0, result.output
    now = json.loads(result.stdout)
    assert now["timezone"] == "UTC"
    assert now["datetime"].endswith("+00:00") and now["datetime"][:2] == "20"


def test_results_flow_between_mcp_steps(project, tmp_path):
    config, repo, branch = project
    text = (
        f'time__get_current_time(timezone: "UTC")\ngit__git_status(repo_path: "{repo}")\n'
        "reshape(value: {zone: $1.timezone, status: $2})\n"
    )
    result = run_plan(config, tmp_path, text)
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    assert output["zone"] == "UTC" and branch in output["status"]


def test_only_the_servers_the_plan_calls_are_started(project, tmp_path):
    config, _, _ = project
    marker = tmp_path / "GIT-STARTED"
    start = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    toml = (
        f"[mcp.git]\ncommand = {toml_list(start)}\ntrust_annotations = true\n\n"
        f"[mcp.time]\ncommand = {toml_list([TIME_SERVER, '--local-timezone', 'UTC'])}\n"
    )
    copy = copy_project(project, tmp_path, toml=toml)
    result = run_plan(copy, tmp_path, 'time__get_current_time(timezone: "UTC")\n')
    assert result.exit_code == 0, result.output
    assert not marker.exists()


def test_an_agent_step_needs_every_locked_server(project):
    config, _, _ = project
    registry = load_registry(config)
    plain = check('time__get_current_time(timezone: "UTC")\n', registry=registry)
    assert needed_servers(plain, registry) == ["time"]
    agent = check('decide(when: true, then: { agent(prompt: "p", output_schema: {type: "object"}) })\n', registry=registry)
    assert agent.ok and needed_servers(agent, registry) == ["git", "time"]


# --- drift from the lock ------------------------------------------------------------------------


def test_a_changed_description_is_refused_before_any_call(project, tmp_path):
    def rug_pull(lock):  # a valid lock (its hashes agree) that differs from what the server says
        tools = lock["servers"]["git"]["tools"]
        old = tools["git_status"]
        tools["git_status"] = entry(
            "git_status", old["description"] + " Also uploads it.", old["input_schema"], old["output_schema"], old["annotations"]
        )

    config = copy_project(project, tmp_path, rug_pull)
    _, repo, _ = project
    text = f'time__get_current_time(timezone: "UTC")\ngit__git_status(repo_path: "{repo}")\n'
    result = run_plan(config, tmp_path, text, "--events", str(tmp_path / "events.jsonl"))
    assert result.exit_code == 1, result.output
    assert "`git`" in result.stderr and "`git_status`" in result.stderr and "description" in result.stderr
    assert "rug pull" in result.stderr and result.stdout == ""
    assert not [event for event in events(tmp_path / "events.jsonl") if event["event"] == "tool_started"]


def test_drift_in_a_server_only_a_declared_plan_uses_is_refused_before_the_first_step(project, tmp_path):
    """The outer plan reads the clock, then calls a plan that reads git: the git server's drift stops the
    run before the clock is read."""

    def rug_pull(lock):
        tools = lock["servers"]["git"]["tools"]
        old = tools["git_status"]
        tools["git_status"] = entry(
            "git_status", old["description"] + " Also uploads it.", old["input_schema"], old["output_schema"], old["annotations"]
        )

    config, repo, _ = project
    (tmp_path / "status.plan").write_text(f'git__git_status(repo_path: "{repo}")\n', encoding="utf-8")
    toml = config.read_text(encoding="utf-8") + '\n[plans.status]\nfile = "status.plan"\n'
    copied = copy_project(project, tmp_path, rug_pull, toml)
    result = run_plan(
        copied, tmp_path, 'time__get_current_time(timezone: "UTC")\nplan__status()\n', "--events", str(tmp_path / "events.jsonl")
    )
    assert result.exit_code == 1 and "rug pull" in result.stderr and "`git_status`" in result.stderr
    assert "Traceback" not in result.output
    assert not [event for event in events(tmp_path / "events.jsonl") if event["event"] == "tool_started"]


def test_a_changed_input_schema_names_what_changed(project, tmp_path):
    def rug_pull(lock):
        tools = lock["servers"]["time"]["tools"]
        old = tools["convert_time"]
        schema = {**old["input_schema"], "properties": {**old["input_schema"]["properties"], "x": {"type": "string"}}}
        tools["convert_time"] = entry("convert_time", old["description"], schema, old["output_schema"], old["annotations"])

    config = copy_project(project, tmp_path, rug_pull)
    result = run_plan(config, tmp_path, 'time__get_current_time(timezone: "UTC")\n')
    assert result.exit_code == 1, result.output
    assert "`time`" in result.stderr and "`convert_time`" in result.stderr and "input schema" in result.stderr


def test_a_tool_the_server_no_longer_has_is_refused(project, tmp_path):
    def add(lock):
        lock["servers"]["time"]["tools"]["get_past_time"] = entry(
            "get_past_time", "An hour ago", {"type": "object", "properties": {}}, None, None
        )

    config = copy_project(project, tmp_path, add)
    result = run_plan(config, tmp_path, 'time__get_current_time(timezone: "UTC")\n')
    assert result.exit_code == 1, result.output
    assert "`time`" in result.stderr and "no longer has the tool `get_past_time`" in result.stderr


def test_a_server_offered_other_roots_or_started_otherwise_than_synced_waits_for_a_sync(project, tmp_path, monkeypatch):
    """Attack: widening what a server reaches after the lock was reviewed. The lock records the command and the
    roots of the sync; a run that would start the server otherwise starts nothing, until the next sync."""
    config, _, _ = project
    spy = ["sh", "-c", 'echo started >> starts; exec "$@"', "sh", *load_registry(config).servers["time"].command]
    toml = tmp_path / "planc.toml"
    (tmp_path / "data").mkdir()
    (tmp_path / "more").mkdir()
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))

    def declare(roots: str, command=spy) -> None:
        toml.write_text(f"[mcp.time]\ncommand = {toml_list(command)}\n{roots}", encoding="utf-8")

    def now():
        result = run_plan(toml, tmp_path, 'time__get_current_time(timezone: "UTC")\n')
        assert "Traceback" not in result.output
        return result

    def started() -> int:
        return len((tmp_path / "starts").read_text(encoding="utf-8").splitlines())

    declare('roots = ["data"]\n')
    assert invoke("registry", "sync", "--config", toml).exit_code == 0
    locked = json.loads((tmp_path / LOCK_NAME).read_text(encoding="utf-8"))["servers"]["time"]
    assert (locked["command"], locked["roots"]) == (spy, ["data"])
    assert now().exit_code == 0 and started() == 2
    for roots, command, said in [
        (
            'roots = ["data", "more"]\n',
            spy,
            'was synced with the roots ["data"], and planc.toml now offers it the roots ["data", "more"]',
        ),
        ("", spy, 'was synced with the roots ["data"], and planc.toml now offers it no roots'),
        (
            'roots = ["data"]\n',
            [*spy, "--local-timezone", "Europe/Paris"],
            f"was synced as `{shlex.join(spy)}`, and planc.toml now starts it as `{shlex.join(spy)} --local-timezone",
        ),
    ]:
        declare(roots, command)
        result = now()
        assert result.exit_code == 1 and f"MCP server `time` {said}" in result.stderr
        assert "nothing was run. Review the server, then `planc registry sync`" in result.stderr
        assert started() == 2  # no server started
    assert invoke("registry", "sync", "--config", toml).exit_code == 0
    assert now().exit_code == 0 and started() == 4  # the sync's start and the run's
    assert statuses(tmp_path) == ["ok", "failed", "failed", "failed", "ok"]


def test_a_server_that_cannot_start_is_named(project, tmp_path):
    config, _, _ = project
    missing = tmp_path / "no-such-server"
    declared = toml_list(load_registry(config).servers["time"].command)
    toml = config.read_text(encoding="utf-8").replace(declared, toml_list([missing]))
    copy = copy_project(project, tmp_path, toml=toml)
    result = run_plan(copy, tmp_path, 'time__get_current_time(timezone: "UTC")\n')
    assert result.exit_code == 1, result.output
    assert "MCP server `time`" in result.stderr and "not found" in result.stderr


# --- a tool's own error ---------------------------------------------------------------------------


def test_an_mcp_tool_error_is_a_failed_step_with_the_servers_message(project, tmp_path):
    config, _, _ = project
    elsewhere = tmp_path / "not-a-repository"
    elsewhere.mkdir()
    text = f'time__get_current_time(timezone: "UTC")\ngit__git_status(repo_path: "{elsewhere}")\n'
    result = run_plan(config, tmp_path, text)
    assert result.exit_code == 1, result.output
    assert "step 2: `git__git_status` failed" in result.stderr
    assert str(elsewhere) in result.stderr  # the server's own message names the path
    assert result.stdout == ""


# --- configuration ------------------------------------------------------------------------------------


def test_timeout_s_must_be_a_positive_number(tmp_path):
    config = tmp_path / "planc.toml"
    config.write_text('[mcp.x]\ncommand = ["x"]\ntimeout_s = 0\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="timeout_s"):
        load_registry(config)
    config.write_text('[mcp.x]\ncommand = ["x"]\ntimeout_s = 2.5\n', encoding="utf-8")
    assert load_registry(config).servers["x"].timeout_s == 2.5


# --- the optimizer against real servers ---------------------------------------------------------


def test_optimize_never_merges_two_reads_of_the_clock_or_of_a_read_only_tool_not_declared_deterministic(project, tmp_path):
    config, repo, _ = project
    text = (
        f'time__get_current_time(timezone: "UTC")\ntime__get_current_time(timezone: "UTC")\n'
        f'git__git_status(repo_path: "{repo}")\ngit__git_status(repo_path: "{repo}")\n'
    )
    result = run_plan(config, tmp_path, text, "--optimize")
    assert result.exit_code == 0, result.output
    assert "N600" not in result.stderr  # nothing reused: the clock has no metadata, git_status is not deterministic
    assert "note[N602]: step 2 repeats the call of step 1, and both calls run: `time__get_current_time`" in result.stderr
    run_id = next(line[len("run: ") :] for line in result.stderr.splitlines() if line.startswith("run: "))
    recorded = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert sorted(call["tool"] for call in recorded["calls"]) == ["git__git_status"] * 2 + ["time__get_current_time"] * 2
