"""`planc run --executor ray`: the Python tool calls of loop items as tasks on a real local Ray cluster.

Each test runs `planc` as a process of its own against the session's cluster (`ray_address` in
conftest.py: 2 CPUs, started once) and compares with the local executor where there is something
to compare. The process is forked from one that has imported planc and Ray (cli.py `planc_forks`:
Ray's import alone is a second of CPU), and its pid is its own. The tools append each call, with the pid of the process that made it, to a spy file
whose path is written into the tools module itself: a Ray worker runs the module from its own copy
of the project folder and does not inherit the environment planc was started in. A tool that must
be caught in the middle of its call (to kill its worker, or to outlast its timeout) waits for a
release file that the test creates once it has seen what it waited for.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, PLANC, invoke, planc_completed, planc_forks
from tool_project import tool_project

pytestmark = pytest.mark.slow  # conftest.py: the slow tier

POLL_S = 0.01
HANG_GUARD_POLLS = int(HANG_GUARD_S / POLL_S)  # a run that never gets where it must is hung, not slow

TOOLS = """
import os, time
from pathlib import Path


def spy(what):
    with open(SPY, "a") as f:
        f.write(f"{os.getpid()} {what}\\n")


def attempts(what):
    return sum(line.split(" ", 1)[1] == what for line in Path(SPY).read_text().splitlines())


def square(n):
    spy(f"square {n}")
    return {"n": n, "square": n * n}


def check(n):
    spy(f"check {n}")
    if n == 5:
        raise ValueError(f"no fives: {n}")
    return n % 2 == 0


def send(text):
    spy(f"send {text}")
    hold(text, f"send {text}")
    return {"sent": text}


def keyed(text, key):
    spy(f"keyed {text} {key}")
    hold(text, f"keyed {text} {key}")
    return {"sent": text}


def hold(text, what):
    if text.startswith("hold") and attempts(what) == 1:  # only a call's first attempt waits
        while not Path(RELEASE).exists():
            time.sleep(0.01)
"""

TOML = """
policy = "policy.cedar"

[tools.square]
provider = "python:{module}:square"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
effects = {{ read_only = true, deterministic = true, idempotent = true, destructive = false, open_world = false }}

[tools.check]
provider = "python:{module}:check"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
effects = {{ read_only = true }}

[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]

[tools.resend]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = true }}

[tools.keyed]
provider = "python:{module}:keyed"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
idempotency_key = "key"

[tools.stall]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = true }}
timeout_s = 3
"""

POLICY = """
@id("no-c")
forbid(principal, action, resource == Tool::"send") when { context.args has text && context.args.text == "c" };
@id("no-untrusted-nine")
forbid(principal, action, resource == Tool::"send") when
  { context.sources has text && context.sources.text.contains("untrusted") && context.args has text &&
    context.args.text == "9" };
permit(principal, action, resource);
"""

PLAN = """map(over: [1, 2, 3, 4, 5, 6], concurrency: 3, do: { square(n: item) })
filter(over: $1, do: { check(n: item.square) })
reduce(over: $2, initial: null, do: { square(n: item.n) })
square(n: 7)
reshape(value: {squares: $1, even: $2, last: $3, lone: $4})
"""


FORKS: list = []  # the module's fork server, while its tests run (`forks`)


@pytest.fixture(scope="module")
def forks():
    with planc_forks(warm=(PLANC, "ray")) as server:
        FORKS[:] = [server]
        yield server
    FORKS.clear()


@pytest.fixture
def project(tmp_path, forks):
    tools = f"SPY = {str(tmp_path / 'spy.log')!r}\nRELEASE = {str(tmp_path / 'release')!r}\n" + TOOLS
    with tool_project(tmp_path, "raytools", tools, TOML, {"policy.cedar": POLICY}):
        yield tmp_path
        (tmp_path / "release").touch()  # a tool still waiting (its worker not killed after all) goes


def spied(project: Path) -> list[tuple[int, str]]:
    """Each call the tools made, in order: (pid of the process that made it, what it was)."""
    spy = project / "spy.log"
    lines = spy.read_text(encoding="utf-8").splitlines() if spy.exists() else []
    return [(int(pid), what) for pid, what in (line.split(" ", 1) for line in lines)]


def start(project: Path, *args):
    """`planc ARGS` in `project` as a process of its own (forked), its stdout and stderr into files there."""
    return FORKS[0].start(*args, cwd=project, env=dict(os.environ), stdout=project / "planc.out", stderr=project / "planc.err")


def finished(project: Path, process) -> subprocess.CompletedProcess:
    """`process` (`start`) waited for: its exit status and what it printed."""
    process.wait()
    return subprocess.CompletedProcess(
        ["planc"], process.returncode, (project / "planc.out").read_text(), (project / "planc.err").read_text()
    )


def run(project: Path, plan: str, *args, store: str = "runs.sqlite") -> tuple[subprocess.CompletedProcess, int]:
    """`planc run` of `plan` in `project` as a process of its own, and that process's pid."""
    (project / "p.plan").write_text(plan, encoding="utf-8")
    process = start(project, "run", "p.plan", "--store", store, *args)
    return finished(project, process), process.pid


