"""planc never widens what an MCP server reaches: the filesystem reference server from npm (`tests/npm_servers`,
pinned by its package-lock.json; `.ci/run` installs it with `npm ci`), started on `data/`.

That server replaces the folders on its command line with its client's roots, so a client that offered the
project folder as a root would let it read and rewrite planc.toml and the policy. planc offers roots only as
`[mcp.NAME] roots` declares them: none here, so the server keeps to `data/`, and refuses, with its own message,
a path in the project folder, a `../` out of `data/` and a symlink from `data/` to the project folder. Each
server is started through a spy that appends a line to `starts` in the project folder.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import invoke
from mcp_servers import toml_list

pytestmark = pytest.mark.slow  # conftest.py: the slow tier

FILESYSTEM = (
    Path(__file__).with_name("npm_servers") / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
)
NODE = shutil.which("node")
POLICY = "permit(principal, action, resource);\n"


def require_filesystem() -> None:
    pytest.importorskip("mcp")
    if NODE is None or not FILESYSTEM.is_file():
        pytest.skip("the filesystem MCP server needs node and `npm ci --prefix tests/npm_servers` (.ci/run runs it)")


def filesystem_project(folder: Path, roots: str = "") -> Path:
    """`folder`: planc.toml (its policy beside it) declaring the filesystem server started on `data/`, which holds
    `notes.txt` and `up`, a symlink to `folder`; `roots` is the rest of the server's table."""
    require_filesystem()
    (folder / "data").mkdir()
    (folder / "data" / "notes.txt").write_text("inside data\n", encoding="utf-8")
    (folder / "data" / "up").symlink_to(folder, target_is_directory=True)
    (folder / "policy.cedar").write_text(POLICY, encoding="utf-8")
    command = ["sh", "-c", f'echo started >> starts; exec "{NODE}" "{FILESYSTEM}" data']
    config = folder / "planc.toml"
    config.write_text(
        f'policy = "policy.cedar"\n\n[mcp.fs]\ncommand = {toml_list(command)}\ntimeout_s = 60\n{roots}', encoding="utf-8"
    )
    return config


def starts(folder: Path) -> int:
    spy = folder / "starts"
    return len(spy.read_text().splitlines()) if spy.exists() else 0


def run(folder: Path, plan: str):
    """`planc run` of `plan` in `folder`, recorded in its own store."""
    (folder / "p.plan").write_text(plan + "\n", encoding="utf-8")
    result = invoke("run", folder / "p.plan", "--config", folder / "planc.toml", "--store", folder / "runs.sqlite")
    assert "Traceback" not in result.output
    return result


def last_run(folder: Path) -> tuple[str, list[tuple]]:
    """The last run's status and its recorded calls (tool, outcome)."""
    with sqlite3.connect(folder / "runs.sqlite") as db:
        run_id, status = db.execute("SELECT id, status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        return status, db.execute("SELECT tool, outcome FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)).fetchall()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The filesystem server on `data/`, no roots declared, synced."""
    folder = tmp_path_factory.mktemp("filesystem").resolve()
    config = filesystem_project(folder)
    synced = invoke("registry", "sync", "--config", config)
    assert synced.exit_code == 0, synced.output
    return folder


OUTSIDE = "Access denied - path outside allowed directories"
THROUGH_SYMLINK = "Access denied - symlink target outside allowed directories"


@pytest.mark.parametrize(
    ("path", "refusal"),
    [
        ("{folder}/planc.toml", OUTSIDE),  # the project folder
        ("{folder}/data/../planc.toml", OUTSIDE),  # a `../` out of data/
        ("../planc.toml", OUTSIDE),  # the same, relative to data/
        ("{folder}/data/up/planc.toml", THROUGH_SYMLINK),  # data/up is the project folder
    ],
)
def test_a_read_outside_data_is_refused_by_the_server(project, path, refusal):
    ran = run(project, f'fs__read_text_file(path: "{path.format(folder=project)}")')
    assert ran.exit_code == 1
    assert (
        f"step 1: `fs__read_text_file` failed: McpToolError: {refusal}: {project}/planc.toml not in {project}/data" in ran.stderr
    )
    assert "[mcp.fs]" not in ran.output  # nothing of planc.toml reached the plan
    assert last_run(project) == ("failed", [("fs__read_text_file", "failed")])


@pytest.mark.parametrize(
    ("path", "refusal"),
    [
        ("{folder}/policy.cedar", OUTSIDE),
        ("{folder}/data/../policy.cedar", OUTSIDE),
        ("{folder}/data/up/policy.cedar", THROUGH_SYMLINK),
    ],
)
def test_a_write_to_the_policy_is_refused_by_the_server_and_leaves_it_as_it_was(project, path, refusal):
    """Attack: a step that would have the server rewrite the policy that judges it."""
    before = (project / "policy.cedar").read_bytes()
    ran = run(project, f'fs__write_file(path: "{path.format(folder=project)}", content: "forbid(principal, action, resource);")')
    assert ran.exit_code == 1
    assert f"step 1: `fs__write_file` failed: McpToolError: {refusal}: {project}/policy.cedar not in {project}/data" in ran.stderr
    assert (project / "policy.cedar").read_bytes() == before == POLICY.encode()
    assert last_run(project) == ("failed", [("fs__write_file", "failed")])


def test_the_server_keeps_the_folder_it_was_started_on(project):
    ran = run(project, "fs__list_allowed_directories()")
    assert ran.exit_code == 0, ran.output
    assert f'Allowed directories:\\n{project}/data"' in ran.stdout  # JSON: the one folder, data/


def test_with_roots_data_reads_inside_data_work_and_nothing_outside(tmp_path):
    folder = tmp_path.resolve()
    config = filesystem_project(folder, 'roots = ["data"]\n')
    synced = invoke("registry", "sync", "--config", config)
    assert synced.exit_code == 0, synced.output
    ran = run(folder, f'fs__read_text_file(path: "{folder}/data/notes.txt")')
    assert ran.exit_code == 0, ran.output
    assert "inside data" in ran.stdout
    assert last_run(folder) == ("ok", [("fs__read_text_file", "ok")])
    ran = run(folder, f'fs__read_text_file(path: "{folder}/data/up/planc.toml")')
    assert ran.exit_code == 1 and THROUGH_SYMLINK in ran.stderr
    assert starts(folder) == 3  # the sync's and each run's


@pytest.mark.parametrize("roots", ['["."]', '["data/up"]', '["data", ".."]'])
@pytest.mark.parametrize("command", [("registry", "sync"), ("run",)])
def test_a_root_holding_planc_toml_is_a_planc_toml_error_and_starts_no_server(tmp_path, roots, command):
    folder = tmp_path.resolve()
    config = filesystem_project(folder, f"roots = {roots}\n")
    (folder / "p.plan").write_text(f'fs__read_text_file(path: "{folder}/planc.toml")\n', encoding="utf-8")
    done = invoke(*command, *((folder / "p.plan",) if command == ("run",) else ()), "--config", config)
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert f"{config}:6: the root `" in done.stderr and "of MCP server `fs`" in done.stderr
    assert "holds planc.toml" in done.stderr
    assert starts(folder) == 0 and not (folder / "planc.lock.json").exists()
