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
from test_attacks import calls, run, statuses  # the spy's lines, a run of p.plan, the recorded statuses
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

TOML = """
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

[plans.inner]
file = "inner.plan"
params = {{ limit = {{ type = "integer", default = 2 }} }}
"""

POLICY = """
@id("never-mallory")
forbid(principal, action, resource == Tool::"send") when { context.args has to && context.args.to == "mallory" };

permit(principal, action, resource);
"""

ANSWER = {"type": "object"}


@pytest.fixture
def project(tmp_path, monkeypatch, model_server):
    with tool_project(
        tmp_path, "doortools", TOOLS, TOML, {"policy.cedar": POLICY, "inner.plan": 'append(text: "inner {$args.limit}")\n'}
    ):
        toml = tmp_path / "planc.toml"
        toml.write_text(
            toml.read_text() + f'\n[models.default]\nbase_url = "{model_server.url}"\nmodel = "m"\n', encoding="utf-8"
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        yield tmp_path


def agent(tools: str = '["send"]', iterations: int = 4) -> str:
    return f'agent(prompt: "go", output_schema: {{type: "object"}}, tools: {tools}, max_iterations: {iterations})\n'


def tool_errors(model_server) -> list[str]:
    """What the tool messages the model was sent say, in order (each a tool's result or its error)."""
    last = model_server.bodies()[-1]["messages"]
    return [json.loads(message["content"]).get("error", "") for message in last if message["role"] == "tool"]


# --- 1. a budget is a promise at run time -----------------------------------------------------------


def test_a_tool_returning_more_than_its_returns_at_most_fails_that_call(project):
    """The check bounds the map by `limit` (3 calls in all, within --max-calls); the tool returns five."""
    result = run(project, "listing(limit: 2) |> map(do: { append(text: item) })\n", "--max-calls", "3")
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
    assert (
        "step 1/agent.2/pricey: `pricey` was not called: it would pass the budget: the run has spent $1.00 and "
        "this call costs $1.00, and `--max-usd` is 1.5"
    ) in result.output
    assert calls(project) == ["pricey a"] and statuses(project) == ["failed"]


# --- 2. the arguments a model chooses are validated as a plan's are ----------------------------------


@pytest.mark.parametrize(
    "arguments, error",
    [
        ({"to": "bob", "text": "hi", "bcc": "eve"}, "`send` has no parameter `bcc` (its parameters are `to`, `text`)"),
        ({"to": "bob"}, "`send` needs the argument `text`, which is missing"),
        ({"to": 5, "text": "hi"}, "argument `to` of `send` is invalid at run time: 5 is not of type 'string'"),
        # validated before the policy: a wrong call goes back to the model rather than ending the run
        ({"to": "mallory", "text": "hi", "bcc": "eve"}, "`send` has no parameter `bcc`"),
    ],
)
def test_an_agents_wrong_arguments_go_back_to_the_model_and_never_reach_the_tool(project, model_server, arguments, error):
    model_server.call("send", arguments)
    model_server.reply('{"done": true}')
    result = run(project, agent())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == {"done": True}
    [told] = tool_errors(model_server)
    assert told.startswith("`send` failed: step 1/agent.1/send: ") and error in told
    assert calls(project) == [] and statuses(project) == ["ok"]


def test_an_agent_with_no_tools_makes_no_call_whatever_its_model_asks(project, model_server):
    """`tools: []` offers the model nothing, and a call it asks for anyway (a tool the policy allows, by its
    name) is never made: the model is told it has no tools, and answers."""
    model_server.call("append", {"text": "from the model"})
    model_server.reply('{"done": true}')
    result = run(project, agent(tools="[]"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"output": {"done": True}, "iterations": 2, "tools_called": [], "final": True}
    assert tool_errors(model_server) == ["there is no tool `append`; this agent has no tools"]
    assert all("tools" not in body for body in model_server.bodies())  # offered none
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


def test_a_store_a_newer_planc_wrote_is_refused_untouched(project, monkeypatch):
    from planc.store.run_store import SCHEMA_VERSION

    store = project / "newer.store"  # not `*.sqlite`: the session's replay of every run store leaves it alone
    monkeypatch.setenv("PLANC_STORE", str(store))
    assert run(project, 'append(text: "first")\n').exit_code == 0
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA journal_mode=DELETE")  # one file, so its hash is all of it
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = digest(store)
    for command in (("run", "p.plan"), ("runs",)):
        result = invoke(*command)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert (
            f"a newer planc wrote this run store (its schema is version {SCHEMA_VERSION + 1}; this planc reads "
            f"up to version {SCHEMA_VERSION})"
        ) in result.output
    assert digest(store) == before and calls(project) == ["append first"]


# --- 11. --events never overwrites what the run reads or writes --------------------------------------


@pytest.mark.parametrize(
    "target", ["runs.sqlite", "runs.sqlite-wal", "p.plan", "planc.toml", "policy.cedar", "./sub/../runs.sqlite"]
)
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


# --- 4. JSON of any depth is one clean error -----------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_model_reply_nested_past_reading_fails_its_inference_and_the_run(project, model_server):
    model_server.replies.append((200, "application/json", DEEP.encode(), {}))
    result = run(project, agent() + 'append(text: "after")\n')
    assert result.exit_code == 1 and "body that is not a JSON object" in result.output
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_deep_tool_call_arguments_and_answers_go_back_to_the_model(project, model_server):
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "send", "arguments": DEEP}}],
                },
            }
        ],
    }
    model_server.replies.append((200, "application/json", json.dumps(body).encode(), {}))
    model_server.reply(DEEP)
    model_server.reply('{"done": true}')
    result = run(project, agent())
    assert result.exit_code == 0, result.output
    told = [message["content"] for message in model_server.bodies()[-1]["messages"] if message["role"] != "assistant"]
    assert "nested deeper than 256 levels" in told[-2] and "nested deeper than 256 levels" in told[-1]
    assert calls(project) == [] and statuses(project) == ["ok"]


