"""Agent conversations that continue, checks that repair in the same conversation, and the agent step as
specified, through `planc run` against the loopback chat-completions server (tests/model_server.py).

The tools are spies: each call appends a line to calls.jsonl, so a test counts exactly what ran. The
model's side is asserted on what the server received.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest
from cli import HANG_GUARD_S, invoke, planc_process
from model_server import model_server  # noqa: F401  (the fixture)
from tool_project import tool_project

import planc
from planc.backend.models.agent_loop import SYSTEM_PROMPT, task
from planc.optimize.optimize import optimize
from planc.registry import load_registry

TOOLS = """
import json, os

def _called(name, **args):
    with open(os.environ["PLANC_TEST_CALLS"], "a") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")

def search(query, limit=3):
    _called("search", query=query, limit=limit)
    return [{"id": f"INC-{7 + i}", "title": f"{query} {i}"} for i in range(limit)]

def notify(channel, text):
    _called("notify", channel=channel, text=text)
    return {"sent": True}

def cites_incident(severity, summary):
    _called("cites_incident", severity=severity, summary=summary)
    if "INC-" in summary:
        return {"ok": True}
    return {"ok": False, "problems": ["the summary names no incident (like INC-7)"]}

def strict(summary):
    _called("strict", summary=summary)
    raise ValueError("the summary is too short")
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, default = 3 }} }}
required = ["query"]
effects = {{ read_only = true }}

[tools.notify]
provider = "python:{module}:notify"
params = {{ channel = {{ type = "string" }}, text = {{ type = "string" }} }}
required = ["channel", "text"]

[tools.cites_incident]
provider = "python:{module}:cites_incident"
params = {{ severity = {{ type = "string" }}, summary = {{ type = "string" }} }}
required = ["severity", "summary"]
effects = {{ read_only = true }}

[tools.strict]
provider = "python:{module}:strict"
params = {{ summary = {{ type = "string" }} }}
required = ["summary"]
effects = {{ read_only = true }}

