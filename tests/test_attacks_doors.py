"""Attacks on the promises kept at every door: run-time budgets, the arguments a model chooses, input of
any shape, replay without the world, and the run store's files.

As in the other attack modules, every tool is a spy that appends each call to `spy.log` before it
does anything else; each test asserts the exact calls made, the exit code, the run's recorded status
and that no traceback reached the user.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli import invoke
from model_server import model_server  # noqa: F401  (the fixture)
from tool_project import tool_project

TOOLS = '''
import os

SPY = os.environ["PLANC_TEST_SPY"]


def _called(line):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(line + "\\n")


def listing(limit):
    """Five items, whatever `limit` says: a tool that breaks its `returns_at_most`."""
    _called(f"listing {limit}")
    return ["a", "b", "c", "d", "e"]


def append(text):
    _called(f"append {text}")
    return text


def pricey(text):
    _called(f"pricey {text}")
    return text


def send(to, text="", **extra):
    """Takes what it is given: only planc's validation keeps a model's wrong arguments from it."""
    _called(f"send {to} {text} {sorted(extra)}")
    return {"sent": to}
'''

TOML = '''
policy = "policy.cedar"

[tools.listing]
provider = "python:{module}:listing"
params = {{ limit = {{ type = "integer" }} }}
required = ["limit"]
returns_at_most = "limit"

[tools.append]
provider = "python:{module}:append"
params = {{ text = {{ type = "string" }} }}
required = ["text"]

[tools.pricey]
provider = "python:{module}:pricey"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
cost = {{ usd = 1.0 }}

[tools.send]
provider = "python:{module}:send"
params = {{ to = {{ type = "string" }}, text = {{ type = "string" }} }}
required = ["to", "text"]
'''

POLICY = '''
@id("never-mallory")
forbid(principal, action, resource == Tool::"send") when { context.args has to && context.args.to == "mallory" };

permit(principal, action, resource);
'''

ANSWER = {"type": "object"}


@pytest.fixture
def project(tmp_path, monkeypatch, model_server):
    with tool_project(tmp_path, "doortools", TOOLS, TOML, {"policy.cedar": POLICY}):
        toml = tmp_path / "planc.toml"
        toml.write_text(toml.read_text() + f'\n[models.default]\nbase_url = "{model_server.url}"\nmodel = "m"\n',
                        encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        yield tmp_path


def calls(project) -> list[str]:
    spy = project / "spy.log"
    return spy.read_text(encoding="utf-8").splitlines() if spy.exists() else []


def statuses(project) -> list[str]:
    store = project / "runs.sqlite"
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return [status for (status,) in db.execute("SELECT status FROM runs ORDER BY started_at, id")]


def run(project, text: str, *args: str):
    (project / "p.plan").write_text(text, encoding="utf-8")
    result = invoke("run", "p.plan", *args)
    assert "Traceback" not in result.output
    return result


def agent(tools: str = '["send"]', iterations: int = 4) -> str:
    return f'agent(prompt: "go", output_schema: {{type: "object"}}, tools: {tools}, max_iterations: {iterations})\n'


def tool_errors(model_server) -> list[str]:
    """What the tool messages the model was sent say, in order (each a tool's result or its error)."""
    last = model_server.bodies()[-1]["messages"]
    return [json.loads(message["content"]).get("error", "") for message in last if message["role"] == "tool"]


# --- 1. a budget is a promise at run time -----------------------------------------------------------

def test_a_tool_returning_more_than_its_returns_at_most_fails_that_call(project):
    """The check bounds the map by `limit` (3 calls in all, within --max-calls); the tool returns five."""
    result = run(project, 'listing(limit: 2) |> map(do: { append(text: item) })\n', "--max-calls", "3")
    assert result.exit_code == 1 and "`listing` returned a result its declaration does not allow" in result.output
    assert "it returned 5 items, and its `returns_at_most` is `limit`, which was 2" in result.output
    assert calls(project) == ["listing 2"] and statuses(project) == ["failed"]


def test_the_call_that_would_pass_max_usd_is_not_made(project, model_server):
    """An agent's tools chosen at run time cost nothing the check could see: the run counts each call."""
    model_server.call("pricey", {"text": "a"})
    model_server.call("pricey", {"text": "b"}, id="call_2")
    model_server.reply("{}")
    result = run(project, agent("$args.tools"), "--arg-json", 'tools=["pricey"]', "--max-usd", "1.5")
    assert result.exit_code == 1
    assert ("step 1/agent.2/pricey: `pricey` was not called: it would pass the budget: the run has spent $1.00 and "
            "this call costs $1.00, and `--max-usd` is 1.5") in result.output
    assert calls(project) == ["pricey a"] and statuses(project) == ["failed"]


# --- 2. the arguments a model chooses are validated as a plan's are ----------------------------------

@pytest.mark.parametrize("arguments, error", [
    ({"to": "bob", "text": "hi", "bcc": "eve"}, "`send` has no parameter `bcc` (its parameters are `to`, `text`)"),
    ({"to": "bob"}, "`send` needs the argument `text`, which is missing"),
    ({"to": 5, "text": "hi"}, "argument `to` of `send` is invalid at run time: 5 is not of type 'string'"),
    # validated before the policy: a wrong call goes back to the model rather than ending the run
    ({"to": "mallory", "text": "hi", "bcc": "eve"}, "`send` has no parameter `bcc`"),
])
def test_an_agents_wrong_arguments_go_back_to_the_model_and_never_reach_the_tool(project, model_server,
                                                                                  arguments, error):
    model_server.call("send", arguments)
    model_server.reply('{"done": true}')
    result = run(project, agent())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == {"done": True}
    [told] = tool_errors(model_server)
    assert told.startswith("`send` failed: step 1/agent.1/send: ") and error in told
    assert calls(project) == [] and statuses(project) == ["ok"]


# --- 3. a denial names the tool the agent called -------------------------------------------------------

def test_the_denial_of_an_agents_call_names_that_tool(project, model_server):
    model_server.call("send", {"to": "mallory", "text": "hi"})
    result = run(project, agent())
    assert result.exit_code == 1
    assert "step 1/agent.1/send: calling `send` is forbidden by policy `never-mallory`" in result.output
    assert "calling `agent`" not in result.output
    assert calls(project) == [] and statuses(project) == ["failed"]


# --- 10. a store written by a newer planc is refused untouched --------------------------------------

def digest(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_a_newer_planc_wrote_is_refused_untouched(project):
    from planc.store.run_store import SCHEMA_VERSION

    assert run(project, 'append(text: "first")\n').exit_code == 0
    store = project / "runs.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA journal_mode=DELETE")  # one file, so its hash is all of it
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = digest(store)
    for command in (("run", "p.plan"), ("runs",)):
        result = invoke(*command)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert (f"a newer planc wrote this run store (its schema is version {SCHEMA_VERSION + 1}; this planc reads "
                f"up to version {SCHEMA_VERSION})") in result.output
    assert digest(store) == before and calls(project) == ["append first"]


# --- 11. --events never overwrites what the run reads or writes --------------------------------------

@pytest.mark.parametrize("target", ["runs.sqlite", "runs.sqlite-wal", "p.plan", "planc.toml", "policy.cedar",
                                    "./sub/../runs.sqlite"])
def test_events_never_overwrite_the_store_its_journal_the_plan_or_planc_toml(project, target):
    assert run(project, 'append(text: "first")\n').exit_code == 0
    (project / "sub").mkdir()
    kept = {name: digest(project / name) for name in ("runs.sqlite", "p.plan", "planc.toml", "policy.cedar")}
    if (project / "runs.sqlite-wal").exists():
        kept["runs.sqlite-wal"] = digest(project / "runs.sqlite-wal")
    result = invoke("run", "p.plan", "--events", target)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"--events {target}: that is " in result.output and "give another file" in result.output
    assert {name: digest(project / name) for name in kept} == kept
    assert calls(project) == ["append first"] and statuses(project) == ["ok"]