@pytest.mark.parametrize(
    "name, command, code, words",
    [
        ("deep.json", ("run", "deep.json"), 1, "this is JSON, not a plan"),  # not read as a stored plan
        ("answers.json", ("run", "p.plan", "--answers", "answers.json"), 2, "nested deeper than 256 levels"),
        ("planc.lock.json", ("registry", "list"), 2, "nested deeper than 256 levels"),
        ("lines.jsonl", ("batch", "p.plan", "--args", "lines.jsonl"), 1, "line 1"),
    ],
)
def test_deep_json_in_any_file_planc_reads_is_one_clean_error(project, name, command, code, words):
    (project / "p.plan").write_text('append(text: "x")\n', encoding="utf-8")
    texts = {
        "deep.json": '{"format": "planc.plan", "version": 2, "x": ' + DEEP + "}",
        "answers.json": '{"q": ' + DEEP + "}",
        "planc.lock.json": '{"format": "planc.lock", "servers": ' + DEEP + "}",
        "lines.jsonl": '{"a": ' + DEEP + "}\n",
    }
    (project / name).write_text(texts[name], encoding="utf-8")
    if name == "planc.lock.json":  # read only for a planc.toml that declares an MCP server
        with (project / "planc.toml").open("a", encoding="utf-8") as toml:
            toml.write('\n[mcp.tickets]\ncommand = ["tickets-server"]\n')
    result = invoke(*command)
    assert result.exit_code == code and words in result.output, result.output[-2000:]
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert calls(project) == [] and statuses(project) == []


