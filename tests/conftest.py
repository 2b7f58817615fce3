"""Shared set-up: the test modules import helpers (`strategies`, `cli`, `profiles`) from this folder.

pytest runs with `--import-mode=importlib`, which does not put the test folder
on `sys.path`, so it is added here. The hypothesis profile (`profiles.py`,
HYPOTHESIS_PROFILE: `dev` by default, `ci` for the full counts) is loaded before
any test module is collected, and the session ends with the profile's name and how
many examples each property ran.

A skipped test says why. Where PLANC_ALLOWED_SKIPS names a file of reasons (.ci/run
sets it to .ci/allowed-skips), a test that skips for any other reason fails the
session: CI installs what the tests need, so a skip there is a test that did not run.

On several workers (`pytest -n 3`, pytest-xdist, as `make test` runs): each worker is a process
of its own, with its own temporary folder (under the session's), run store, servers and Ray
cluster; the workers send what they counted (examples, skips) to the session, which judges and
reports as one. The tests marked `last` (tests/test_replay_every_run.py) check what every other
test left, so they need every worker to have finished: such a session leaves them out and says so,
and `make test` runs them after it, in a session of their own, over what it recorded (its folder
is kept in pytest's cache, `planc/recorded-session`).

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

# The user's planc folder (the redaction key, OAuth tokens) is the tests' own, never the real one.
# It outlives a session, so that the session that replays every recorded run
# (test_replay_every_run.py) marks secrets with the key that recorded them.
_CONFIG = Path(tempfile.gettempdir()) / f"planc-tests-config-{os.getuid()}"
os.environ["XDG_CONFIG_HOME"] = str(_CONFIG)


# A run is traced only where a test asks (tests/test_traces.py), whatever the environment says.
for _variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
    os.environ.pop(_variable, None)


@pytest.fixture(scope="session", autouse=True)
def session_run_store(tmp_path_factory):
    """Runs record into a store of the test session's own, never into the working directory's .planc;
    what `planc` printed for each run it recorded goes to a journal beside it (cli.py)."""
    os.environ["PLANC_STORE"] = str(tmp_path_factory.mktemp("planc-store") / "runs.sqlite")
    os.environ["PLANC_TEST_PRINTED"] = str(tmp_path_factory.getbasetemp() / "printed.jsonl")
    return Path(os.environ["PLANC_STORE"])


def on_worker(config) -> bool:
    """Whether this process is one of a session's workers (pytest-xdist), not the session itself."""
    return hasattr(config, "workerinput")


def distributed(config) -> bool:
    """Whether this session runs its tests on workers, or is one of them."""
    return on_worker(config) or config.getoption("dist", "no") != "no"


def session_root(config) -> Path:
    """The folder under which every process of this session keeps its temporary files."""
    own = config._tmp_path_factory.getbasetemp()  # what tmp_path_factory gives; a worker's is under the session's
    return own.parent if on_worker(config) else own


@pytest.fixture(scope="session")
def mcp_project(tmp_path_factory):
    """The real git and time MCP servers, synced once for test_mcp and test_mcp_run (each sync starts
    both): a git repository (one commit, an untracked file), a planc.toml declaring the git server
    over it (its annotations trusted, `timeout_s = 30`) and the time server, and the sync's result.
    The servers are declared as command lines of a fork server that imported them once for the session
    (mcp_servers.py `forked_servers`)."""
    from cli import invoke
    from mcp_servers import forked_servers, git_repository, require_servers, servers_toml

    require_servers()
    folder = tmp_path_factory.mktemp("mcp")
    repo = git_repository(folder)
    (repo / "NEW").write_text("untracked\n", encoding="utf-8")
    config = folder / "planc.toml"
    with forked_servers(folder / "forks") as forks:
        config.write_text(servers_toml(repo, "timeout_s = 30\n", forks), encoding="utf-8")
        yield config, repo, invoke("registry", "sync", "--config", str(config))


