"""The real MCP servers the tests talk to (the dev extra installs them, and keyed_mcp_server.py is written
with the SDK), and a git repository for them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def executable(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)  # the venv's console scripts
    return str(beside) if beside.exists() else shutil.which(name)


GIT_SERVER, TIME_SERVER = executable("mcp-server-git"), executable("mcp-server-time")
KEYED_SERVER = [sys.executable, str(Path(__file__).with_name("keyed_mcp_server.py"))]  # records each `_meta`


def toml_list(parts) -> str:
    return json.dumps([str(part) for part in parts])


def require_servers() -> None:
    """Skip, saying why, where the servers or git are missing."""
    pytest.importorskip("mcp")
    if not (GIT_SERVER and TIME_SERVER and shutil.which("git")):
        pytest.skip("mcp-server-git, mcp-server-time (the dev extra) and git are needed")


def servers_toml(repo: Path, git_options: str = "") -> str:
    """A planc.toml declaring the git server (over `repo`, its annotations trusted) and the time server."""
    return (f"[mcp.git]\ncommand = {toml_list([GIT_SERVER, '--repository', repo])}\n"
            f"trust_annotations = true\n{git_options}\n"
            # without --local-timezone the tools' descriptions name the machine's timezone
            f"[mcp.time]\ncommand = {toml_list([TIME_SERVER, '--local-timezone', 'UTC'])}\n")


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