def test_a_store_record_nested_past_reading_is_one_clean_error(project, monkeypatch):
    store = project / "tampered.store"  # not `*.sqlite`: the session's replay of every run store leaves it alone
    monkeypatch.setenv("PLANC_STORE", str(store))
    assert run(project, 'append(text: "first")\n').exit_code == 0
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET options = ?", ('{"a": ' + DEEP + "}",))
    db.close()
    run_id = json.loads(invoke("runs", "--format", "json").stdout)[0]["id"]
    for command in (("show-run", run_id), ("replay", run_id)):
        result = invoke(*command)
        assert result.exit_code in (1, 2) and "nested deeper than 256 levels" in result.output, result.output[-2000:]
        assert "Traceback" not in result.output
    assert calls(project) == ["append first"]


# --- 8. replay needs nothing but the record ---------------------------------------------------------------


@pytest.mark.parametrize("change", ["moved", "reshaped"])
def test_a_replay_needs_neither_the_sql_database_nor_its_shape(project, change):
    with sqlite3.connect(project / "ops.sqlite") as db:
        db.execute("CREATE TABLE incidents (id TEXT, title TEXT)")
        db.executemany("INSERT INTO incidents VALUES (?, ?)", [("I1", "disk"), ("I2", "certificate")])
    db.close()
    with (project / "planc.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[tools.incidents]\nprovider = "sql:ops.sqlite"\nquery = "SELECT id, title FROM incidents"\n')
    ran = run(project, "incidents() |> map(do: { append(text: item.title) })\n")
    assert ran.exit_code == 0, ran.output
    run_id = json.loads(invoke("runs", "--format", "json").stdout)[0]["id"]
    if change == "moved":
        (project / "ops.sqlite").rename(project / "elsewhere.sqlite")
    else:
        with sqlite3.connect(project / "ops.sqlite") as db:
            db.execute("ALTER TABLE incidents RENAME COLUMN title TO summary")
        db.close()
    replayed = invoke("replay", run_id)
    assert replayed.exit_code == 0 and "Traceback" not in replayed.output, replayed.output
    assert replayed.stdout == ran.stdout and json.loads(replayed.stdout) == ["disk", "certificate"]
    assert calls(project) == ["append disk", "append certificate"] and statuses(project) == ["ok"]


# --- 9. a compiled plan keeps its declared params ---------------------------------------------------------


def test_a_compiled_declared_plan_keeps_its_params_on_every_run_path(project):
    assert invoke("compile", "inner.plan", "-o", "inner.json").exit_code == 0
    for args, words in ((("--arg", "limit=many"), "`limit` is invalid"), (("--arg", "limt=3"), "no parameter `limt`")):
        result = invoke("run", "inner.json", *args)
        assert result.exit_code == 1 and words in result.output and "Traceback" not in result.output
    (project / "lines.jsonl").write_text('{"limit": "many"}\n{"limt": 3}\n', encoding="utf-8")
    batch = invoke("batch", "inner.json", "--args", "lines.jsonl")
    assert batch.exit_code == 1 and "Traceback" not in batch.output
    assert "`limit` is invalid" in batch.output and "no parameter `limt`" in batch.output
    assert calls(project) == [] and statuses(project) == []
    result = invoke("run", "inner.json")  # its declared default
    assert result.exit_code == 0 and json.loads(result.stdout) == "inner 2"
    assert calls(project) == ["append inner 2"] and statuses(project) == ["ok"]


# --- 16. show-run says what happened, in the order it happened ----------------------------------------------


def test_show_run_shows_a_step_the_policy_refused_as_failed(project):
    result = run(project, 'append(text: "first")\nsend(to: $args.to, text: "x")\n', "--arg", "to=mallory")
    assert result.exit_code == 1 and calls(project) == ["append first"] and statuses(project) == ["failed"]
    run_id = json.loads(invoke("runs", "--format", "json").stdout)[0]["id"]
    text = invoke("show-run", run_id).stdout.splitlines()
    assert text[2].startswith("step 1 append") and text[3].startswith("step 2 send failed: step 2: calling `send`")
    page = invoke("show-run", run_id, "--format", "html").stdout
    assert 'data-step="2" data-tool="send" data-outcome="failed"' in page
