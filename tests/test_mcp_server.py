"""`planc mcp`: planc as an MCP server, driven by the MCP SDK's own client over stdio and streamable HTTP.

The project's tools are spies that append each call to `spy.log`; each test asserts the exact calls
made, what the client was told, the statuses the run store recorded and that the server's stderr holds
no traceback. Each server is a process of its own, started by the client (stdio) or the test (HTTP) from
`planc mcp`'s command line: that of a fork server (cli.py `planc_forks`) which has imported planc and the
MCP SDK once for the module, so that a server pays for what it does and not for importing the SDK. `hold` blocks while the file `hold` exists (it writes `held` first), so a test can make a
client go away mid-run at a moment it has observed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, PLANC, invoke, planc_completed, planc_forks
from test_attacks import calls, statuses  # the spy's lines, the recorded statuses
from tool_project import tool_project

from planc.registry.provenance.redaction import MARK

pytest.importorskip("mcp.server.mcpserver")
from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

TOOLS = '''
import os, time

SPY = os.environ["PLANC_TEST_SPY"]
HERE = os.path.dirname(SPY)


def _called(line):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(line + "\\n")


def lookup(topic):
    _called(f"lookup {topic}")
    return {"topic": topic, "owner": "ops"}


def send(text):
    _called(f"send {text}")
    return {"sent": text}


def note(text):
    _called(f"note {text}")
    return text


def vault():
    _called("vault")
    return {"token": "QXZJVKQXZJVKQXZJVKQX"}


def hold(name):
    """Say so (the file `held`), then wait while the file `hold` exists."""
    _called(f"hold {name}")
    open(os.path.join(HERE, "held"), "w").close()
    while os.path.exists(os.path.join(HERE, "hold")):
        time.sleep(0.01)
    return name
'''

TOML = """
policy = "policy.cedar"
store = "runs.sqlite"

[tools.lookup]
provider = "python:{module}:lookup"
params = {{ topic = {{ type = "string" }} }}
required = ["topic"]
labels = []
effects = {{ read_only = true, idempotent = true }}

