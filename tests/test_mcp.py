"""MCP servers in the registry: `planc registry sync` against real servers
(mcp-server-git over a fresh repository, mcp-server-time), then `planc check` from the lock alone."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, invoke, planc_completed
from mcp_servers import TIME_SERVER, toml_list

import planc
from planc.registry import ConfigError, Effects, load_registry
from planc.registry.mcp import mcp_sync
from planc.registry.mcp.lock import LOCK_NAME, entry, tool_hash


@pytest.fixture
def synced(mcp_project):
    """A folder with a git repository, a planc.toml declaring the git and time servers, synced (conftest.py)."""
    config, _, result = mcp_project
    return config, result


@pytest.fixture
def lock(synced):
    config, _ = synced
    return json.loads((config.parent / LOCK_NAME).read_text(encoding="utf-8"))


# --- planc registry sync -----------------------------------------------------------------


def test_sync_locks_every_server(synced):
    config, result = synced
    assert result.exit_code == 0, result.output
    counts = dict(re.findall(r"^(\w+): (\d+) tools? locked$", result.stdout, re.M))
    assert set(counts) == {"git", "time"} and all(int(count) > 0 for count in counts.values())


def test_the_lock_has_the_git_tools_with_hashes(synced, lock):
    config, _ = synced
    assert lock["format"] == "planc.lock" and lock["version"] == 1
    git = lock["servers"]["git"]
    assert git["command"] == list(load_registry(config).servers["git"].command)  # as planc.toml declares it
    assert git["roots"] == []  # none declared: none offered
    status = git["tools"]["git_status"]
    assert set(status) == {"description", "input_schema", "output_schema", "annotations", "hash"}
    assert status["input_schema"]["type"] == "object" and status["input_schema"]["properties"]
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", status["hash"])
    for name, tool in git["tools"].items():
        assert tool["hash"] == tool_hash(name, tool)
    assert len({tool["hash"] for tool in git["tools"].values()}) == len(git["tools"])


def test_sync_is_deterministic(synced):
    config, _ = synced
    lock = config.parent / LOCK_NAME
    before = lock.read_bytes()
    assert invoke("registry", "sync", "--config", str(config)).exit_code == 0
    assert lock.read_bytes() == before
    assert before.decode() == json.dumps(json.loads(before), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_a_time_server_tool_is_present(synced, lock):
    config, _ = synced
    assert "get_current_time" in lock["servers"]["time"]["tools"]
    tool = load_registry(config).tools["time__get_current_time"]
    assert tool.provider == "mcp:time" and tool.server == "time"
    assert "timezone" in tool.params and tool.required == ("timezone",)
    assert tool.returns == lock["servers"]["time"]["tools"]["get_current_time"]["output_schema"]
    # the time server annotates its tools as read-only, but it is not trusted: the defaults stand
    assert lock["servers"]["time"]["tools"]["get_current_time"]["annotations"]["readOnlyHint"] is True
    assert tool.effects == Effects()


def test_trusted_annotations_become_effects(synced, lock):
    config, _ = synced
    registry = load_registry(config)
    reset = registry.tools["git__git_reset"]
    assert lock["servers"]["git"]["tools"]["git_reset"]["annotations"]["destructiveHint"] is True
    assert reset.effects.destructive and not reset.effects.read_only
    status = registry.tools["git__git_status"]
    assert status.effects.read_only and not status.effects.destructive and not status.effects.open_world
    assert not any(tool.effects.deterministic for tool in registry.tools.values())  # never inferred
    assert status.returns is None  # mcp-server-git declares no output schema


# --- planc check from the lock alone ------------------------------------------------------


def offline_copy(synced, folder: Path, extra: str = "") -> Path:
    """The synced lock beside a planc.toml whose servers cannot start (and would leave a mark if they did)."""
    config, _ = synced
    marker = folder / "STARTED"
    start = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    missing = [str(folder / "no-such-server")]
    (folder / "planc.toml").write_text(
        f"[mcp.git]\ncommand = {toml_list(missing)}\ntrust_annotations = true\n\n"
        f"[mcp.time]\ncommand = {toml_list(start)}\n{extra}",
        encoding="utf-8",
    )
    shutil.copy(config.parent / LOCK_NAME, folder / LOCK_NAME)
    return folder / "planc.toml"


def test_check_reports_a_misspelled_argument_from_the_lock(synced, lock, tmp_path):
    config = offline_copy(synced, tmp_path)
    param = lock["servers"]["git"]["tools"]["git_status"]["input_schema"]["required"][0]
    misspelled = param[:-1]
    plan = tmp_path / "status.plan"
    plan.write_text(f'# what changed?\ngit__git_status(\n  {misspelled}: ".")\n', encoding="utf-8")
    result = invoke("check", "--config", str(config), "--format", "json", str(plan))
    assert result.exit_code == 1, result.output
    diagnostics = json.loads(result.stdout)["diagnostics"]
    e201 = [d for d in diagnostics if d["code"] == "E201"]
    assert len(e201) == 1 and misspelled in e201[0]["message"]
    assert (e201[0]["span"]["start"]["line"], e201[0]["span"]["start"]["column"]) == (3, 3)
    assert any(f"`{param}`" in hint for hint in e201[0]["hints"])
    assert "E200" not in [d["code"] for d in diagnostics]
    assert not (tmp_path / "STARTED").exists()


def test_check_passes_a_correct_call_offline(synced, lock, tmp_path):
    config = offline_copy(synced, tmp_path)
    args = ", ".join(
        f'{param}: "x"' for param in lock["servers"]["time"]["tools"]["get_current_time"]["input_schema"]["required"]
    )
    assert planc.check(f"time__get_current_time({args})", registry=load_registry(config)).ok
    assert not (tmp_path / "STARTED").exists()


def test_a_server_missing_from_the_lock_has_no_tools(synced, tmp_path):
    config = offline_copy(synced, tmp_path, extra='\n[mcp.fetch]\ncommand = ["mcp-server-fetch"]\n')
    registry = load_registry(config)
    assert "git__git_status" in registry.tools
    assert not [name for name in registry.tools if name.startswith("fetch__")]


def test_undeclared_servers_in_the_lock_are_left_out(synced, tmp_path):
    config = offline_copy(synced, tmp_path)
    config.write_text(config.read_text(encoding="utf-8").split("[mcp.time]")[0], encoding="utf-8")
    names = load_registry(config).tools
    assert "git__git_status" in names and not [name for name in names if name.startswith("time__")]


# --- failures ----------------------------------------------------------------------------


def test_a_server_that_fails_is_a_clean_error(synced, tmp_path, monkeypatch):
    pytest.importorskip("mcp")
    broken = tmp_path / "no-such-server"
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # starts, never answers
    (tmp_path / "planc.toml").write_text(
        f"[mcp.time]\ncommand = {toml_list([TIME_SERVER, '--local-timezone', 'UTC'])}\n\n"
        f"[mcp.broken]\ncommand = {toml_list([broken, '--flag'])}\n\n"
        f"[mcp.silent]\ncommand = {toml_list(silent)}\n",
        encoding="utf-8",
    )
    # --timeout holds for every server, the real time server too, which may take longer than that to
    # start on a busy machine: only the server that never answers gets it, the others a hang guard.
    list_server = mcp_sync._list_server

    async def patient_but_with_silent(server, folder, timeout):
        return await list_server(server, folder, timeout if server.name == "silent" else HANG_GUARD_S)

    monkeypatch.setattr(mcp_sync, "_list_server", patient_but_with_silent)
    result = invoke("registry", "sync", "--config", str(tmp_path / "planc.toml"), "--timeout", "0.5")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert f"MCP server `broken` (`{broken} --flag`): cannot start it" in result.stderr
    assert "MCP server `silent`" in result.stderr and "no answer within 0.5 s" in result.stderr
    assert "time: 2 tools locked" in result.stdout
    lock = json.loads((tmp_path / LOCK_NAME).read_text(encoding="utf-8"))
    assert sorted(lock["servers"]) == ["time"]


def test_a_failed_server_keeps_its_earlier_lock_entry(synced, tmp_path):
    pytest.importorskip("mcp")
    config = offline_copy(synced, tmp_path)
    before = json.loads((tmp_path / LOCK_NAME).read_text(encoding="utf-8"))
    result = invoke("registry", "sync", "--config", str(config))  # both fail at once: no server starts
    assert result.exit_code == 1
    assert "MCP server `git`" in result.stderr and "its earlier lock entry is kept" in result.stderr
    assert json.loads((tmp_path / LOCK_NAME).read_text(encoding="utf-8")) == before


def test_sync_without_a_config_is_a_usage_error(tmp_path):
    result = invoke("registry", "sync", "--config", str(tmp_path / "planc.toml"))
    assert result.exit_code == 2 and "cannot read it" in result.output


# --- roots that would reach planc's own files (no server needed) ------------------------------


def project_with_root(folder: Path, roots: str, extra: str = "") -> Path:
    """A project with a policy under `rules/`, a folder `data`, a symlink `up` from `data/` to the project folder,
    and planc.toml (line 4: `roots`) declaring a server that leaves the file STARTED if it starts."""
    (folder / "rules").mkdir()
    (folder / "rules" / "policy.cedar").write_text("permit(principal, action, resource);\n", encoding="utf-8")
    (folder / "data").mkdir()
    (folder / "data" / "up").symlink_to(folder, target_is_directory=True)
    start = [sys.executable, "-c", f"open({str(folder / 'STARTED')!r}, 'w')"]
    (folder / "planc.toml").write_text(
        f'policy = "rules/policy.cedar"\n[mcp.fs]\ncommand = {toml_list(start)}\nroots = {roots}\n{extra}', encoding="utf-8"
    )
    (folder / "p.plan").write_text("reshape(value: 1)\n", encoding="utf-8")
    return folder / "planc.toml"


@pytest.mark.parametrize(
    ("roots", "held"),
    [
        ('["."]', "holds planc.toml, the policy (rules/policy.cedar) and the run store (.planc/runs.sqlite)"),
        ('["data/up"]', "holds planc.toml, the policy (rules/policy.cedar) and the run store (.planc/runs.sqlite)"),
        ('["data", "rules"]', "holds the policy (policy.cedar)"),
        ('["data", ".planc"]', "holds the run store (runs.sqlite)"),
        ('["data/up/.."]', "holds planc.toml, the policy"),
    ],
)
@pytest.mark.parametrize("command", ["check", "run"])
def test_a_root_that_holds_planc_toml_the_policy_or_the_store_is_a_planc_toml_error(tmp_path, roots, held, command):
    """Attack: a server given such a root could rewrite the policy that judges it (through a symlink too)."""
    config = project_with_root(tmp_path, roots)
    result = invoke(command, "--config", config, tmp_path / "p.plan")
    assert result.exit_code == 2 and "Traceback" not in result.output
    root = json.loads(roots)[-1]
    assert f"{config}:4: the root `{root}` of MCP server `fs` ({(tmp_path / root).resolve()}) {held}" in result.stderr
    assert "set `allow_project_files = true` in [mcp.fs]" in result.stderr
    assert not (tmp_path / "STARTED").exists() and not (tmp_path / ".planc").exists()


@pytest.mark.parametrize(("roots", "extra"), [('["data"]', ""), ('["."]', "allow_project_files = true\n")])
def test_a_root_that_holds_none_of_them_or_may_hold_them_is_offered(tmp_path, roots, extra):
    config = project_with_root(tmp_path, roots, extra)
    result = invoke("check", "--config", config, tmp_path / "p.plan")
    assert result.exit_code == 0, result.output
    root = json.loads(roots)[0]
    assert [(offered.written, offered.path) for offered in load_registry(config).servers["fs"].roots] == [
        (root, (tmp_path / root).resolve())
    ]
    assert not (tmp_path / "STARTED").exists()


# --- the lock file's own errors (no server needed) -------------------------------------------


def write_lock(folder: Path, text: str) -> Path:
    (folder / "planc.toml").write_text('[mcp.git]\ncommand = ["mcp-server-git"]\n', encoding="utf-8")
    (folder / LOCK_NAME).write_text(text, encoding="utf-8")
    return folder / "planc.toml"


def valid_lock(**changes) -> dict:
    tool = entry(
        "git_status",
        "Show the status",
        {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]},
        None,
        {"readOnlyHint": True},
    )
    return {
        "format": "planc.lock",
        "version": 1,
        "servers": {"git": {"command": ["mcp-server-git"], "tools": {"git_status": tool}}},
        **changes,
    }


def test_an_untrusted_server_gets_the_conservative_defaults(tmp_path):
    tool = load_registry(write_lock(tmp_path, json.dumps(valid_lock()))).tools["git__git_status"]
    assert tool.required == ("repo_path",) and tool.effects == Effects() and tool.returns is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", r"planc.lock.json:1: not valid JSON"),
        (json.dumps(valid_lock(version=2)), r"lock version 2 is not one this planc reads"),
        (json.dumps(valid_lock(format="other")), r"not a planc lock file"),
        (json.dumps(valid_lock(servers={"git": {"tools": {"x": {"description": 1}}}})), r"tool `x` of server `git`"),
        (json.dumps(valid_lock()).replace("Show the status", "Rug pull"), r"does not match its hash"),
    ],
)
def test_a_broken_lock_is_a_config_error(tmp_path, text, message):
    config = write_lock(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as error:
        load_registry(config)
    assert error.value.path == tmp_path / LOCK_NAME
    result = invoke("check", "--config", str(config), "-")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_sync_rewrites_a_broken_lock(tmp_path):
    pytest.importorskip("mcp")
    if not TIME_SERVER:
        pytest.skip("mcp-server-time is needed")
    (tmp_path / "planc.toml").write_text(f"[mcp.time]\ncommand = {toml_list([TIME_SERVER])}\n", encoding="utf-8")
    (tmp_path / LOCK_NAME).write_text("{broken", encoding="utf-8")
    result = invoke("registry", "sync", "--config", str(tmp_path / "planc.toml"))
    assert result.exit_code == 0, result.output
    assert "time__get_current_time" in load_registry(tmp_path / "planc.toml").tools


def test_a_server_that_writes_garbage_on_stdout_is_one_clean_message(tmp_path):
    pytest.importorskip("mcp")
    (tmp_path / "noisy.py").write_text(
        "import sys, threading\nfor i in range(5):\n    print(f'not json {i}', flush=True)\nthreading.Event().wait()\n",
        encoding="utf-8",
    )
    (tmp_path / "planc.toml").write_text(f"[mcp.noisy]\ncommand = {toml_list([sys.executable, 'noisy.py'])}\n", encoding="utf-8")
    done = planc_completed("registry", "sync", "--config", tmp_path / "planc.toml", "--timeout", "0.5")
    assert done.returncode == 1 and "Traceback" not in done.stderr  # the SDK logs one per line by itself
    assert "it wrote 5 lines that are not MCP on its standard output (`not json 0`" in done.stderr
    assert done.stderr.count("MCP server `noisy`") == 1