def recorded(store: Path) -> dict:
    """The last run in `store` as `planc show-run --format json` has it."""
    shown = invoke("show-run", "last", "--store", str(store), "--format", "json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)


def rows(run: dict) -> list[tuple]:
    """A run's calls as what they were and how they ended, by step (items in flight end in any order)."""
    return sorted(
        (call["step"], call["tool"], json.dumps(call["input"]), call["outcome"], json.dumps(call["output"]), call["error"])
        for call in run["calls"]
    )


def events(run: dict) -> list[tuple]:
    return sorted((event["event"], event.get("step") or "", event.get("tool") or "") for event in run["events"])


def wait_for(found, what: str, process=None, err: Path | None = None):
    """`found()` once it is true (each look POLL_S apart), or fail: a run that ends first, or never gets there."""
    import time

    for _ in range(HANG_GUARD_POLLS):
        value = found()
        if value:
            return value
        if process is not None and process.poll() is not None:
            pytest.fail(f"planc ended ({process.returncode}) before {what}: {err.read_text() if err else ''}")
        time.sleep(POLL_S)
    pytest.fail(f"never saw {what}")


def test_results_events_and_rows_are_the_local_executors_and_each_item_call_is_made_in_a_worker(project, ray_address):
    local, local_pid = run(project, PLAN, store="local.sqlite")
    assert local.returncode == 0, local.stderr
    made_locally = spied(project)
    (project / "spy.log").unlink()
    on_ray, planc_pid = run(project, PLAN, "--executor", "ray", "--ray-address", ray_address, store="ray.sqlite")
    assert on_ray.returncode == 0, on_ray.stderr
    assert "Traceback" not in on_ray.stderr
    assert json.loads(on_ray.stdout) == json.loads(local.stdout)
    assert json.loads(on_ray.stdout)["even"] == [{"n": 2, "square": 4}, {"n": 4, "square": 16}, {"n": 6, "square": 36}]
    made_on_ray = spied(project)
    assert sorted(what for _, what in made_on_ray) == sorted(what for _, what in made_locally)
    assert {pid for pid, _ in made_locally} == {local_pid}  # the local executor: every call in planc itself
    assert [pid for pid, what in made_on_ray if what == "square 7"] == [planc_pid]  # a lone top-level step
    in_items = [pid for pid, what in made_on_ray if what != "square 7"]
    assert len(in_items) == 15 and planc_pid not in in_items  # every item's call in a Ray worker

    local_run, ray_run = recorded(project / "local.sqlite"), recorded(project / "ray.sqlite")
    assert rows(ray_run) == rows(local_run) and len(ray_run["calls"]) == 16
    assert all(call["outcome"] == "ok" for call in ray_run["calls"])
    assert events(ray_run) == events(local_run)
    assert ray_run["options"]["executor"] == {"kind": "ray", "address": ray_address}

    replayed = planc_completed("replay", ray_run["id"], "--store", "ray.sqlite", cwd=project)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == on_ray.stdout
    assert len(spied(project)) == 16  # the replay called nothing, and connected to no cluster


def test_a_tool_that_fails_in_a_worker_fails_the_run_as_it_fails_locally(project, ray_address):
    plan = "map(over: [1, 3, 5, 7, 9], do: { check(n: item) })\n"
    local, _ = run(project, plan, store="local.sqlite")
    on_ray, _ = run(project, plan, "--executor", "ray", "--ray-address", ray_address, store="ray.sqlite")
    assert local.returncode == on_ray.returncode == 1
    assert (
        on_ray.stderr.splitlines()[-1]
        == local.stderr.splitlines()[-1]
        == ("error: step 1/do.1[2]: `check` failed: ValueError: no fives: 5")
    )
    assert [what for _, what in spied(project)] == ["check 1", "check 3", "check 5"] * 2  # no item after it
    assert rows(recorded(project / "ray.sqlite")) == rows(recorded(project / "local.sqlite"))
    assert recorded(project / "ray.sqlite")["status"] == "failed"


def test_a_policy_denial_inside_a_map_stops_the_run_before_the_items_call(project, ray_address):
    plan = 'map(over: ["a", "b", "c", "d", "e"], do: { send(text: item) })\n'
    on_ray, _ = run(project, plan, "--executor", "ray", "--ray-address", ray_address)
    assert on_ray.returncode == 1
    assert on_ray.stderr.splitlines()[-1] == (
        'error: step 1/do.1[2]: calling `send` is forbidden by policy `no-c` (for User::"anonymous")'
    )
    assert [what for _, what in spied(project)] == ["send a", "send b"]  # none for "c", and no later item
    run_record = recorded(project / "runs.sqlite")
    assert run_record["status"] == "failed" and [call["input"] for call in run_record["calls"]] == [{"text": "a"}, {"text": "b"}]


def test_the_labels_of_a_result_made_in_a_worker_reach_the_policy_before_the_next_call(project, ray_address):
    # `square` declares no labels: what it returns in a worker is untrusted, and only the run knows the value.
    plan = 'map(over: [1, 2, 3, 4], do: { sq = square(n: item); send(text: "{$sq.square}") })\n'
    assert invoke("check", "--config", project / "planc.toml", "-", input=plan).exit_code == 0
    on_ray, _ = run(project, plan, "--executor", "ray", "--ray-address", ray_address)
    assert on_ray.returncode == 1 and "no-untrusted-nine" in on_ray.stderr.splitlines()[-1]
    assert [what for _, what in spied(project)] == ["square 1", "send 1", "square 2", "send 4", "square 3"]
    assert recorded(project / "runs.sqlite")["status"] == "failed"


def test_independent_steps_under_optimize_are_made_in_workers(project, ray_address):
    plan = "square(n: 1)\nsquare(n: 2)\nsquare(n: 3)\n"
    result, planc_pid = run(project, plan, "--optimize", "--executor", "ray", "--ray-address", ray_address)
    assert result.returncode == 0, result.stderr
    made = spied(project)
    assert sorted(what for _, what in made) == ["square 1", "square 2", "square 3"]
    assert planc_pid not in {pid for pid, _ in made}


def kill_during(project: Path, tool: str, ray_address: str):
    """`planc run` of one `tool` call in a map, whose Ray worker is killed with SIGKILL during the call;
    the run's process, and the pid of the worker killed."""
    (project / "p.plan").write_text(f'map(over: ["a", "hold"], do: {{ {tool}(text: item) }})\n', encoding="utf-8")
    process = start(project, "run", "p.plan", "--store", "runs.sqlite", "--executor", "ray", "--ray-address", ray_address)
    worker = wait_for(
        lambda: next((pid for pid, what in spied(project) if what.split()[1:2] == ["hold"]), None),
        "the call in its worker",
        process,
        project / "planc.err",
    )
    os.kill(worker, signal.SIGKILL)
    return finished(project, process), worker


def test_a_worker_lost_during_a_non_idempotent_call_is_an_unknown_outcome_and_the_call_is_not_made_again(project, ray_address):
    process, worker = kill_during(project, "send", ray_address)
    assert process.returncode == 1
    run_record = recorded(project / "runs.sqlite")
    held = run_record["calls"][-1]
    assert run_record["status"] == "failed" and held["step"] == "1/do.1[1]" and held["outcome"] == "unknown"
    assert "WorkerLost: the Ray worker making the call was lost" in held["error"]
    assert [what for _, what in spied(project)] == ["send a", "send hold"]  # Ray did not run it again

    (project / "release").touch()  # were it ever made again, it would now return
    resumed = planc_completed("resume", run_record["id"], "--store", "runs.sqlite", cwd=project)
    assert resumed.returncode == 1
    assert "outcome unknown" in resumed.stderr and "its Ray worker was lost" in resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert [what for _, what in spied(project)] == ["send a", "send hold"]


def test_a_worker_lost_during_an_idempotent_call_is_retried_and_the_run_finishes(project, ray_address):
    process, worker = kill_during(project, "resend", ray_address)
    assert process.returncode == 0
    attempts = [pid for pid, what in spied(project) if what == "send hold"]
    assert len(attempts) == 2 and attempts[0] == worker != attempts[1]  # once more, in another worker
    run_record = recorded(project / "runs.sqlite")
    assert run_record["status"] == "ok" and [call["outcome"] for call in run_record["calls"]] == ["ok", "ok"]
    assert run_record["output"] == [{"sent": "a"}, {"sent": "hold"}]


def test_a_worker_lost_during_a_call_that_takes_its_key_is_retried_with_the_same_key(project, ray_address):
    process, worker = kill_during(project, "keyed", ray_address)  # `keyed` is not idempotent: it takes keys
    assert process.returncode == 0
    attempts = [(pid, what.split()[2]) for pid, what in spied(project) if what.startswith("keyed hold ")]
    assert len(attempts) == 2 and attempts[0][0] == worker != attempts[1][0]
    run_record = recorded(project / "runs.sqlite")
    held = run_record["calls"][-1]
    assert held["outcome"] == "ok" and held["idempotency_key"] == attempts[0][1] == attempts[1][1]
    assert len(held["idempotency_key"]) == 64


def test_a_call_past_its_timeout_is_cancelled_and_its_worker_stopped(project, ray_address):
    plan = 'map(over: ["hold-t"], do: { square(n: 1); stall(text: item) })\n'  # a worker is up before the stall
    result, _ = run(project, plan, "--executor", "ray", "--ray-address", ray_address)
    assert result.returncode == 1
    assert "`stall` failed: CallTimedOut: no result within 3 s" in result.stderr.splitlines()[-1]
    run_record = recorded(project / "runs.sqlite")
    assert run_record["calls"][-1]["outcome"] == "unknown"
    stalled = [pid for pid, what in spied(project) if what == "send hold-t"]
    assert len(stalled) == 1, spied(project)  # it stalled in its worker, once: a cancelled task is not run again
    wait_for(lambda: not Path(f"/proc/{stalled[0]}").exists() or _zombie(stalled[0]), "the worker stopped")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_planc_toml_chooses_the_executor_and_the_command_line_overrides_it(project, ray_address):
    with (project / "planc.toml").open("a", encoding="utf-8") as toml:
        toml.write(f'\n[executor]\nkind = "ray"\naddress = "{ray_address}"\n')
    plan = "map(over: [1, 2], do: { square(n: item) })\n"
    on_ray, planc_pid = run(project, plan)
    assert on_ray.returncode == 0, on_ray.stderr
    assert planc_pid not in {pid for pid, _ in spied(project)}
    (project / "spy.log").unlink()
    local, local_pid = run(project, plan, "--executor", "local")
    assert local.returncode == 0 and {pid for pid, _ in spied(project)} == {local_pid}
    assert local.stdout == on_ray.stdout


def test_the_python_api_runs_on_ray_too(project, ray_address):
    import planc

    (project / "p.plan").write_text("map(over: [1, 2, 3], concurrency: 3, do: { square(n: item) })\n", encoding="utf-8")
    registry = planc.load_registry(project / "planc.toml")
    checked = planc.check((project / "p.plan").read_text(), registry=registry)
    result = planc.run(checked, executor="ray", ray_address=ray_address, store=project / "runs.sqlite")
    assert result.value == [{"n": n, "square": n * n} for n in (1, 2, 3)]
    assert os.getpid() not in {pid for pid, _ in spied(project)} and len(spied(project)) == 3
    assert recorded(project / "runs.sqlite")["options"]["executor"]["kind"] == "ray"


def test_a_cluster_that_cannot_be_reached_is_one_message_and_no_run(project):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens on it once closed
    result, _ = run(
        project, "map(over: [1], do: { square(n: item) })\n", "--executor", "ray", "--ray-address", f"127.0.0.1:{port}"
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: cannot connect to the Ray cluster at 127.0.0.1:{port}: Connection refused"
    assert spied(project) == []
    listed = invoke("runs", "--store", str(project / "runs.sqlite"), "--format", "json")
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []  # nothing ran, nothing was recorded


def test_without_ray_installed_the_ray_executor_is_one_message_and_no_run(project, tmp_path):
    blocked = tmp_path / "blocked" / "ray"  # a PYTHONPATH on which `import ray` fails, as without the extra
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    (project / "p.plan").write_text("map(over: [1], do: { square(n: item) })\n", encoding="utf-8")
    result = planc_completed(
        "run",
        "p.plan",
        "--store",
        "runs.sqlite",
        "--executor",
        "ray",
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(blocked.parent)},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "Error: the Ray executor needs Ray: install it with `pip install 'planc[ray]'`"
    assert spied(project) == []
    listed = invoke("runs", "--store", str(project / "runs.sqlite"), "--format", "json")
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []  # nothing ran, nothing was recorded


def test_a_ray_address_for_the_local_executor_and_an_unknown_executor_are_refused(project):
    result, _ = run(project, "square(n: 1)\n", "--ray-address", "127.0.0.1:1")
    assert result.returncode == 2
    assert "a Ray address is only read with the Ray executor" in result.stderr
    with (project / "planc.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[executor]\nkind = "spark"\n')
    result, _ = run(project, "square(n: 1)\n")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "planc.toml:" in result.stderr and "`kind` must be one of 'local', 'ray', found 'spark'" in result.stderr
    assert spied(project) == []


def test_the_local_executor_never_imports_ray(project):
    from test_cli_imports import loaded_by_command

    (project / "p.plan").write_text("map(over: [1, 2], concurrency: 2, do: { square(n: item) })\n", encoding="utf-8")
    modules = loaded_by_command(["run", "p.plan", "--store", str(project / "runs.sqlite")], project)
    assert "planc.backend.run.interpreter" in modules
    assert "ray" not in modules and "planc.backend.calls.ray_executor" not in modules
    with sqlite3.connect(project / "runs.sqlite") as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("ok",)]