[tools.open_findings]
provider = "sql:findings.sqlite"
query = "SELECT id, summary FROM findings WHERE status = :status ORDER BY id LIMIT :limit"
params = {{ status = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, maximum = 10, default = 10 }} }}
returns_at_most = "limit"
"""

SCHEMA = (
    '{type: "object", properties: {severity: {type: "string"}, summary: {type: "string"}}, required: ["severity", "summary"]}'
)
SCHEMA_DATA = {
    "type": "object",
    "properties": {"severity": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["severity", "summary"],
}


@pytest.fixture
def project(tmp_path, monkeypatch, model_server):
    with tool_project(tmp_path, "conversationtools", TOOLS, TOML, {"calls.jsonl": ""}):
        with sqlite3.connect(tmp_path / "findings.sqlite") as db:
            db.execute("CREATE TABLE findings (id TEXT, summary TEXT, status TEXT)")
            db.executemany(
                "INSERT INTO findings VALUES (?, ?, ?)",
                [
                    ("F2", "backups are not tested", "open"),
                    ("F1", "the disk fills up", "open"),
                    ("F3", "an old certificate", "closed"),
                    ("F4", "no alert on replication lag", "open"),
                ],
            )
        db.close()
        toml = tmp_path / "planc.toml"
        toml.write_text(
            toml.read_text() + f'\n[models.default]\nbase_url = "{model_server.url}"\nmodel = "planc-test-model"\n',
            encoding="utf-8",
        )
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.jsonl"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def calls(project) -> list[dict]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def run(project, text: str, *args):
    (project / "p.plan").write_text(text, encoding="utf-8")
    return invoke("run", "p.plan", *args)


def run_record(run_id: str) -> dict:
    return next(run for run in json.loads(invoke("runs", "--format", "json").stdout) if run["id"] == run_id)


def run_id(result) -> str:
    return result.stderr.split("run: ")[1].split()[0]


def at(text: str, needle: str) -> str:
    """`p.plan:LINE:COLUMN` of the first `needle` in `text`: where a diagnostic about it points."""
    before = text[: text.index(needle)]
    return f"p.plan:{before.count(chr(10)) + 1}:{len(before) - before.rfind(chr(10))}"


def check(project, text: str):
    (project / "p.plan").write_text(text, encoding="utf-8")
    return invoke("check", "p.plan", "--format", "line")


def answer(severity: str, summary: str) -> str:
    return json.dumps({"severity": severity, "summary": summary})


def user(prompt: str, schema: dict = SCHEMA_DATA, context=None) -> dict:
    return {"role": "user", "content": task(prompt, context, schema)}


def assistant(content: str) -> dict:
    return {"role": "assistant", "content": content}


SYSTEM = {"role": "system", "content": SYSTEM_PROMPT}


# --- conversations that continue


THREE_TURNS = f"""review = agent(prompt: "Review the disk alerts", output_schema: {SCHEMA}, tools: ["search", "notify"])
prove = agent(prompt: "Prove each claim", output_schema: {SCHEMA}, continue: $review, tools: ["search"])
agent(prompt: "Write the summary", output_schema: {SCHEMA}, continue: $prove)
"""


def test_three_turns_of_one_conversation_each_see_the_turns_before(project, model_server):
    model_server.play("tool_call_search")
    for reply in (answer("high", "disk full"), answer("high", "INC-7 proves it"), answer("high", "INC-7: disk full")):
        model_server.reply(reply)
    result = run(project, THREE_TURNS)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "output": {"severity": "high", "summary": "INC-7: disk full"},
        "iterations": 1,
        "tools_called": [],
        "final": True,
    }
    assert calls(project) == [{"tool": "search", "query": "disk full", "limit": 3}]

    first, second, prove, summary = model_server.bodies()
    assert first["messages"] == [SYSTEM, user("Review the disk alerts")]
    turn_one = second["messages"]
    assert turn_one[:2] == first["messages"] and [m["role"] for m in turn_one[2:]] == ["assistant", "tool"]
    assert json.loads(turn_one[3]["content"])[0] == {"id": "INC-7", "title": "disk full 0"}
    assert prove["messages"] == turn_one + [assistant(answer("high", "disk full")), user("Prove each claim")]
    assert summary["messages"] == prove["messages"] + [assistant(answer("high", "INC-7 proves it")), user("Write the summary")]
    offered = [[tool["function"]["name"] for tool in body["tools"]] for body in (first, prove, summary)]
    assert offered == [["notify", "search"], ["search"], ["notify", "search"]]  # narrowed, then the conversation's
    assert {body["model"] for body in model_server.bodies()} == {"planc-test-model"}

    asked = len(model_server.requests)
    replayed = invoke("replay", run_id(result))  # the conversation is in the record: no model is asked
    assert replayed.exit_code == 0 and replayed.stdout == result.stdout
    assert len(model_server.requests) == asked and len(calls(project)) == 1


def test_a_conversation_killed_during_a_turn_resumes_from_its_record(project, model_server):
    model_server.play("tool_call_search")
    model_server.reply(answer("high", "disk full"))
    model_server.reply(answer("high", "INC-7 proves it"))
    model_server.hold()  # the third turn's inference: the run is killed while the model is asked
    model_server.reply(answer("high", "INC-7: disk full"))
    (project / "p.plan").write_text(THREE_TURNS, encoding="utf-8")
    process = planc_process("run", "p.plan", cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert model_server.waiting.wait(HANG_GUARD_S), "the run never asked for the third turn"
    finally:
        process.kill()
        _, stderr = process.communicate()
    killed = model_server.bodies()[-1]
    assert len(model_server.requests) == 4 and len(calls(project)) == 1

    resumed = invoke("resume", stderr.decode().split("run: ")[1].split()[0])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["output"] == {"severity": "high", "summary": "INC-7: disk full"}
    # The first two turns came from the record; the turn in flight was asked again, in the same conversation.
    assert len(model_server.requests) == 5 and model_server.bodies()[-1]["messages"] == killed["messages"]
    assert len(calls(project)) == 1


def test_a_continuing_step_that_widens_the_tools_is_refused_before_anything_runs(project, model_server):
    text = THREE_TURNS.replace('continue: $review, tools: ["search"]', 'continue: $review, tools: ["search", "not*"]').replace(
        'tools: ["search", "notify"])', 'tools: ["search"])'
    )
    result = run(project, text)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (
        "error[E212]: `not*` offers `notify`, which the conversation's first step (step 1) does not offer\n"
        f" --> {at(text, chr(34) + 'not*')} (step 2)"
    ) in result.output, result.output
    assert "help: step 1 offers `search`" in result.output
    assert calls(project) == [] and model_server.requests == []


def test_a_continuing_step_keeps_the_model_and_system_prompt(project, model_server):
    text = THREE_TURNS.replace("continue: $prove)", 'continue: $prove, model: "judge", system_prompt: "Be brief.")')
    result = check(project, text)
    assert result.exit_code == 1 and calls(project) == [] and model_server.requests == []
    assert f"{at(text, 'model:')}: E212 `model` cannot change in a conversation" in result.output
    assert f"{at(text, 'system_prompt:')}: E212 `system_prompt` cannot change in a conversation" in result.output


@pytest.mark.parametrize(
    ("written", "found"),
    [
        ("$review.output", "`$review.output`, a part of a result"),
        ("$hits", "`$hits`, the result of `search`"),
        ('"review"', '`"review"`'),
    ],
)
def test_continue_takes_a_reference_to_an_agent_step(project, written, found):
    text = (
        f'hits = search(query: "disk")\nreview = agent(prompt: "a", output_schema: {SCHEMA})\n'
        f'agent(prompt: "b", output_schema: {SCHEMA}, continue: {written})'
    )
    result = check(project, text)
    assert result.exit_code == 1
    assert (
        f"{at(text, 'continue: ' + written).rsplit(':', 1)[0]}:{text.splitlines()[2].index(written) + 1}: "
        f"E212 `continue` takes a reference to an earlier agent step, like `$review`, found {found}" in result.output
    ), result.output


def test_a_tool_the_turn_narrowed_away_is_not_called(project, model_server):
    model_server.reply(answer("high", "disk full"))
    model_server.call("notify", {"channel": "#ops", "text": "page"})
    model_server.reply(answer("high", "INC-7"))
    result = run(project, "\n".join(THREE_TURNS.splitlines()[:2]))
    assert result.exit_code == 0, result.output
    assert calls(project) == []  # the model asked for `notify`, which this turn does not offer
    told = json.loads(model_server.bodies()[2]["messages"][-1]["content"])
    assert told == {"error": "there is no tool `notify`; the tools are search"}


MAP_OVER_ROWS = f"""triage = agent(prompt: "You will review open findings, one at a time.", output_schema: {SCHEMA})
open_findings(status: "open")
  |> map(concurrency: 1, do: {{
       agent(prompt: "Review finding {{item.id}}: {{item.summary}}", output_schema: {SCHEMA}, continue: $triage)
     }})
