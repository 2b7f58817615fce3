"""Retry identity: every tool call's idempotency key, given to the tools that take it, recorded with the
call's intent, and the same when a resume makes the call again.

Python tools take it in a parameter (declared in code or in planc.toml); MCP tools in the request's
`_meta`, as a real MCP server written with the SDK (keyed_mcp_server.py) records it. The SIGKILL
property over 50 kills is in test_resume.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, invoke, planc_forks, planc_process
from mcp_servers import KEYED_SERVER, toml_list
from tool_project import tool_project

from planc.backend.calls.idempotency import idempotency_key

TOOLS = """
import json, os
import planc


def _called(name, **args):
    with open(os.environ["PLANC_TEST_CALLS"], "a") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")


def send(text: str, *, idempotency_key: str) -> dict:
    _called("send", text=text, key=idempotency_key)
    return {"sent": text}


@planc.tool(idempotency_key="request_id")
def post(channel: str, text: str, request_id: str) -> dict:
    _called("post", channel=channel, text=text, key=request_id)
    return {"posted": text}


def page(who, token):
    _called("page", who=who, key=token)
    return {"paged": who}


def plain(text):
    _called("plain", text=text)
    return {"sent": text}
"""

TOML = """
[tools.send]
provider = "python:{module}:send"

[tools.post]
provider = "python:{module}:post"

[tools.page]
provider = "python:{module}:page"
params = {{ who = {{ type = "string" }} }}
required = ["who"]
idempotency_key = "token"

[tools.plain]
provider = "python:{module}:plain"
params = {{ text = {{ type = "string" }} }}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "keyedtools", TOOLS, TOML, {"calls.jsonl": ""}):
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.jsonl"))
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def calls(project) -> list[dict]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def recorded(store: Path, run_id: str) -> list[tuple]:
    with sqlite3.connect(store) as db:
        return [
            (step, tool, json.loads(given), key)
            for step, tool, given, key in db.execute(
                "SELECT step, tool, input, idempotency_key FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)
            )
        ]


def run_id_of(result) -> str:
    return result.stderr.splitlines()[0].removeprefix("run: ").split()[0]


PLAN = """map(over: ["a", "b"], do: { send(text: item) })
post(channel: "#ops", text: "done")
page(who: "oncall")
plain(text: "no key")
"""


def test_each_call_gets_its_own_key_as_its_intent_row_records_it(project):
    (project / "p.plan").write_text(PLAN, encoding="utf-8")
    first = invoke("run", "p.plan")
    assert first.exit_code == 0 and "Traceback" not in first.output, first.output
    run_id = run_id_of(first)
    rows = recorded(project / "runs.sqlite", run_id)
    assert [(step, tool) for step, tool, _, _ in rows] == [
        ("1/do.1[0]", "send"),
        ("1/do.1[1]", "send"),
        ("2", "post"),
        ("3", "page"),
        ("4", "plain"),
    ]
    for step, _, given, key in rows:  # the key is the arguments', at the call's step path, in this run
        assert key == idempotency_key(run_id, step, given)
    made = calls(project)
    assert [call["tool"] for call in made] == ["send", "send", "post", "page", "plain"]
    assert [call.get("key") for call in made] == [key for *_, key in rows[:4]] + [None]  # plain takes none
    assert len({key for *_, key in rows}) == 5

    second = invoke("run", "p.plan")  # a new run is a new intent: new keys
    assert second.exit_code == 0, second.output
    again = recorded(project / "runs.sqlite", run_id_of(second))
    assert not {key for *_, key in rows} & {key for *_, key in again}


def test_the_key_is_planc_s_to_give_never_the_plan_s(project):
    for text, parameter in (
        ('send(text: "a", idempotency_key: "mine")', "idempotency_key"),
        ('post(channel: "#a", text: "b", request_id: "mine")', "request_id"),
        ('page(who: "a", token: "mine")', "token"),
    ):
        (project / "p.plan").write_text(text, encoding="utf-8")
        result = invoke("run", "p.plan")
        assert result.exit_code == 1 and "E201" in result.output and f"`{parameter}`" in result.output
    assert calls(project) == []
    listed = json.loads(invoke("registry", "list", "--format", "json").stdout)
    assert {tool["name"]: (sorted(tool["params"]), tool["idempotency_key"]) for tool in listed["tools"]} == {
        "page": (["who"], "token"),
        "plain": (["text"], None),
        "post": (["channel", "text"], "request_id"),
        "send": (["text"], "idempotency_key"),
    }


