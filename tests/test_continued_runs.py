"""A run continued later (`planc approve`, `planc.approve_async`, MCP's `approve_run`, `planc
resume`, `planc replay`) is continued with the choices it was started with, read from its record:
its principal and the labels of whoever wrote its plan among them.

The attack: a plan whose author is untrusted (an MCP client's, or one checked with
`written_by={"untrusted"}`) makes two sends of its own literals, each flagged by the policy for
where its text came from, so each waits for a person. Approving the first through any door makes the
first send and no other: the second is asked about again. The policy also lets only alice call
anything, so a door that lost the run's principal would be refused. The tools are spies; each door's
exit code, the recorded status and calls, and the absence of a traceback are asserted.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from cli import invoke
from test_attacks import calls, statuses  # the spy's lines, the recorded statuses
from test_mcp_server import planc_mcp, tool_calls  # noqa: F401 (`planc mcp`, for the module)
from tool_project import spied_project

import planc

TOOLS = """
import os


CODES = []


def next_code():  # a secret, and another one each call
    CODES.append(1)
    with open(os.environ["PLANC_TEST_SPY"], "a", encoding="utf-8") as spy:
        spy.write(f"next_code {len(CODES)}\\n")
    return {"code": f"QXZJVK-{len(CODES)}-QXZJVKQXZJVK"}


def send(text):
    with open(os.environ["PLANC_TEST_SPY"], "a", encoding="utf-8") as spy:
        spy.write(f"send {text}\\n")
    return {"sent": text}
"""

TOML = """
policy = "policy.cedar"
store = "runs.sqlite"
principal = 'User::"alice"'

