"""The suite's own guards, run as pytest runs them: a skip CI does not allow fails the session, and the
session says which hypothesis profile it ran and how many examples each property ran.

Each test runs pytest in a process of its own over a folder holding this folder's conftest.py and
profiles.py and one small test file, so that the guards are the ones every test session has.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli import HANG_GUARD_S

TESTS = Path(__file__).resolve().parent

SKIPPING = """
import pytest
from hypothesis import given, strategies as st


def test_without_its_tool():
    pytest.skip("the tool is not installed")


def test_in_a_container():
    pytest.skip("no mount namespace here: unshare failed")


@given(st.integers())
def test_a_property(number):
    assert isinstance(number, int)
"""


SKIPPING_MODULE = """
import pytest

pytest.skip("the module's tool is not installed", allow_module_level=True)
"""


def session(tmp_path: Path, allowed: str | None, profile: str = "dev", *options: str) -> subprocess.CompletedProcess:
    """pytest over the small test files in a process of its own, with `options` (`-n 2`: on two workers);
    without langsmith's plugin, as pyproject.toml's options say (they are not read outside the project)."""
    for helper in ("conftest.py", "profiles.py"):
        shutil.copy(TESTS / helper, tmp_path / helper)
    (tmp_path / "test_skipping.py").write_text(SKIPPING, encoding="utf-8")
    (tmp_path / "test_skipping_module.py").write_text(SKIPPING_MODULE, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HYPOTHESIS_PROFILE": profile}
    if allowed is not None:
        (tmp_path / "allowed").write_text(allowed, encoding="utf-8")
        env["PLANC_ALLOWED_SKIPS"] = str(tmp_path / "allowed")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:langsmith_plugin",
            "--rootdir",
            str(tmp_path),
            *options,
            str(tmp_path / "test_skipping.py"),
            str(tmp_path / "test_skipping_module.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )


@pytest.mark.parametrize("options", [(), ("-n", "2")], ids=["one process", "two workers"])
def test_a_skip_ci_does_not_allow_fails_the_session_naming_the_test_and_its_reason(tmp_path, options):
    ran = session(tmp_path, "# CI may meet this\nno mount namespace here  # a container\n", "dev", *options)
    assert ran.returncode == 1, ran.stdout
    assert "2 tests skipped for a reason" in ran.stdout
    assert "test_skipping.py::test_without_its_tool: the tool is not installed" in ran.stdout
    assert "test_skipping_module.py: the module's tool is not installed" in ran.stdout
    assert "test_in_a_container" not in ran.stdout.split("skipped for a reason")[1]
    # and the session names its hypothesis profile, with the examples each property ran
    assert "hypothesis profile `dev` (at most 20 each; HYPOTHESIS_PROFILE=ci" in ran.stdout
    assert "1 properties ran 20 examples:" in ran.stdout
    assert "     20  test_skipping.py::test_a_property" in ran.stdout


def test_skips_are_allowed_outside_ci_and_when_listed(tmp_path):
    assert session(tmp_path, None).returncode == 0
    listed = session(tmp_path, "no mount namespace here\nthe tool is not installed\nthe module's tool\n", profile="ci")
    assert listed.returncode == 0, listed.stdout
    assert "hypothesis profile `ci` (the full count each is written with): 1 properties ran 100 examples" in listed.stdout