def test_a_call_recorded_without_a_key_is_not_made_again_on_resume(project):
    """A store written before keys holds a call of a key-taking tool with no key: the tool never saw one,
    so it cannot tell the call again, and its outcome stays unknown."""
    (project / "p.plan").write_text('send(text: "a")\nplain(text: "b")\n', encoding="utf-8")
    ran = invoke("run", "p.plan")
    assert ran.exit_code == 0, ran.output
    run_id = run_id_of(ran)
    with sqlite3.connect(project / "runs.sqlite") as db:  # as if the process had died during the first call
        db.execute("DELETE FROM calls WHERE sequence = 2")
        db.execute("UPDATE calls SET outcome = NULL, output = NULL, finished_at = NULL, idempotency_key = NULL")
        db.execute("UPDATE runs SET status = 'running', output = NULL, finished_at = NULL")
    resumed = invoke("resume", run_id)
    assert resumed.exit_code == 1 and "Traceback" not in resumed.output
    assert resumed.stderr.splitlines()[-1] == (
        f"error: step 1: outcome unknown: run {run_id} made the call of `send` here and no result is recorded, "
        f"and `send` is not idempotent and the call was recorded without an idempotency key, so it is not "
        f"called again"
    )
    assert [call["tool"] for call in calls(project)] == ["send", "plain"]  # nothing more
    shown = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert shown["status"] == "failed"


def test_a_key_taking_tool_declared_in_code_keeps_its_key_when_a_run_is_replayed(project):
    (project / "p.plan").write_text(PLAN, encoding="utf-8")
    ran = invoke("run", "p.plan")
    assert ran.exit_code == 0, ran.output
    replayed = invoke("replay", run_id_of(ran))
    assert replayed.exit_code == 0 and replayed.stdout == ran.stdout
    assert len(calls(project)) == 5  # the replay called nothing


# --- MCP: the key in `_meta`, as a real server receives it


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory) -> list[str]:
    """keyed_mcp_server.py's command line: each start a process of its own, forked from one that has imported
    the MCP SDK (cli.py `planc_forks`), so that it does not spend two seconds importing it."""
    pytest.importorskip("mcp")
    with planc_forks(listen=tmp_path_factory.mktemp("forks") / "socket", warm=("mcp.server.mcpserver",)) as forks:
        yield forks.command(script=KEYED_SERVER[-1])


def keyed_project(folder: Path, deduplicates: bool, server: list[str]) -> dict[str, Path]:
    """A planc.toml declaring keyed_mcp_server.py (started with the command line `server`; its tools
    deduplicating by key when `deduplicates`), synced."""
    files = {name: folder / f"{name}.txt" for name in ("log", "sent", "hold", "held")}
    env = ", ".join(f"KEYED_{name.upper()} = {json.dumps(str(path))}" for name, path in files.items())
    (folder / "planc.toml").write_text(
        f"[mcp.keyed]\ncommand = {toml_list(server)}\nenv = {{ {env} }}\n"
        + ("idempotency_keys = true\n" if deduplicates else ""),
        encoding="utf-8",
    )
    synced = invoke("registry", "sync", "--config", str(folder / "planc.toml"))
    assert synced.exit_code == 0, synced.output
    return files


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_an_mcp_tool_gets_each_calls_key_in_meta(tmp_path, monkeypatch, keyed_server):
    files = keyed_project(tmp_path, deduplicates=False, server=keyed_server)
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    (tmp_path / "p.plan").write_text('map(over: ["a", "b"], concurrency: 2, do: { keyed__send(text: item) })\n', encoding="utf-8")
    result = invoke("run", "--config", tmp_path / "planc.toml", tmp_path / "p.plan")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    rows = {given["text"]: key for _, _, given, key in recorded(tmp_path / "runs.sqlite", run_id_of(result))}
    received = lines(files["log"])
    assert sorted(request["text"] for request in received) == ["a", "b"]
    # exactly the key its intent row holds and a progress token of its own, nothing else in `_meta` but the
    # W3C trace context the MCP SDK adds once the process has a tracer provider (tests/test_traces.py sets
    # one, and a test process that ran it first, as a worker of `pytest -n` may, sends it)
    assert len({request["meta"].pop("progress_token") for request in received}) == 2
    for request in received:
        traced = {key: request["meta"].pop(key) for key in ("traceparent", "tracestate") if key in request["meta"]}
        assert not traced or trace_provider_set(), traced
        assert request["meta"] == {"planc/idempotency_key": rows[request["text"]]}
    assert rows["a"] != rows["b"]