[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
labels = []
effects = {{ read_only = false, idempotent = false }}

[tools.next_code]
provider = "python:{module}:next_code"
params = {{}}
labels = ["secret"]
effects = {{ read_only = true }}

[mcp_server]
answers_from_person = true
"""

POLICY = """
permit(principal, action, resource) when { principal == User::"alice" };

@id("no-untrusted-sends")
forbid(principal, action, resource == Tool::"send")
when { context.sources has text && context.sources.text.contains("untrusted") };
"""

PLAN = 'send(text: "one")\nsend(text: "two")\n'
ALICE = 'User::"alice"'


@pytest.fixture
def project(tmp_path, monkeypatch):
    with spied_project(tmp_path, monkeypatch, "continuedtools", TOOLS, TOML, {"policy.cedar": POLICY}) as folder:
        monkeypatch.delenv("PLANC_STORE", raising=False)
        yield folder


def started_by_api(project) -> str:
    """The plan written by an untrusted author, run through the API: its first send waits."""
    checked = planc.load_project(project).check(PLAN, approvals=True, written_by={"untrusted"})
    with pytest.raises(planc.AwaitingApproval) as waiting:
        planc.run(checked, store=project / "runs.sqlite")
    return waiting.value.run_id


def started_by_mcp(project) -> str:
    """The plan sent by an MCP client (its plans are untrusted), which cannot be asked: its first
    send waits."""
    [ran] = asyncio.run(tool_calls(project, ("run_plan", {"plan": PLAN})))
    assert ran["status"] == "awaiting_approval"
    return ran["run"]


def waits_on(project, run_id: str) -> list[int]:
    shown = json.loads(invoke("show-run", run_id, "--format", "json").stdout)
    assert shown["options"]["principal"] == ALICE and shown["options"]["written_by"] == ["untrusted"]
    return [call["sequence"] for call in shown["calls"] if call["outcome"] == "awaiting_approval"]


def approved_by_cli(project, run_id: str) -> None:
    answered = invoke("approve", run_id)
    assert answered.exit_code == 3 and "Traceback" not in answered.output
    assert "call 2 (step 2): send" in answered.stderr


def approved_by_api(project, run_id: str) -> None:
    with pytest.raises(planc.AwaitingApproval) as waiting:
        asyncio.run(planc.approve_async(run_id, store=project / "runs.sqlite"))
    assert [call["sequence"] for call in waiting.value.calls] == [2]


def approved_by_mcp(project, run_id: str) -> None:
    [answered] = asyncio.run(tool_calls(project, ("approve_run", {"run": run_id})))
    assert answered["status"] == "awaiting_approval" and [c["sequence"] for c in answered["awaiting"]] == [2]


STARTS = {"api": started_by_api, "mcp": started_by_mcp}
APPROVALS = {
    "planc approve": approved_by_cli,
    "planc.approve_async": approved_by_api,
    "mcp approve_run": approved_by_mcp,
}


@pytest.mark.parametrize("approve", APPROVALS)
@pytest.mark.parametrize("start", STARTS)
def test_an_approved_run_asks_again_about_its_next_flagged_call(project, start, approve):
    run_id = STARTS[start](project)
    assert calls(project) == [] and waits_on(project, run_id) == [1]
    APPROVALS[approve](project, run_id)
    assert calls(project) == ["send one"]  # the second send was not made without asking
    assert statuses(project) == ["awaiting_approval"] and waits_on(project, run_id) == [2]


@pytest.mark.parametrize("command", ["resume", "replay", "mcp resume_run"])
def test_a_waiting_run_resumed_or_replayed_keeps_waiting_and_calls_nothing(project, command):
    run_id = started_by_api(project)
    if command == "mcp resume_run":  # the call it waits on is `approve_run`'s to answer
        [continued] = asyncio.run(tool_calls(project, ("resume_run", {"run": run_id})))
        assert continued["status"] == "awaiting_approval"
        assert "`approve_run`" in continued["message"]
    else:
        continued = invoke(command, run_id)
        assert continued.exit_code == 3 and "Traceback" not in continued.output
    assert calls(project) == [] and statuses(project) == ["awaiting_approval"] and waits_on(project, run_id) == [1]


def test_the_whole_run_approved_call_by_call_makes_each_send_once(project):
    run_id = started_by_api(project)
    approved_by_cli(project, run_id)
    done = invoke("approve", run_id)
    assert done.exit_code == 0 and json.loads(done.stdout) == {"sent": "two"}
    assert calls(project) == ["send one", "send two"] and statuses(project) == ["ok"]


CAROL = '{"uid": "User::\\"carol\\"", "attrs": {"role": "ops"}, "parents": []}'


@pytest.mark.parametrize("approve", ["planc approve", "planc.approve_async"])
def test_an_approved_run_keeps_its_principals_attributes(project, approve):
    """Started as a principal with attributes (`--principal-json`), which the policy reads: the run
    continued by an approval is judged with them, as it was started, and the approved call is
    made."""
    (project / "policy.cedar").write_text(
        'permit(principal, action, resource)\nwhen { principal has role && principal.role == "ops" };\n',
        encoding="utf-8",
    )
    (project / "p.plan").write_text('send(text: "one")\nsend(text: "two")\n', encoding="utf-8")
    # No terminal: the first send waits.
    ran = invoke("run", "p.plan", "--principal-json", CAROL, "--approve")
    assert ran.exit_code == 3 and calls(project) == []
    run_id = next(line.split()[1] for line in ran.stderr.splitlines() if line.startswith("run: "))
    if approve == "planc approve":
        answered = invoke("approve", run_id)
        assert answered.exit_code == 3 and "Traceback" not in answered.output
    else:
        with pytest.raises(planc.AwaitingApproval):
            asyncio.run(planc.approve_async(run_id, store=project / "runs.sqlite"))
    assert calls(project) == ["send one"] and statuses(project) == ["awaiting_approval"]


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_secret_read_before_the_wait_is_read_again_only_from_a_tool_that_gives_it_again(project, deterministic):
    """The run reads a secret, then waits for approval; its record keeps only the secret's mark. An
    approval continues the run, which must read the secret again: from a tool declared deterministic
    it does, and makes the approved send; from one that may answer otherwise (a new code each call,
    as here), the run stops there with one message, before any send."""
    if deterministic:
        toml = project / "planc.toml"
        toml.write_text(
            toml.read_text().replace("effects = { read_only = true }", "effects = { read_only = true, deterministic = true }")
        )
    checked = planc.load_project(project).check("next_code()\n" + PLAN, approvals=True, written_by={"untrusted"})
    with pytest.raises(planc.AwaitingApproval) as waiting:
        planc.run(checked, store=project / "runs.sqlite")
    assert calls(project) == ["next_code 1"]
    answered = invoke("approve", waiting.value.run_id)
    assert "Traceback" not in answered.output
    if deterministic:
        assert answered.exit_code == 3 and calls(project) == ["next_code 1", "next_code 2", "send one"]
        assert statuses(project) == ["awaiting_approval"]
    else:
        assert answered.exit_code == 1 and "declared read-only and deterministic" in answered.stderr
        assert calls(project) == ["next_code 1"] and statuses(project) == ["failed"]