[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
labels = []
effects = {{ read_only = false, idempotent = false }}

[tools.note]
provider = "python:{module}:note"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
labels = []
effects = {{ read_only = false, idempotent = false }}

[tools.vault]
provider = "python:{module}:vault"
params = {{}}
labels = ["secret"]
effects = {{ read_only = true, idempotent = true }}

[tools.hold]
provider = "python:{module}:hold"
params = {{ name = {{ type = "string" }} }}
required = ["name"]
labels = []
effects = {{ read_only = true, idempotent = true }}
timeout_s = 600
"""

POLICY = """
permit(principal, action, resource);

@id("no-untrusted-sends")
@reason("what an agent wrote is not sent on")
forbid(principal, action, resource == Tool::"send")
when { context.sources has text && context.sources.text.contains("untrusted") };
"""

PERSON = "\n[mcp_server]\nanswers_from_person = true\n"


SERVER: list[str] = []  # `planc mcp`'s command line, while the module's tests run (`planc_mcp`)


@pytest.fixture(scope="module", autouse=True)
def planc_mcp(tmp_path_factory):
    with planc_forks(
        listen=tmp_path_factory.mktemp("forks") / "socket",
        warm=(
            PLANC,
            "planc.mcp_server.server",
            "planc.mcp_server.http",
            "mcp.server.stdio",
            "mcp.server.streamable_http_manager",
            "uvicorn",
        ),
    ) as forks:
        SERVER[:] = forks.command("mcp")
        yield
    SERVER.clear()


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "mcpservertools", TOOLS, TOML, {"policy.cedar": POLICY}):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
        monkeypatch.delenv("PLANC_STORE", raising=False)
        yield tmp_path


def person_answers(project: Path) -> None:
    """planc.toml says the client's answers come from a person."""
    with open(project / "planc.toml", "a", encoding="utf-8") as toml:
        toml.write(PERSON)


def answer(result: types.CallToolResult) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


class Asked:
    """An elicitation callback that answers `action` (approving, when it accepts) and keeps each message."""

    def __init__(self, action: str = "accept", approve: bool = True) -> None:
        self.action, self.approve, self.messages = action, approve, []

    async def __call__(self, context, params):
        self.messages.append(params.message)
        return types.ElicitResult(action=self.action, content={"approve": self.approve} if self.action == "accept" else None)


@contextlib.asynccontextmanager
async def stdio_session(project: Path, errlog, elicit=None):
    """A client session with `planc mcp` started over stdio in `project` (its stderr into `errlog`)."""
    server = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(project), env=dict(os.environ))
    async with (
        stdio_client(server, errlog=errlog) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


@contextlib.contextmanager
def http_server(project: Path):
    """`planc mcp --http 127.0.0.1:0` in `project`: its URL once it says it listens, and the process."""
    process = subprocess.Popen(
        [*SERVER, "--http", "127.0.0.1:0"], cwd=project, env=dict(os.environ), stderr=subprocess.PIPE, text=True
    )
    try:
        said = process.stderr.readline()
        found = re.search(r"http://\S+", said)
        assert found, said + process.stderr.read()
        yield found[0], process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait()


@contextlib.asynccontextmanager
async def http_session(url: str, elicit=None):
    async with streamable_http_client(url) as (read, write), ClientSession(read, write, elicitation_callback=elicit) as session:
        await session.initialize()
        yield session


def no_traceback(text: str) -> None:
    assert "Traceback" not in text, text


# --- the acceptance session ----------------------------------------------------------------------------

TYPO = 'lokup(topic: "disk")'
FIXED = 'lookup(topic: "disk")'


async def acceptance(session: ClientSession) -> str:
    """describe; a plan with a typo, its repair; the fixed plan run, with its progress; the run's id."""
    described = await session.call_tool("describe", {})
    assert "lookup(topic: string)" in described.content[0].text
    checked = answer(await session.call_tool("check_plan", {"plan": TYPO}))
    assert checked["ok"] is False
    assert [d["code"] for d in checked["diagnostics"]] == ["E200"]
    assert "Did you mean `lookup`?" in checked["repair"]
    assert calls(Path.cwd()) == []  # checking calls nothing
    progress = []

    async def told(done, total, message):
        progress.append(message)

    ran = answer(await session.call_tool("run_plan", {"plan": FIXED}, progress_callback=told))
    assert ran["status"] == "ok" and ran["result"] == {"topic": "disk", "owner": "ops"}
    assert '[1] lookup {"topic": "disk"}' in progress and "run finished: ok" in progress
    return ran["run"]


def test_the_acceptance_session_over_stdio(project, tmp_path_factory):
    errlog = (tmp_path_factory.mktemp("err") / "stderr").open("w+")

    async def main():
        async with stdio_session(project, errlog) as session:
            return await acceptance(session)

    run_id = asyncio.run(main())
    assert calls(project) == ["lookup disk"]
    listed = invoke("runs")
    assert listed.exit_code == 0 and run_id in listed.stdout and "ok" in listed.stdout
    shown = invoke("show-run", run_id, "--format", "json")
    record = json.loads(shown.stdout)
    # The client wrote the plan: its literal carries `untrusted`, recorded with the call.
    assert record["calls"][0]["labels"]["sources"] == {"topic": ["untrusted"]}
    replayed = invoke("replay", run_id)  # checked again with the labels it ran with; no tool called
    assert replayed.exit_code == 0 and json.loads(replayed.stdout) == {"topic": "disk", "owner": "ops"}
    assert calls(project) == ["lookup disk"]
    errlog.seek(0)
    no_traceback(errlog.read())


def test_the_acceptance_session_over_http(project):
    with http_server(project) as (url, process):

        async def main():
            async with http_session(url) as session:
                run_id = await acceptance(session)
                shown = answer(await session.call_tool("show_run", {"run": run_id}))
                assert shown["id"] == run_id and shown["status"] == "ok"
                return run_id

        run_id = asyncio.run(main())
        assert calls(project) == ["lookup disk"]
        assert statuses(project) == ["ok"]
        assert run_id in invoke("runs").stdout
        process.terminate()
        no_traceback(process.stderr.read())


def test_initialize_reports_the_version_planc_version_prints(project, tmp_path_factory):
    errlog = (tmp_path_factory.mktemp("err") / "stderr").open("w+")
    server = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(project), env=dict(os.environ))

    async def main():
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            return (await session.initialize()).server_info

    info = asyncio.run(main())
    printed = planc_completed("--version")
    assert printed.returncode == 0 and printed.stdout == f"planc {info.version}\n"
    assert info.name == "planc" and info.version