"""


def test_a_map_over_sql_rows_continues_one_conversation_one_row_after_the_other(project, model_server):
    model_server.reply(answer("low", "ready"))
    for finding in ("F1", "F2", "F4"):
        model_server.reply(answer("high", f"{finding} reviewed"))
    result = run(project, MAP_OVER_ROWS)
    assert result.exit_code == 0, result.output
    assert [item["output"]["summary"] for item in json.loads(result.stdout)] == ["F1 reviewed", "F2 reviewed", "F4 reviewed"]
    bodies = model_server.bodies()
    assert len(bodies) == 4
    prompts = [
        "Review finding F1: the disk fills up",
        "Review finding F2: backups are not tested",
        "Review finding F4: no alert on replication lag",
    ]
    expected = [SYSTEM, user("You will review open findings, one at a time."), assistant(answer("low", "ready"))]
    for body, prompt, reply in zip(bodies[1:], prompts, ("F1 reviewed", "F2 reviewed", "F4 reviewed")):
        assert body["messages"] == expected + [user(prompt)]  # every row sees the rows before it
        expected += [user(prompt), assistant(answer("high", reply))]


def test_a_map_running_items_at_once_cannot_continue_one_conversation(project, model_server):
    text = MAP_OVER_ROWS.replace("concurrency: 1", "concurrency: 2")
    result = run(project, text)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (
        "error[E212]: this `map` runs 2 items at once, and its body continues the conversation of step 1: "
        f"its turns would interleave\n --> {at(text, '2, do')} (step 3)"
    ) in result.output, result.output
    assert "help: write `concurrency: 1` for one follow-up per item, in order" in result.output
    assert calls(project) == [] and model_server.requests == []


def test_a_conversation_begun_in_each_item_may_run_items_at_once(project, model_server):
    text = f"""open_findings(status: "open")
  |> map(concurrency: 3, do: {{
       first = agent(prompt: "Review {{item.id}}", output_schema: {SCHEMA})
       agent(prompt: "Prove it", output_schema: {SCHEMA}, continue: $first)
     }})
