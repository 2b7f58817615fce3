"""The pre-commit hooks (.pre-commit-hooks.yaml), run by pre-commit itself against this repository, on a
git repository of plans: `planc-check` fails on a plan with errors, `planc-fmt` rewrites a plan into
canonical form and fails for having changed it.

pre-commit takes this repository as a user's configuration names it (`repo:` and `rev:`): its working
tree, uncommitted changes included (as `pre-commit try-repo` would take it), committed once into a
repository of the module's own. Every hook run then shares the one environment of planc that pre-commit
builds for that revision (`try-repo` would build one per call, in a folder of its own: a minute of
the suite's time)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # conftest.py: the slow tier

ROOT = Path(__file__).resolve().parents[1]
HANG_GUARD_S = 900  # pre-commit builds its environment of planc once: a guard, not a measure

TOML = """[tools.search]
params = { query = { type = "string" } }
required = ["query"]
effects = { read_only = true }
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is needed")
    return tmp_path_factory.mktemp("pre-commit-home")  # its environments, shared by the tests of this module


@pytest.fixture(scope="module")
def hooks_config(tmp_path_factory, pre_commit_home) -> Path:
    """A pre-commit configuration naming this repository's hooks at a revision holding its working tree:
    every tracked file as it is now, committed in a repository of the module's own."""
    folder = tmp_path_factory.mktemp("hooks")
    snapshot = folder / "planc"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():  # a file deleted in the working tree stays out
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, snapshot / name)
    git(snapshot, "init", "-q")
    git(snapshot, "add", "-A")
    git(snapshot, "-c", "user.name=planc tests", "-c", "user.email=t@example.org", "commit", "-q", "-m", "snapshot")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=snapshot, check=True, capture_output=True, text=True).stdout.strip()
    config = folder / "pre-commit-config.yaml"
    config.write_text(
        f"repos:\n- repo: {snapshot}\n  rev: {rev}\n  hooks:\n  - id: planc-check\n  - id: planc-fmt\n", encoding="utf-8"
    )
    return config


@pytest.fixture
def plans(tmp_path):
    repo = tmp_path / "plans"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "planc tests")
    git(repo, "config", "user.email", "t@example.org")
    (repo / "planc.toml").write_text(TOML, encoding="utf-8")
    (repo / "good.plan").write_text('search(query: "disk")\n', encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "plans")
    return repo


def hook(repo: Path, home: Path, config: Path, hook_id: str) -> subprocess.CompletedProcess:
    """`pre-commit run` of one hook of this repository (`config`), on every file of `repo`."""
    pre_commit = Path(sys.executable).with_name("pre-commit")
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        [str(pre_commit), "run", "--config", str(config), hook_id, "--all-files"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )


def test_planc_check_passes_clean_plans_and_fails_on_errors(plans, pre_commit_home, hooks_config):
    clean = hook(plans, pre_commit_home, hooks_config, "planc-check")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (plans / "bad.plan").write_text('serch(query: "disk")\n', encoding="utf-8")
    git(plans, "add", "bad.plan")
    failed = hook(plans, pre_commit_home, hooks_config, "planc-check")
    assert failed.returncode == 1 and "E200" in failed.stdout and "bad.plan" in failed.stdout


def test_planc_fmt_rewrites_and_fails_until_the_plans_are_canonical(plans, pre_commit_home, hooks_config):
    (plans / "messy.plan").write_text('search( query:"x" )\n', encoding="utf-8")
    git(plans, "add", "messy.plan")
    rewritten = hook(plans, pre_commit_home, hooks_config, "planc-fmt")
    assert rewritten.returncode == 1 and "files were modified by this hook" in rewritten.stdout
    assert (plans / "messy.plan").read_text(encoding="utf-8") == 'search(query: "x")\n'
    git(plans, "add", "messy.plan")
    assert hook(plans, pre_commit_home, hooks_config, "planc-fmt").returncode == 0
