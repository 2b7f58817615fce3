"""Shared set-up: the test modules import helpers (`strategies`, `cli`, `profiles`) from this folder.

pytest runs with `--import-mode=importlib`, which does not put the test folder
on `sys.path`, so it is added here. The hypothesis profile (`profiles.py`,
HYPOTHESIS_PROFILE: `dev` by default, `ci` for the full counts) is loaded before
any test module is collected.

Temporary files (`tmp_path`, and the session's run store) go to /dev/shm when it
has room and TMPDIR is not set: the run store commits every call with an fsync
(SQLite's synchronous=FULL), several milliseconds each on a disk and nothing in
memory, and the suite commits thousands of times. A process killed with SIGKILL
leaves what it wrote either way.
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import profiles  # noqa: E402,F401  (registers and loads the hypothesis profile)

MEMORY = Path("/dev/shm")
ROOM = 2**30  # free bytes wanted there: the suite writes some 30 MB a session, and pytest keeps three


def _temporary_files_in_memory() -> None:
    if os.environ.get("TMPDIR") or not os.access(MEMORY, os.W_OK):
        return
    free = os.statvfs(MEMORY)
    if free.f_bavail * free.f_frsize >= ROOM:
        os.environ["TMPDIR"] = str(MEMORY)  # for this process (pytest's tmp_path) and the processes it starts
        tempfile.tempdir = None  # read TMPDIR again


_temporary_files_in_memory()


@pytest.fixture(scope="session", autouse=True)
def session_run_store(tmp_path_factory):
    """Runs record into a store of the test session's own, never into the working directory's .planc."""
    os.environ["PLANC_STORE"] = str(tmp_path_factory.mktemp("planc-store") / "runs.sqlite")
    return Path(os.environ["PLANC_STORE"])


def pytest_configure(config):
    config.addinivalue_line("markers", "last: run after every other test (it checks what the others left)")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)  # stable: the rest keep their order
