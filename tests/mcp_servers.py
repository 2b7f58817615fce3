"""The real MCP servers the tests talk to (the dev extra installs them, and keyed_mcp_server.py is written
with the SDK), and a git repository for them.

Each start of mcp-server-git or mcp-server-time imports the MCP SDK and its own modules: about 2 s of
CPU, for a server that answers in milliseconds. The session's shared project (conftest.py `mcp_project`)
declares them as command lines of a fork server that imported them once (`forked_servers`, cli.py
`planc_forks`): each start is still a process of its own that planc starts and talks to over its
standard streams, running the server's own entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest


def executable(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)  # the venv's console scripts
    return str(beside) if beside.exists() else shutil.which(name)


GIT_SERVER, TIME_SERVER = executable("mcp-server-git"), executable("mcp-server-time")
ENTRY_POINTS = {"git": "mcp_server_git:main", "time": "mcp_server_time:main"}  # their console scripts'


@contextmanager
def forked_servers(socket: Path):
    """A fork server (listening on `socket`) that has imported both servers: give it to `servers_toml`."""
    from cli import planc_forks

    with planc_forks(listen=socket, warm=tuple(entry.split(":")[0] for entry in ENTRY_POINTS.values())) as forks:
        yield forks


KEYED_SERVER = [sys.executable, str(Path(__file__).with_name("keyed_mcp_server.py"))]  # records each `_meta`


def toml_list(parts) -> str:
    return json.dumps([str(part) for part in parts])


def require_servers() -> None:
    """Skip, saying why, where the servers or git are missing."""
    pytest.importorskip("mcp")
    if not (GIT_SERVER and TIME_SERVER and shutil.which("git")):
        pytest.skip("mcp-server-git, mcp-server-time (the dev extra) and git are needed")


def servers_toml(repo: Path, git_options: str = "", forks=None) -> str:
    """A planc.toml declaring the git server (over `repo`, its annotations trusted) and the time server: their
    console scripts, or their entry points forked by `forks` (`forked_servers`)."""

    def command(name: str, script: str | None, *args) -> str:
        return toml_list(forks.command(*args, entry=ENTRY_POINTS[name]) if forks else [script, *args])

    return (
        f"[mcp.git]\ncommand = {command('git', GIT_SERVER, '--repository', repo)}\n"
        f"trust_annotations = true\n{git_options}\n"
        # without --local-timezone the tools' descriptions name the machine's timezone
        f"[mcp.time]\ncommand = {command('time', TIME_SERVER, '--local-timezone', 'UTC')}\n"
    )


def git_repository(folder: Path) -> Path:
    """`folder/repo`: a git repository with one commit of a README."""
    repo = folder / "repo"
    repo.mkdir()
    for command in (["init", "-q"], ["config", "user.name", "planc tests"], ["config", "user.email", "t@example.org"]):
        subprocess.run(["git", *command], cwd=repo, check=True)
    (repo / "README").write_text("hello\n", encoding="utf-8")
    subprocess.run(["git", "add", "README"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "first"], cwd=repo, check=True)
    return repo
