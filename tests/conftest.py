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


# A run is traced only where a test asks (tests/test_traces.py), whatever the environment says.
for _variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
    os.environ.pop(_variable, None)


@pytest.fixture(scope="session", autouse=True)
def session_run_store(tmp_path_factory):
    """Runs record into a store of the test session's own, never into the working directory's .planc."""
    os.environ["PLANC_STORE"] = str(tmp_path_factory.mktemp("planc-store") / "runs.sqlite")
    return Path(os.environ["PLANC_STORE"])


@pytest.fixture(scope="session")
def mcp_project(tmp_path_factory):
    """The real git and time MCP servers, synced once for test_mcp and test_mcp_run (each sync starts
    both): a git repository (one commit, an untracked file), a planc.toml declaring the git server
    over it (its annotations trusted, `timeout_s = 30`) and the time server, and the sync's result."""
    from cli import invoke
    from mcp_servers import git_repository, require_servers, servers_toml

    require_servers()
    folder = tmp_path_factory.mktemp("mcp")
    repo = git_repository(folder)
    (repo / "NEW").write_text("untracked\n", encoding="utf-8")
    config = folder / "planc.toml"
    config.write_text(servers_toml(repo, "timeout_s = 30\n"), encoding="utf-8")
    return config, repo, invoke("registry", "sync", "--config", str(config))


@pytest.fixture(scope="session")
def ray_address():
    """The address of a real local Ray cluster (2 CPUs), started once for the session's Ray tests
    (test_ray, test_batch) and shut down after them: starting one takes seconds."""
    from ray_cluster import ray_cluster

    with ray_cluster() as address:
        yield address


def pytest_configure(config):
    config.addinivalue_line("markers", "last: run after every other test (it checks what the others left)")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)  # stable: the rest keep their order
