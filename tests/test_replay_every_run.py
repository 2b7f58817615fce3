"""Every run the test session recorded replays: no tool and no model is called, and the output is the run's.

This test runs after every other (conftest.py moves it last; a session on several workers leaves it
out, and `make test` runs it after that session, over what that session recorded). It finds the run
stores the session wrote (every `*.sqlite` under the session's temporary folder, each worker's
`$PLANC_STORE` included), and replays each
finished run with `planc replay` in this process, where calling a tool, asking a model or starting
an MCP server raises. A replay must print what `planc run` printed for that run, with the same exit
status: where the test session saw that output (the runs made by `invoke` and `planc_completed`,
`cli.PRINTED`, and each process's journal of it) and the record still ends as it said, the replay's standard output is compared with
it exactly, and its last line on standard error with the run's (a failure's message); for the other
runs (a killed process, the Python API, a batch, a record a test rewrote) with what the record says
was printed: the result as JSON (`--finish output`),
nothing (`none`) or the recorded report (`solver`); a run that failed must fail again with the same
message, and one that was interrupted end the same way again (exit 130); a `planc plan --run` whose
run was refused (its record ends ok: the planning's) is refused again (exit 1); a run whose record keeps a
secret result by its hash only cannot be replayed, and its replay says so. A replay reads the planc.toml,
lock and policy the run kept in the store, so a run replays even when its test changed those files
afterwards.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import sqlite3
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import attrs
import pytest
from cli import PRINTED, invoke, printed_in

from planc.registry.provenance.redaction import is_redacted

pytestmark = pytest.mark.last


class Called(AssertionError):
    pass


def refuse(what):
    async def called(*args, **kwargs):
        raise Called(f"replay {what}")

    return called


def recorded_session(session, own: Path) -> tuple[Path, str]:
    """The temporary folder of the session whose runs this test replays, and which tests it ran (its `-m`,
    or "all"): its own (`own`), or, when it runs alone after a session on several workers (every test of
    this session is a `last` one), that session's, which conftest.py keeps in pytest's cache."""
    config = session.config
    if all(item.get_closest_marker("last") is not None for item in session.items):
        earlier = config.cache.get("planc/recorded-session", None) if getattr(config, "cache", None) else None
        if earlier is not None and Path(earlier).is_dir():
            return Path(earlier), config.cache.get("planc/recorded-tier", "all")
    return own, config.getoption("markexpr", "") or "all"


def stores(root: Path) -> list[Path]:
    found = {Path(os.environ["PLANC_STORE"])} | set(root.rglob("*.sqlite"))
    return sorted(path for path in found if path.exists() and _is_run_store(path))


def _is_run_store(path: Path) -> bool:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone() is not None
    except sqlite3.Error:
        return False


def finished_runs(store: Path) -> list[dict]:
    result = invoke("runs", "--store", str(store), "--format", "json")
    assert result.exit_code == 0, result.output
    return [run for run in json.loads(result.stdout) if run["status"] != "running"]


def expected(run: dict) -> tuple[int, str, str]:
    """What `planc run` printed for `run` as its record tells it: exit status, stdout, and the error line on stderr."""
    if run["status"] in ("failed", "interrupted"):
        return (1 if run["status"] == "failed" else 130), "", f"error: {run['message']}\n"
    if run["status"] == "awaiting_approval":  # the calls that wait, and how to answer them
        return 3, "", run["message"].splitlines(keepends=True)[-1] + "\n"
    options = run["options"]
    planned = options.get("planned")
    if planned is not None and not planned["run"]:  # `planc plan` printed the plan it checked
        return 0, run["output"], ""
    if planned_run_refused(run):  # the diagnostics, on stderr
        return 1, "", ""
    finish = options.get("finish", "output")
    if finish == "solver":
        report = next(call for call in run["calls"] if call["step"] == "finish")["output"]["content"].strip()
        stdout = report + "\n"
    elif finish == "output":
        stdout = json.dumps(run["output"], indent=2, ensure_ascii=False, default=str) + "\n"
    else:
        stdout = ""
    return (4 if run["status"] == "error" else 0), stdout, ""


def planned_run_refused(run: dict) -> bool:
    """Whether `run` is a `planc plan --run` whose plan checked and whose run was refused (exit 1): its
    arguments did not fit the plan. The planning's record ends ok, keeping the plan."""
    planned = run["options"].get("planned")
    return planned is not None and run["status"] == "ok" and (run["message"] or "").startswith("the plan's run was refused")


# A known gap, until replay follows the record's order of steps: an `exit` in a `map` whose items run at once
# races the other items' failures. Which came first decides the live run (an item's exit that never started
# because another item had failed), while a replay, fed the recorded results at once, has timings of its own
# and may end the other way. tests/test_attacks.py's property makes such runs. docs/reliability.md says so.
RACING_EXIT = re.compile(r"map\([^\n]*concurrency: *([2-9]|\d\d+)[^\n]*\bexit\(")