@pytest.fixture(scope="session")
def memory_exporter():
    """The OpenTelemetry SDK's in-memory exporter, behind the tracer provider of this process (set
    once per process: test_traces.py and test_secrets.py share it)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    assert trace.get_tracer_provider() is provider, "another tracer provider was set first"
    return exporter


@pytest.fixture
def spans(memory_exporter):
    """The spans a test's runs make, and only those."""
    memory_exporter.clear()
    return memory_exporter


@pytest.fixture(scope="session")
def ray_address():
    """The address of a real local Ray cluster (2 CPUs), started once for the session's Ray tests
    (test_ray, test_batch) and shut down after them: starting one takes seconds."""
    from ray_cluster import ray_cluster

    with ray_cluster() as address:
        yield address


# The slow tier: the tests that start something heavy outside planc's process before they can check anything
# (a real model's llama.cpp, a Ray cluster, a PostgreSQL server, the npm MCP servers on node, the
# environment pre-commit builds) or import AgentDojo, the benchmark's dependency with its model SDKs.
# `make test` leaves them out (`-m "not slow"`) and says so; `make test-slow` runs them, and CI runs both.
SLOW_TIER = "a real model, a Ray cluster, PostgreSQL, the MCP servers on node, pre-commit's environment, AgentDojo"


SLOW_LEFT_OUT: list[int] = [0]  # how many tests of the slow tier this session left out


def pytest_deselected(items):
    SLOW_LEFT_OUT[0] += sum(item.get_closest_marker("slow") is not None for item in items)


def pytest_configure(config):
    config.addinivalue_line("markers", "last: run after every other test (it checks what the others left)")
    config.addinivalue_line("markers", f"slow: in the slow tier, which `make test` leaves out ({SLOW_TIER})")


# The files whose tests take longest, longest first, in each tier (the slow tier's, then the others'). They
# run first: `make test` hands whole files to its workers in the order collected (`--dist loadfile
# --no-loadscope-reorder`), so a long one never starts when the others are nearly done. Measured by
# `pytest -n 3 -m "not slow" --durations=0` and `-m slow` (docs/performance.md, "The set-up and the test
# suite").
LONGEST_FIRST = (
    "test_real_model.py",
    "test_ray.py",
    "test_mcp_everything.py",
    "test_pre_commit.py",
    "test_agentdojo.py",
    "test_postgres_store.py",
    "test_postgres_tools.py",
    "test_attacks_store.py",
    "test_resume.py",
    "test_mcp_server.py",
    "test_mcp_remote.py",
    "test_robustness.py",
    "test_grammar.py",
    "test_decoder_grammar.py",
    "test_big_inputs.py",
    "test_project_run.py",
    "test_lsp.py",
    "test_traces.py",
)


def _order(item) -> tuple[bool, int]:
    """Where a test runs: the `last` ones after all others; the long files first; the rest as collected."""
    name = item.path.name
    return item.get_closest_marker("last") is not None, (
        LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    )


def pytest_collection_modifyitems(config, items):
    items.sort(key=_order)  # stable: the tests of a file, and the files not listed, keep their order
    last = [item for item in items if item.get_closest_marker("last") is not None]
    if last and len(last) < len(items) and distributed(config):  # every worker leaves out the same ones
        items[:] = items[: -len(last)]
        config.hook.pytest_deselected(items=last)


# --- how many examples each property ran ---------------------------------------------------------

EXAMPLES: dict[str, int] = {}  # test id -> examples run, over every @given it ran (nested ones too)


@pytest.hookimpl(hookwrapper=True, trylast=True)  # inside hypothesis's own wrapper, which keeps its own note
def pytest_runtest_call(item):
    from hypothesis.statistics import collector

    outer = collector.value

    def note(stats):
        cases = [case for key, phase in stats.items() if key.endswith("-phase") for case in phase.get("test-cases", [])]
        EXAMPLES[item.nodeid] = EXAMPLES.get(item.nodeid, 0) + sum(case["status"] == "valid" for case in cases)
        if outer is not None:
            outer(stats)

    with collector.with_value(note):
        yield