# --- over HTTP, only from this machine -------------------------------------------------------------------


def posted(client, url: str, message: dict, headers: dict):
    """The response to `message` POSTed to `url` as an MCP client posts it, with `headers` besides; its JSON-RPC
    answer (from the event stream) as `.answer`, when it has one."""
    response = client.post(url, json=message, headers={"Accept": "application/json, text/event-stream", **headers})
    data = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    response.answer = json.loads(data[0]) if data else None
    return response


def test_a_request_naming_another_host_or_origin_is_refused_and_calls_nothing(project):
    """Attack: DNS rebinding. A web page whose name now points at 127.0.0.1 posts to the server: its request
    names the page's host (and origin), and is refused before anything reads it; the SDK's client at the real
    address is served. The SDK's own default would take any port of 127.0.0.1; planc's takes the bound one."""
    import httpx

    with http_server(project) as (url, process):
        port = int(re.search(r":(\d+)/mcp$", url)[1])
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a web page", "version": "1"}},
        }
        run = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "run_plan", "arguments": {"plan": 'lookup(topic: "rebound")'}},
        }
        with httpx.Client() as client:
            refused = posted(client, url, initialize, {"Host": f"attacker.example:{port}"})
            assert refused.status_code == 421 and "mcp-session-id" not in refused.headers
            opened = posted(client, url, initialize, {})
            assert opened.status_code == 200, opened.text
            session = {
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": opened.answer["result"]["protocolVersion"],
            }
            posted(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            for headers, status in [
                ({"Host": "attacker.example"}, 421),
                ({"Host": f"attacker.example:{port}"}, 421),
                ({"Host": f"127.0.0.1:{port + 1 if port < 65535 else port - 1}"}, 421),
                ({"Origin": "http://attacker.example"}, 403),
                ({"Origin": f"http://attacker.example:{port}"}, 403),
                ({"Origin": f"http://127.0.0.1:{port}.attacker.example"}, 403),
            ]:
                response = posted(client, url, run, {**session, **headers})
                assert (response.status_code, response.answer) == (status, None), headers
            assert calls(project) == [] and statuses(project) == []
            # The same request, as the loopback names with the bound port: served.
            served = posted(client, url, run, {**session, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
            assert served.status_code == 200 and served.answer["result"]["structuredContent"]["status"] == "ok"
            assert calls(project) == ["lookup rebound"]

        async def main():
            async with http_session(url) as session:
                return answer(await session.call_tool("run_plan", {"plan": FIXED}))

        assert asyncio.run(main())["status"] == "ok"
        assert calls(project) == ["lookup rebound", "lookup disk"] and statuses(project) == ["ok", "ok"]
        process.terminate()
        said = process.stderr.read()
        no_traceback(said)
        assert "Invalid Host header" in said and "Invalid Origin header" in said  # the SDK's warnings


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "192.0.2.1:8000", "example.org:0"])
def test_an_address_beyond_loopback_is_refused_before_listening(project, address):
    done = subprocess.run(
        [*SERVER, "--http", address], cwd=project, env=dict(os.environ), capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        f"Error: --http {address}: planc mcp serves plans that run, and authenticates no "
        "client without `[mcp_server.auth]` in planc.toml, so it listens only on this "
        "machine's loopback address"
    )
    assert "listening on" not in done.stderr and len(done.stderr.splitlines()) == 1
    no_traceback(done.stderr)


# --- refusals, and what only a person may let through ---------------------------------------------------


def run_plan(project: Path, plan: str, elicit=None, arguments=None) -> tuple[dict, list[str]]:
    """`run_plan` of `plan` in a stdio session (the client answering elicitation with `elicit`, if given):
    what it answered, and the progress it told; the server's stderr holds no traceback."""
    errlog = (project / "server.err").open("w+")
    progress = []

    async def told(done, total, message):
        progress.append(message)

    async def main():
        async with stdio_session(project, errlog, elicit) as session:
            return answer(
                await session.call_tool(
                    "run_plan", {"plan": plan, **({"arguments": arguments} if arguments else {})}, progress_callback=told
                )
            )

    ran = asyncio.run(main())
    errlog.seek(0)
    no_traceback(errlog.read())
    return ran, progress


def test_a_refused_plan_is_the_tools_result_with_its_diagnostics(project):
    """The client's literal is untrusted, and the policy keeps untrusted text from `send`: E400, nothing run."""
    asked = Asked()
    ran, _ = run_plan(project, 'send(text: "hello")', asked)
    assert ran["status"] == "refused" and ran["ok"] is False
    assert [d["code"] for d in ran["diagnostics"]] == ["E400"]
    assert "no-untrusted-sends" in ran["diagnostics"][0]["message"]
    assert ran["repair"].startswith("Your plan has 1 problem")
    assert calls(project) == [] and statuses(project) == [] and asked.messages == []


def test_arguments_carry_the_clients_labels_too(project):
    ran, _ = run_plan(project, "send(text: $args.text)", Asked(), arguments={"text": "hello"})
    assert ran["status"] == "refused" and [d["code"] for d in ran["diagnostics"]] == ["E400"]
    assert calls(project) == [] and statuses(project) == []


def test_an_accepted_elicitation_lets_a_flagged_call_through_where_answers_come_from_a_person(project):
    person_answers(project)
    asked = Asked()
    ran, _ = run_plan(project, 'send(text: "hello")', asked)
    assert ran["status"] == "ok" and ran["result"] == {"sent": "hello"}
    assert calls(project) == ["send hello"] and statuses(project) == ["ok"]
    [message] = asked.messages
    assert "step 1 calls `send`" in message and "flagged:" in message and "untrusted" in message


def test_elicitation_over_http_accepted_then_declined(project):
    person_answers(project)
    accepting, declining = Asked(), Asked("decline")
    with http_server(project) as (url, process):

        async def main(asked):
            async with http_session(url, asked) as session:
                return answer(await session.call_tool("run_plan", {"plan": 'send(text: "hello")'}))

        assert asyncio.run(main(accepting))["status"] == "ok"
        assert asyncio.run(main(declining))["status"] == "failed"
        process.terminate()
        process.wait()
        no_traceback(process.stderr.read())
    assert len(accepting.messages) == len(declining.messages) == 1
    assert calls(project) == ["send hello"] and statuses(project) == ["ok", "failed"]


def test_a_declined_elicitation_makes_no_call(project):
    person_answers(project)
    for asked in (Asked("decline"), Asked("accept", approve=False), Asked("cancel")):
        ran, _ = run_plan(project, 'send(text: "hello")', asked)
        assert ran["status"] == "failed" and "did not approve `send`" in ran["message"]
        assert len(asked.messages) == 1
        record = json.loads(invoke("show-run", ran["run"], "--format", "json").stdout)
        assert [call["outcome"] for call in record["calls"]] == ["not_approved"]
    assert calls(project) == [] and statuses(project) == ["failed"] * 3


def test_an_effectful_call_is_asked_about_and_made_once_approved(project):
    """`note` is effectful and not flagged: any client's yes lets it through, as `--approve` would."""
    asked = Asked()
    ran, _ = run_plan(project, 'lookup(topic: "x")\nnote(text: "seen {$1.owner}")', asked)
    assert ran["status"] == "ok" and calls(project) == ["lookup x", "note seen ops"]
    assert len(asked.messages) == 1 and "`note` (effectful" in asked.messages[0]
    assert statuses(project) == ["ok"]


async def tool_calls(project: Path, *requests: tuple[str, dict]) -> list[dict]:
    """What each of `requests` (a tool and its arguments) answered, in one stdio session of a client that cannot
    be asked; the server's stderr holds no traceback."""
    errlog = (project / "server.err").open("w+")
    async with stdio_session(project, errlog) as session:
        answered = [answer(await session.call_tool(tool, arguments)) for tool, arguments in requests]
    errlog.seek(0)
    no_traceback(errlog.read())
    return answered


def test_a_client_without_elicitation_has_an_effectful_call_wait_for_approve_run(project):
    """A client that cannot be asked: the effectful call is not made, it waits in the store (as `planc run --approve`
    without a terminal waits for `planc approve`); `approve_run` makes it, once; a second answer finds nothing."""
    [ran] = asyncio.run(tool_calls(project, ("run_plan", {"plan": 'lookup(topic: "x")\nnote(text: "seen")'})))
    assert ran["status"] == "awaiting_approval" and [each["tool"] for each in ran["awaiting"]] == ["note"]
    assert "`approve_run`" in ran["message"]
    assert calls(project) == ["lookup x"] and statuses(project) == ["awaiting_approval"]
    approved, again = asyncio.run(tool_calls(project, ("approve_run", {"run": ran["run"]}), ("approve_run", {"run": ran["run"]})))
    assert approved["status"] == "ok" and approved["run"] == ran["run"] and approved["result"] == "seen"
    assert again == {"ok": False, "status": "failed", "message": f"run {ran['run']} does not wait for approval: it finished (ok)"}
    assert calls(project) == ["lookup x", "note seen"] and statuses(project) == ["ok"]


def test_a_denied_approval_makes_no_call(project):
    [ran] = asyncio.run(tool_calls(project, ("run_plan", {"plan": 'note(text: "seen")'})))
    [denied] = asyncio.run(tool_calls(project, ("approve_run", {"run": ran["run"], "deny": True})))
    assert denied["status"] == "failed" and "a person denied it" in denied["message"]
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_without_a_person_no_answer_lets_a_flagged_call_through(project):
    """planc.toml does not say the answers come from a person: `send` of untrusted text is refused before the
    run, however willing the client, and `approve_run` has nothing to let through."""
    ran, _ = run_plan(project, 'send(text: "hello")', Asked())
    assert ran["status"] == "refused" and [d["code"] for d in ran["diagnostics"]] == ["E400"]
    [ran] = asyncio.run(tool_calls(project, ("run_plan", {"plan": 'send(text: "hello")'})))
    assert ran["status"] == "refused"
    assert calls(project) == [] and statuses(project) == []


def test_where_answers_come_from_a_person_a_flagged_call_waits_for_approve_run(project):
    person_answers(project)
    [ran] = asyncio.run(tool_calls(project, ("run_plan", {"plan": 'send(text: "hello")'})))
    assert ran["status"] == "awaiting_approval" and ran["awaiting"][0]["asks"].startswith("flagged:")
    assert calls(project) == []
    [approved] = asyncio.run(tool_calls(project, ("approve_run", {"run": ran["run"]})))
    assert approved["status"] == "ok" and calls(project) == ["send hello"] and statuses(project) == ["ok"]
    record = json.loads(invoke("show-run", ran["run"], "--format", "json").stdout)
    assert record["calls"][0]["labels"]["approved"] is True


def test_configured_labels_are_what_a_clients_plan_carries(project):
    """`[mcp_server] labels = []`: the deployer trusts its client's plans, and the policy lets `send` through
    (still asked about, being effectful)."""
    with open(project / "planc.toml", "a", encoding="utf-8") as toml:
        toml.write("\n[mcp_server]\nlabels = []\n")
    asked = Asked()
    ran, _ = run_plan(project, 'send(text: "hello")', asked)
    assert ran["status"] == "ok" and calls(project) == ["send hello"] and len(asked.messages) == 1
    assert "flagged" not in asked.messages[0]


def test_what_a_client_writes_is_refused_at_the_literal_that_carries_it(project):
    """The check `check_plan` and `run_plan` make: E400 at the client's literal, saying who wrote it; W505 where
    a person will be asked; nothing for the same plan in a file."""
    import planc

    checked = planc.load_project(project)
    plan = 'lookup(topic: "x")\nsend(text: "seen {$1.owner}")'
    refused = checked.check(plan, written_by={"untrusted"})
    [error] = refused.diagnostics
    assert error.code == "E400" and plan[error.span.start.offset : error.span.end.offset] == '"seen {$1.owner}"'
    assert '`text` reads `"seen {$1.owner}"`, which the plan\'s author wrote (untrusted)' in error.hints
    assert [d.code for d in checked.check(plan, written_by={"untrusted"}, approvals=True).diagnostics] == ["W505"]
    assert checked.check(plan).diagnostics == ()


def test_a_reference_to_no_step_in_a_refused_argument_is_two_errors_not_a_traceback(project):
    (project / "p.plan").write_text('send(text: "{$1}")\n', encoding="utf-8")
    result = invoke("check", "p.plan")
    assert result.exit_code == 1 and "E203" in result.output and "E400" in result.output
    assert calls(project) == []


# --- a client that goes away mid-run ---------------------------------------------------------------------


async def until(path: Path) -> None:
    """Return once `path` exists (the spy tool made it)."""
    while not path.exists():
        await asyncio.sleep(0.01)


def wait_for_status(project: Path, run_id: str | None, status: str) -> str:
    """The id of the one run, once `planc runs` shows it with `status`."""
    while True:
        shown = invoke("runs").stdout.split()
        if status in shown:
            return shown[0] if run_id is None else run_id


class WentAway(Exception):
    """What a test raises to leave its client session mid-call."""


async def leave_mid_run(session: ClientSession, project: Path) -> None:
    call = asyncio.ensure_future(session.call_tool("run_plan", {"plan": 'hold(name: "a")\nlookup(topic: "b")'}))
    await until(project / "held")
    call.cancel()
    raise WentAway


def recorded_as_interrupted(project: Path) -> None:
    """The server itself recorded the run as interrupted, by the client, and resumable (not only a run whose
    process is gone)."""
    run_id = wait_for_status(project, None, "interrupted")
    record = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert record["message"].startswith("the MCP client went away during the run")
    assert f"`planc resume {run_id}` continues it" in record["message"]
    assert [call["outcome"] for call in record["calls"]] == ["unknown"]  # `hold` was in flight


def resume_after_release(project: Path) -> None:
    run_id = wait_for_status(project, None, "interrupted")
    assert calls(project) == ["hold a"]
    (project / "hold").unlink()
    done = planc_completed("resume", run_id, cwd=project)
    assert done.returncode == 0, done.stderr
    no_traceback(done.stderr)
    assert json.loads(done.stdout) == {"topic": "b", "owner": "ops"}
    assert calls(project) == ["hold a", "hold a", "lookup b"]  # `hold` is idempotent: called again
    assert statuses(project) == ["ok"]


def test_a_client_gone_mid_run_over_http_leaves_it_interrupted_and_resumable(project):
    (project / "hold").touch()
    with http_server(project) as (url, process):

        async def main():
            with contextlib.suppress(WentAway, BaseExceptionGroup):
                async with http_session(url) as session:
                    await leave_mid_run(session, project)

        asyncio.run(main())
        recorded_as_interrupted(project)
        process.terminate()
        process.wait()
        no_traceback(process.stderr.read())
    resume_after_release(project)


def test_a_client_gone_mid_run_over_stdio_leaves_it_interrupted_and_resumable(project):
    (project / "hold").touch()
    errlog = (project / "server.err").open("w+")

    async def main():
        with contextlib.suppress(WentAway, BaseExceptionGroup):
            async with stdio_session(project, errlog) as session:
                await leave_mid_run(session, project)

    asyncio.run(main())
    errlog.seek(0)
    no_traceback(errlog.read())
    recorded_as_interrupted(project)
    resume_after_release(project)


# --- the command itself ----------------------------------------------------------------------------------


def test_without_a_planc_toml_it_says_so(tmp_path):
    done = planc_completed("mcp", cwd=tmp_path)
    assert done.returncode == 2 and "planc mcp serves the project of a planc.toml" in done.stderr
    no_traceback(done.stderr)


def test_a_bad_address_is_a_usage_error(project):
    import socket

    result = invoke("mcp", "--http", "nowhere")
    assert result.exit_code == 2 and "give HOST:PORT" in result.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = invoke("mcp", "--http", f"127.0.0.1:{port}")
    assert result.exit_code == 2 and "cannot listen there" in result.stderr


def test_the_example_client_does_the_acceptance_session(tmp_path):
    """examples/mcp_client.py, against a copy of examples/incidents."""
    import shutil

    example = Path(__file__).resolve().parents[1] / "examples"
    project = tmp_path / "incidents"
    shutil.copytree(example / "incidents", project, ignore=shutil.ignore_patterns(".planc", "__pycache__"))
    done = subprocess.run(
        [sys.executable, str(example / "mcp_client.py"), str(project)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Did you mean `search`?" in done.stdout and "run_plan: ok, run " in done.stdout
    run_id = re.search(r"run_plan: ok, run (\S+)", done.stdout)[1]
    listed = planc_completed("runs", cwd=project)
    assert run_id in listed.stdout


# --- `ask` through elicitation ---------------------------------------------------------------------------


class Answers:
    """An elicitation callback that answers each `ask` with `answer` and keeps each message and schema."""

    def __init__(self, answer: str | None) -> None:
        self.answer, self.asked = answer, []

    async def __call__(self, context, params):
        self.asked.append((params.message, params.requested_schema))
        if self.answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"answer": self.answer})


def test_a_secret_reaches_the_client_as_its_mark_only(project):
    """`run_plan`'s answer (its result, its message, its progress) and `show_run` hold the mark of a
    value labelled `secret`, never the value."""
    secret = "QXZJVKQXZJVKQXZJVKQX"
    errlog = (project / "server.err").open("w+")
    progress = []

    async def told(done, total, message):
        progress.append(message)

    async def main():
        async with stdio_session(project, errlog) as session:
            plans = ["vault()", 'vault()\nexit(status: "error", message: "the code is {$1.token}")']
            ran = [answer(await session.call_tool("run_plan", {"plan": plan}, progress_callback=told)) for plan in plans]
            shown = [answer(await session.call_tool("show_run", {"run": each["run"]})) for each in ran]
            return ran, shown

    ran, shown = asyncio.run(main())
    errlog.seek(0)
    no_traceback(errlog.read())
    assert [each["status"] for each in ran] == ["ok", "error"]
    assert MARK.fullmatch(ran[0]["result"]) and MARK.fullmatch(ran[1]["message"])
    said = json.dumps([ran, shown, progress])
    assert secret[:6] not in said and MARK.search(json.dumps(shown))
    assert calls(project) == ["vault", "vault"] and statuses(project) == ["ok", "error"]


ASK = 'topic = ask(question: "Which topic?")\nlookup(topic: $topic)'


def test_an_ask_step_is_asked_through_elicitation(project):
    asked = Answers("disk")
    ran, _ = run_plan(project, ASK, asked)
    assert ran["status"] == "ok" and ran["result"] == {"topic": "disk", "owner": "ops"}
    [(message, schema)] = asked.asked
    assert message == "planc asks, at step 1: Which topic?" and list(schema["properties"]) == ["answer"]
    assert calls(project) == ["lookup disk"] and statuses(project) == ["ok"]


def test_an_ask_is_unanswered_where_the_client_declines_or_cannot_elicit(project):
    declining = Answers(None)
    ran, _ = run_plan(project, ASK, declining)
    assert ran["status"] == "failed" and "the MCP client did not answer (decline)" in ran["message"]
    assert len(declining.asked) == 1
    ran, _ = run_plan(project, ASK)
    assert ran["status"] == "failed" and "declared no elicitation capability" in ran["message"]
    assert calls(project) == [] and statuses(project) == ["failed", "failed"]