EXIT_STATUS = {
    0: "ok",
    1: "failed",
    3: "awaiting_approval",
    4: "error",
    130: "interrupted",
}  # what a run's exit code says it ended as


def printed_as_recorded(run: dict, printed: dict) -> bool:
    """Whether the session saw what `run` printed, and its record still ends as that said (a test may rewrite
    a record afterwards, as the run store's migration tests do, or resume it in a process of its own)."""
    if run["id"] not in printed:
        return False
    ended = EXIT_STATUS.get(printed[run["id"]][0])
    return ended == run["status"] or (ended == "failed" and planned_run_refused(run))


@attrs.define
class Tally:
    """What the replays of one store came to."""

    replayed: int = 0  # runs replayed and compared
    seen: int = 0  # of them, compared with what the session saw the run print
    racing: int = 0  # runs with the known gap below, replayed but not compared
    kinds: set = attrs.Factory(set)  # the kinds of calls the replayed runs made (`python`, `model`, ...)
    older: list = attrs.Factory(list)  # runs recorded as an older planc recorded them


PRINTED_BY_RUN: dict[str, tuple[int, str, str]] = {}  # what the session saw each run print (set before the replays)


def replay_store(store: Path) -> Tally:
    """Replay every finished run of `store`, checking each against what it printed (an AssertionError says
    which run did not)."""
    tally = Tally()
    for summary in finished_runs(store):
        run = json.loads(invoke("show-run", summary["id"], "--store", str(store), "--format", "json").stdout)
        if "read" not in run["options"]:  # as an older planc recorded it (test_run_store makes one): it
            tally.older.append(run["id"])  # replays with the project's files, from the project's folder only
            continue
        real = printed_as_recorded(run, PRINTED_BY_RUN)
        if real:  # what the run really printed
            status, stdout, printed = PRINTED_BY_RUN[run["id"]]
            stderr = printed.splitlines(keepends=True)[-1] if status not in (0, 4) else ""
        else:
            status, stdout, stderr = expected(run)
        result = invoke("replay", run["id"], "--store", str(store))
        if any(is_redacted(call["output"]) for call in run["calls"]):  # a secret result: a mark
            assert result.exit_code == 1 and "labelled secret" in result.output, result.output
            continue
        assert not isinstance(result.exception, Called), f"{store} {run['id']}: {result.exception}"
        where = f"{store} run {run['id']} ({run['status']}, {run['options']}):\n{result.output}"
        if RACING_EXIT.search((run["plan"] or {}).get("source", "")):  # the known gap: replayed, calling nothing, and set aside
            assert result.exit_code in (0, 1), where
            tally.racing += 1
            continue
        tally.seen += real
        assert (result.exit_code, result.stdout) == (status, stdout), where
        if stderr:
            assert result.stderr.endswith(stderr), where
        tally.replayed += 1
        tally.kinds |= {call["tool"].split(":")[0] for call in run["calls"]}
    return tally


def test_every_recorded_run_replays_without_calling_anything(request, tmp_path_factory, monkeypatch):
    monkeypatch.setattr("planc.backend.calls.dispatch.call_provider", refuse("called a tool"))
    monkeypatch.setattr("planc.backend.models.client.ModelClient.chat", refuse("asked a model"))
    monkeypatch.setattr("planc.backend.calls.mcp_runtime.McpRuntime.open", refuse("started an MCP server"))
    root, tier = recorded_session(request.session, tmp_path_factory.getbasetemp())
    PRINTED_BY_RUN.clear()
    PRINTED_BY_RUN.update({**printed_in(root), **PRINTED})
    found = stores(root)
    if threading.active_count() == 1:
        # After a session on workers (`make test`) the stores are replayed two at a time, each in a process
        # forked from this one, with the refusals above: seconds of CPU, when every other test has finished
        # and left the cores idle. Only a process with no other thread forks safely: a plain `pytest`
        # session still has its servers' threads at its end, and replays its stores here, one by one.
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
            tallies = list(pool.map(replay_store, found))
    else:
        tallies = [replay_store(store) for store in found]
    replayed, seen, racing = (sum(t.replayed for t in tallies), sum(t.seen for t in tallies), sum(t.racing for t in tallies))
    kinds = set().union(*(t.kinds for t in tallies))
    older = [run for t in tallies for run in t.older]
    print(
        f"replayed {replayed} runs ({', '.join(sorted(kinds))} calls), {seen} of them compared with what they "
        f"printed; {len(older)} recorded without their files; {racing} with an exit racing in a map, not compared"
    )
    if not replayed:
        pytest.skip("no run was recorded in this session (run the whole suite)")
    assert "model" in kinds  # the session's runs include model inferences, and they replayed too
    assert len(older) <= 1, older
    # Most runs are made through the helpers that keep their output; the slow tier's (conftest.py), mostly
    # through the Python API (AgentDojo's bench, the real model's planner) or in processes killed on purpose.
    assert seen >= (1 if tier == "slow" else replayed / 2), (seen, replayed, tier)