def trace_provider_set() -> bool:
    """Whether this process has a tracer provider of its own (OpenTelemetry's default is a proxy)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def wait_for(process: subprocess.Popen, path: Path, err: Path) -> None:
    """Until `path` exists, so long as `process` runs (it was to get there)."""
    deadline = time.monotonic() + HANG_GUARD_S  # a hang guard, not a timing
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"planc run ended ({process.returncode}) before {path.name}:\n{err.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"planc run never got to {path.name}")
        time.sleep(0.005)


@pytest.mark.parametrize("deduplicates", [True, False])
def test_resume_makes_an_mcp_call_killed_after_its_effect_again_only_when_its_server_deduplicates(
    tmp_path, monkeypatch, deduplicates, keyed_server
):
    files = keyed_project(tmp_path, deduplicates, keyed_server)
    store = tmp_path / "runs.sqlite"
    (tmp_path / "p.plan").write_text('keyed__send(text: "a")\nkeyed__send(text: "b")\n', encoding="utf-8")
    files["hold"].write_text("")
    err = tmp_path / "run.err"
    with err.open("w") as stderr:
        process = planc_process(
            "run", "--store", store, "p.plan", cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL
        )
    try:
        wait_for(process, files["held"], err)  # "a" has had its effect, and its call has not returned
    finally:
        process.kill()
        process.wait()
    files["hold"].unlink()  # the server's call returns into a closed pipe, and the server ends
    with contextlib.suppress(ProcessLookupError, ValueError):
        os.kill(int(files["held"].read_text()), signal.SIGKILL)
    with sqlite3.connect(store) as db:
        ((run_id,),) = db.execute("SELECT id FROM runs").fetchall()
        ((key,),) = db.execute("SELECT idempotency_key FROM calls WHERE outcome IS NULL").fetchall()

    resumed = invoke("resume", run_id, "--store", store)
    assert "Traceback" not in resumed.output
    sent = [(effect["key"], effect["text"]) for effect in lines(files["sent"])]
    given = [(request["meta"]["planc/idempotency_key"], request["text"]) for request in lines(files["log"])]
    if deduplicates:  # made again with the key it was made with: the server knew it, and sent "a" once
        assert resumed.exit_code == 0, resumed.output
        assert json.loads(resumed.stdout) == {"sent": "b"}
        assert given[:2] == [(key, "a"), (key, "a")] and [text for _, text in given] == ["a", "a", "b"]
        assert [text for _, text in sent] == ["a", "b"] and sent[0][0] == key
    else:  # the server does not say it deduplicates: the outcome stays unknown, and nothing more is sent
        assert resumed.exit_code == 1
        assert "step 1: outcome unknown" in resumed.stderr and "`keyed__send` is not idempotent, so" in resumed.stderr
        assert given == [(key, "a")] and sent == [(key, "a")]


# --- docs/registry.md's example runs as it reads


def documented_example() -> tuple[dict[str, str], str, str]:
    """The files of docs/registry.md's idempotency example (each code block under a "`NAME`:" line), the
    command of its console block and what it prints."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "registry.md").read_text(encoding="utf-8")
    section = page[page.index("## Idempotency keys") : page.index("## Effects")]
    files = dict(re.findall(r"^`([\w.]+)`:\n\n```\w*\n(.*?)```", section, re.M | re.S))
    console = re.search(r"```console\n\$ (.*?)\n(.*?)```", section, re.S)
    return files, console.group(1), console.group(2)


def test_the_documented_example_runs_and_its_resume_sends_nothing_twice(tmp_path, monkeypatch):
    files, command, printed = documented_example()
    assert sorted(files) == ["notify.plan", "outbox.py", "planc.toml"] and command == "planc run notify.plan"
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    try:
        ran = invoke(*command.split()[1:])
        assert ran.exit_code == 0 and ran.stdout == printed, ran.output
        run_id = run_id_of(ran)
        with sqlite3.connect(tmp_path / "runs.sqlite") as db:  # as if killed during the second call
            db.execute("UPDATE calls SET outcome = NULL, output = NULL, finished_at = NULL WHERE sequence = 2")
            db.execute("UPDATE runs SET status = 'running', output = NULL, finished_at = NULL")
        resumed = invoke("resume", run_id)
    finally:
        sys.modules.pop("outbox", None)
    assert resumed.exit_code == 0, resumed.output
    assert [item["first_time"] for item in json.loads(resumed.stdout)] == [True, False]  # made again, known
    with sqlite3.connect(tmp_path / "outbox.sqlite") as db:
        assert db.execute("SELECT channel FROM sent ORDER BY channel").fetchall() == [("#db",), ("#ops",)]
        assert {key for (key,) in db.execute("SELECT key FROM sent")} == {
            key for *_, key in recorded(tmp_path / "runs.sqlite", run_id)
        }


@pytest.mark.parametrize(
    "key, says, never",
    [("key", "deduplicates by its idempotency key", "not idempotent"), (None, "not idempotent", "idempotency key")],
)
def test_the_approve_question_says_whether_a_call_may_be_made_again(key, says, never):
    from rich.console import Console

    from planc.backend.calls.approve import describe
    from planc.backend.calls.hooks import Call
    from planc.registry.tools.tool import Effects, Tool

    effects = Effects(read_only=False, deterministic=False, idempotent=False, destructive=False, open_world=True)
    tool = Tool("send", params={"text": {"type": "string"}}, effects=effects, idempotency_key=key)
    console = Console(record=True, width=100)
    console.print(describe(Call("1", tool, {"text": "hi"})))
    shown = console.export_text()
    assert says in shown and never not in shown and "open-world" in shown