# --- skips: each with its reason; in CI, only the allowed ones --------------------------------------

SKIPPED: list[tuple[str, str]] = []  # (test id, reason)
NOT_ALLOWED: list[tuple[str, str]] = []


def _skip_reason(report) -> str:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


RECORDED: list[bool] = []  # whether a test ran that is not a `last` one (so this session recorded runs)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        SKIPPED.append((report.nodeid, _skip_reason(report)))
    if report.when == "call" and "last" not in report.keywords:
        RECORDED[:] = [True]


def pytest_collectreport(report):
    if report.skipped:
        SKIPPED.append((report.nodeid, _skip_reason(report)))


def allowed_skips(path: Path) -> list[str]:
    """The reasons a test may skip for, one a line (the start of the reason; `#` starts a comment)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if on_worker(config):  # the session judges: it has every worker's reports
        config.workeroutput["planc_examples"] = EXAMPLES
        config.workeroutput["planc_slow_left_out"] = SLOW_LEFT_OUT[0]
        return
    if RECORDED and getattr(config, "cache", None) is not None:
        config.cache.set("planc/recorded-session", str(session_root(config)))
        config.cache.set("planc/recorded-tier", config.getoption("markexpr", "") or "all")
    listed = os.environ.get("PLANC_ALLOWED_SKIPS")
    if not listed:
        return
    allowed = allowed_skips(TESTS.parent / listed)  # relative to the project (an absolute path stays one)
    NOT_ALLOWED[:] = [(test, reason) for test, reason in SKIPPED if not any(reason.startswith(a) for a in allowed)]
    if NOT_ALLOWED and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's: a worker has finished, with what it counted
def pytest_testnodedown(node, error):
    EXAMPLES.update(getattr(node, "workeroutput", {}).get("planc_examples", {}))
    SLOW_LEFT_OUT[0] = max(SLOW_LEFT_OUT[0], getattr(node, "workeroutput", {}).get("planc_slow_left_out", 0))


def pytest_terminal_summary(terminalreporter, config):
    import profiles

    write = terminalreporter.write_line
    if SLOW_LEFT_OUT[0]:
        write(
            f"the slow tier was left out: {SLOW_LEFT_OUT[0]} tests ({SLOW_TIER}); `make test-slow` runs them, "
            "and CI runs both tiers"
        )
    if distributed(config):
        write(
            "on several workers, the tests marked `last` were left out: they check what every test left, so "
            "they run after, as `make test` runs them: pytest tests/test_replay_every_run.py"
        )
    if EXAMPLES:
        cap = (
            "the full count each is written with"
            if profiles.PROFILE == "ci"
            else (f"at most {profiles.DEV_EXAMPLES} each; HYPOTHESIS_PROFILE=ci (as .ci/run sets it) runs the full counts")
        )
        write(
            f"hypothesis profile `{profiles.PROFILE}` ({cap}): {len(EXAMPLES)} properties ran {sum(EXAMPLES.values())} examples:"
        )
        for test, count in sorted(EXAMPLES.items(), key=lambda pair: (pair[1], pair[0])):
            write(f"  {count:>5}  {test}")
    if NOT_ALLOWED:
        write(
            f"{len(NOT_ALLOWED)} tests skipped for a reason {os.environ['PLANC_ALLOWED_SKIPS']} does not allow "
            f"(CI is meant to run them):",
            red=True,
            bold=True,
        )
        for test, reason in NOT_ALLOWED:
            write(f"  {test}: {reason}", red=True)


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server (tests/postgres_server.py) for the session, stopped after; the tests
    that need it skip, saying why, where PostgreSQL or psycopg is missing."""
    from postgres_server import PostgresServer, programs, skip_reason

    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    server = PostgresServer(programs())
    try:
        yield server
    finally:
        server.stop()