"""
    assert check(project, text).exit_code == 0


# --- checks that repair in the same conversation


CHECKED = f"""agent(prompt: "Triage the disk alerts", output_schema: {SCHEMA}, tools: ["search"],
      check: "cites_incident", repairs: REPAIRS)
"""
REPAIR_TURN = (
    "The check `cites_incident` found problems with your answer:\n"
    "- the summary names no incident (like INC-7)\n"
    "Correct them. Answer with only the JSON object that conforms to the output schema, and nothing else."
)


def test_a_check_that_fails_twice_gets_two_repair_turns_and_passes_on_the_third_answer(project, model_server):
    for reply in (answer("high", "disk full"), answer("high", "the disk is full"), answer("high", "INC-7: disk full")):
        model_server.reply(reply)
    result = run(project, CHECKED.replace("REPAIRS", "2"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "output": {"severity": "high", "summary": "INC-7: disk full"},
        "iterations": 3,
        "tools_called": [],
        "final": True,
    }
    checked = [call["summary"] for call in calls(project) if call["tool"] == "cites_incident"]
    assert checked == ["disk full", "the disk is full", "INC-7: disk full"]
    first, second, third = model_server.bodies()
    assert second["messages"] == first["messages"] + [
        assistant(answer("high", "disk full")),
        {"role": "user", "content": REPAIR_TURN},
    ]
    assert third["messages"] == second["messages"] + [
        assistant(answer("high", "the disk is full")),
        {"role": "user", "content": REPAIR_TURN},
    ]
    recorded = json.loads(invoke("show-run", run_id(result), "--format", "json").stdout)
    assert [(call["step"], call["tool"]) for call in recorded["calls"]] == [
        ("1", "model:chat"),
        ("1/check.1/cites_incident", "cites_incident"),
        ("1", "model:chat"),
        ("1/check.2/cites_incident", "cites_incident"),
        ("1", "model:chat"),
        ("1/check.3/cites_incident", "cites_incident"),
    ]


def test_a_check_that_never_passes_fails_the_step_with_its_last_problems(project, model_server):
    for reply in (answer("high", "disk full"), answer("high", "the disk is full"), answer("high", "still no id")):
        model_server.reply(reply)
    result = run(project, CHECKED.replace("REPAIRS", "1") + 'notify(channel: "#ops", text: "{$1.output.summary}")\n')
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (
        "error: step 1: the check `cites_incident` still fails after 1 repair: the summary names no incident (like INC-7)"
    )
    assert [call["tool"] for call in calls(project)] == ["cites_incident", "cites_incident"]  # never `notify`
    assert len(model_server.requests) == 2
    assert run_record(run_id(result))["status"] == "failed"


def test_a_check_that_raises_fails_and_its_error_goes_back_as_a_problem(project, model_server):
    model_server.reply(answer("high", "short"))
    model_server.reply(answer("high", "longer"))
    text = f'agent(prompt: "Triage", output_schema: {SCHEMA}, check: "strict", repairs: 1)'
    result = run(project, text)
    assert result.exit_code == 1
    problem = "step 1/check.1/strict: `strict` failed: ValueError: the summary is too short"
    assert model_server.bodies()[1]["messages"][-1]["content"].startswith(
        f"The check `strict` found problems with your answer:\n- {problem}\n"
    )
    assert [call["summary"] for call in calls(project)] == ["short", "longer"]


def test_a_declared_plan_is_a_check_and_its_returns_is_held_to(project, model_server):
    (project / "verify.plan").write_text(
        'decide(when: $args.summary contains "INC-", then: { reshape(value: {ok: true}) },\n'
        '       else: { reshape(value: {ok: false, problems: ["cite an incident"]}) })\n'
    )
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text() + '\n[plans.verify]\nfile = "verify.plan"\n'
        'params = { summary = { type = "string" } }\n'
        'returns = { type = "object", required = ["ok"], properties = { ok = { type = "boolean" } } }\n'
    )
    model_server.reply(answer("high", "disk full"))
    model_server.reply(answer("high", "INC-9"))
    result = run(project, CHECKED.replace('"cites_incident"', '"plan__verify"').replace("REPAIRS", "1"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"]["summary"] == "INC-9"
    assert model_server.bodies()[1]["messages"][-1]["content"].startswith(
        "The check `plan__verify` found problems with your answer:\n- cite an incident\n"
    )


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        (
            f'agent(prompt: "a", output_schema: {SCHEMA}, check: "cites_incidnt")',
            '"cites_incidnt"',
            "E200 `check` names `cites_incidnt`, which is not a tool",
        ),
        (
            f'agent(prompt: "a", output_schema: {SCHEMA}, repairs: 3)',
            "repairs",
            "E303 `repairs` counts the repairs of a failed `check`, and this agent has no `check`",
        ),
        (
            f'agent(prompt: "a", output_schema: {SCHEMA}, check: "{{$1}}")',
            '"{$1}"',
            "E303 `check` names a tool: it takes the tool's name as a string",
        ),
        (
            'agent(prompt: "a", output_schema: {type: "object", properties: {summary: {type: "string"}}}, '
            'check: "cites_incident")',
            '"cites_incident"',
            "E303 the check `cites_incident` needs `severity`, which the output schema does not require",
        ),
    ],
)
def test_a_check_that_cannot_work_is_refused_at_check_time(project, text, needle, message):
    result = check(project, text)
    assert result.exit_code == 1 and f"{at(text, needle)}: {message}" in result.output, result.output


# --- the agent step as specified


def test_a_schema_mismatch_goes_to_the_repair_role_and_uses_no_round(project, model_server):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + f'\n[models.repair]\nbase_url = "{model_server.url}"\nmodel = "fixer"\n')
    model_server.reply(json.dumps({"severity": "high"}))
    model_server.reply(answer("high", "disk full"))
    result = run(
        project, f'agent(prompt: "Triage", output_schema: {SCHEMA}, max_iterations: 1, system_prompt: "You triage incidents.")'
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["iterations"] == 1 and json.loads(result.stdout)["final"] is True
    chat, repair = model_server.bodies()
    assert (chat["model"], repair["model"]) == ("planc-test-model", "fixer")
    assert chat["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT + "\n\nYou triage incidents."}
    recorded = json.loads(invoke("show-run", run_id(result), "--format", "json").stdout)
    assert [call["tool"] for call in recorded["calls"]] == ["model:chat", "model:repair"]


def test_a_transient_model_failure_is_tried_again_and_uses_no_round(project, model_server):
    model_server.play("bad_gateway.html", status=503, headers={"Retry-After": "0"})
    model_server.play("error_invalid_api_key", status=429, headers={"Retry-After": "0"})
    model_server.reply(answer("high", "disk full"))
    result = run(project, f'agent(prompt: "Triage", output_schema: {SCHEMA}, max_iterations: 1)')
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["iterations"] == 1 and len(model_server.requests) == 3
    recorded = json.loads(invoke("show-run", run_id(result), "--format", "json").stdout)
    assert [(call["tool"], call["outcome"]) for call in recorded["calls"]] == [("model:chat", "ok")]


def test_tools_called_says_which_tool_in_which_round(project, model_server):
    model_server.play("tool_call_search", "tool_call_search")
    model_server.reply(answer("high", "INC-7"))
    result = run(project, f'agent(prompt: "Triage", output_schema: {SCHEMA}, tools: ["search"])')
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tools_called"] == [{"tool": "search", "round": 1}, {"tool": "search", "round": 2}]
    assert len(calls(project)) == 2


INNER = 'filter(over: ["disk", "memory"], infer: "Is {item} urgent?")\n'
CALLS_INNER = f'agent(prompt: "Triage", output_schema: {SCHEMA}, tools: ["plan__inner"], max_iterations: 2)\n'


def declare_inner(project, text: str = INNER) -> None:
    (project / "inner.plan").write_text(text, encoding="utf-8")
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + '\n[plans.inner]\nfile = "inner.plan"\n', encoding="utf-8")


def test_an_agent_that_calls_a_declared_plan_counts_the_plans_inferences(project, model_server):
    declare_inner(project)
    (project / "p.plan").write_text(CALLS_INNER, encoding="utf-8")
    refused = invoke("check", "p.plan", "--max-inferences", "3", "--format", "line")
    assert refused.exit_code == 1, refused.output
    assert (
        "p.plan:1:1: E401 over budget: the plan may make up to 7 model inferences, and `--max-inferences` is 3" in refused.output
    )
    assert invoke("check", "p.plan", "--max-inferences", "7").exit_code == 0
    refused_run = invoke("run", "p.plan", "--max-inferences", "3")
    assert refused_run.exit_code == 1 and "E401" in refused_run.output and model_server.requests == []

    model_server.call("plan__inner", {})
    model_server.reply("yes")
    model_server.reply("no")
    model_server.reply(answer("high", "disk"))
    result = run(project, CALLS_INNER)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tools_called"] == [{"tool": "plan__inner", "round": 1}]
    recorded = json.loads(invoke("show-run", run_id(result), "--format", "json").stdout)
    assert [(call["step"], call["tool"]) for call in recorded["calls"]] == [
        ("1", "model:chat"),
        ("1/agent.1/plan__inner/1[0]", "model:judge"),
        ("1/agent.1/plan__inner/1[1]", "model:judge"),
        ("1", "model:chat"),
    ]  # 4 inferences, within 1 to 7


def test_an_agent_in_a_declared_plan_that_may_call_that_plan_is_a_cycle(project, model_server):
    declare_inner(project, f'agent(prompt: "Go deeper", output_schema: {SCHEMA})\n')
    result = check(project, "plan__inner()")
    assert result.exit_code == 1
    assert "p.plan:1:1: E210 calling `plan__inner` never ends: inner -> inner" in result.output, result.output
    named = check(project, CALLS_INNER)  # an agent offered it: the plan cannot run, and is not offered
    assert "E210" not in named.output


def test_a_declared_plan_run_itself_is_held_to_its_returns_at_its_finish(project, model_server):
    (project / "report.plan").write_text('search(query: "disk", limit: 2)\nreshape(value: {count: $1.length})\n')
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text() + '\n[plans.report]\nfile = "report.plan"\n'
        'returns = { type = "object", required = ["count"], properties = { count = { type = "string" } } }\n'
    )
    result = invoke("run", "report.plan")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (
        "error: the plan's result is not what its declared `returns` allows (at count: 2 is not of type 'string')"
    )
    assert run_record(run_id(result))["status"] == "failed" and len(calls(project)) == 1
    replayed = invoke("replay", run_id(result))  # as it ran: the same failure, from the record
    assert replayed.exit_code == 1 and replayed.stderr.splitlines()[-1] == result.stderr.splitlines()[-1]

    toml.write_text(toml.read_text().replace('count = { type = "string" }', 'count = { type = "integer" }'))
    conforming = invoke("run", "report.plan")
    assert conforming.exit_code == 0 and json.loads(conforming.stdout) == {"count": 2}


def test_the_turns_of_one_conversation_keep_their_order_under_the_optimizer(project):
    text = (
        f'a = agent(prompt: "a", output_schema: {SCHEMA}, tools: ["search"])\n'
        f'b = agent(prompt: "b", output_schema: {SCHEMA}, continue: $a)\n'
        f'c = agent(prompt: "c", output_schema: {SCHEMA}, continue: $a)\n'
        f'd = agent(prompt: "d", output_schema: {SCHEMA}, tools: ["search"])\n'
    )

    checked = planc.check(text, registry=load_registry(project / "planc.toml"))
    waves = [[checked.resolution.paths[step] for step in wave] for wave in optimize(checked).schedule.waves()]
    assert waves == [["1"], ["2"], ["3"], ["4"]]  # `d` reads nothing, but `c` keeps its place before it
    alone = planc.check(text.replace("continue: $a", 'tools: ["search"]'), registry=load_registry(project / "planc.toml"))
    assert [len(wave) for wave in optimize(alone).schedule.waves()] == [4]  # read-only agents on their own: at once
