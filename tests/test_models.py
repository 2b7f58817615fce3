"""The model client and the agent loop, against a real chat-completions server on loopback.

Nothing of httpx is mocked: the client sends real HTTP to `tests/model_server.py`,
which plays the recordings in tests/recordings/ and keeps what it was sent.
"""

import asyncio
import json
import socket
from pathlib import Path

import pytest
from model_server import ModelServer, model_server  # noqa: F401  (the fixture)

from planc.backend.models.agent_loop import SYSTEM_PROMPT, ToolFailure, Turn, ask_yes_no, run_agent, system_message
from planc.backend.models.client import ModelClient, ModelError, ToolCall
from planc.registry.loading.config import ConfigError, registry_from_text
from planc.registry.tools.tool import Tool

SEARCH = Tool(
    "search",
    description="Full-text search over incidents",
    required=("query",),
    params={"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "default": 20}},
)
GET = Tool("get_incident", params={"id": {"type": "string"}}, required=("id",))
COUNT = Tool("count", params={"query": {"type": "string"}})
TRIAGE = {
    "type": "object",
    "required": ["severity", "summary"],
    "properties": {"severity": {"enum": ["low", "high"]}, "summary": {"type": "string"}},
}


def registry(text: str):
    return registry_from_text(text, Path("planc.toml"))


def client(server, role: str = "chat", extra: str = "") -> ModelClient:
    return ModelClient.for_role(registry(f'[models.default]\nbase_url = "{server.url}"\nmodel = "test-model"\n{extra}'), role)


def run(coroutine_function):
    """Run `coroutine_function(client)` with a client of the loopback server, closing it after."""

    async def main(server):
        async with client(server) as model:
            return await coroutine_function(model)

    return main


def agent(server, *recordings, tools=(SEARCH,), call_tool=None, system_prompt=None, repair_role=True, **options):
    """Run an agent turn against `server` playing `recordings`; with `repair_role`, the `repair` role is the
    same server's model `repair-model`."""
    server.play(*recordings)
    calls = []

    async def record(name, arguments, call_id):
        calls.append((name, arguments))
        return await call_tool(name, arguments, call_id) if call_tool else [{"id": "INC-7", "title": "Disk full on db-1"}]

    async def main(model):
        turn = Turn("Triage the incident.", TRIAGE, list(tools), **options)
        repairer = (
            client(server, "repair", extra='[models.repair]\nbase_url = "' + server.url + '"\nmodel = "repair-model"\n')
            if repair_role
            else None
        )
        try:
            return await run_agent(model, turn, record, [system_message(system_prompt)], repairer)
        finally:
            if repairer is not None:
                await repairer.aclose()

    return asyncio.run(run(main)(server)), calls


# --- the client


def test_a_role_takes_its_own_table_else_the_default(model_server):
    text = (
        f'[models.default]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "small"\n'
        f'[models.chat]\nbase_url = "{model_server.url}"\nmodel = "large"\ntimeout_s = 5\n'
    )
    chat, judge = ModelClient.for_role(registry(text), "chat"), ModelClient.for_role(registry(text), "judge")
    assert (chat.config.name, chat.config.model, chat.config.timeout_s) == ("chat", "large", 5.0)
    assert (judge.config.name, judge.config.model) == ("default", "small")
    assert chat.endpoint == f"{model_server.url}/chat/completions"


def test_a_role_without_a_table_or_a_default_is_an_error_naming_it():
    with pytest.raises(
        ModelError,
        match=r"no model for the role `judge`: planc.toml has neither \[models.judge\] "
        r"nor \[models.default\]",
    ):
        ModelClient.for_role(registry('[models.chat]\nbase_url = "http://x/v1"\nmodel = "m"\n'), "judge")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('model = "m"', r"planc.toml:1: model `default` needs `base_url`"),
        ('base_url = "http://x/v1"', r"planc.toml:1: model `default` needs `model`"),
        (
            'base_url = "127.0.0.1:8000/v1"\nmodel = "m"',
            r"planc.toml:2: `base_url` of model `default` must be an http:// or https:// URL, found '127.0.0.1:8000/v1'",
        ),
        ('base_url = 5\nmodel = "m"', r"planc.toml:2: `base_url` of model `default` must be a string, not int"),
        (
            'provider = "anthropic"\nbase_url = "http://x/v1"\nmodel = "m"',
            r"planc.toml:2: `provider = 'anthropic'` of model `default` is not supported",
        ),
        (
            'base_url = "http://x/v1"\nmodel = "m"\ntimeout_s = 0',
            r"planc.toml:4: `timeout_s` must be a number of seconds above 0",
        ),
        (
            'base_ur = "http://x/v1"\nmodel = "m"',
            r"planc.toml:2: unknown key `base_ur` in model `default`; did you mean `base_url`\?",
        ),
    ],
)
def test_a_model_table_that_cannot_work_is_refused_when_planc_toml_is_loaded(table, message):
    with pytest.raises(ConfigError, match=message):
        registry(f"[models.default]\n{table}\n")


def test_an_api_key_variable_that_is_not_set_is_an_error_naming_it():
    text = '[models.default]\nbase_url = "http://x/v1"\nmodel = "m"\napi_key_env = "PLANC_TEST_UNSET_KEY"\n'
    with pytest.raises(ModelError, match="PLANC_TEST_UNSET_KEY .* is not set"):
        ModelClient.for_role(registry(text), "chat")


def test_the_request_is_an_openai_chat_completion(model_server, monkeypatch):
    monkeypatch.setenv("PLANC_TEST_KEY", "sk-loopback")
    model_server.play("answer_hello")
    messages = [{"role": "user", "content": "Say hello."}]

    async def main():
        async with client(model_server, extra='api_key_env = "PLANC_TEST_KEY"') as model:
            return await model.chat(messages, tools=[SEARCH], response_format={"type": "json_object"})

    reply = asyncio.run(main())
    assert (reply.content, reply.tool_calls) == ("Hello from the loopback model.", ())
    assert reply.usage == {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    [request] = model_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-loopback"
    assert request["body"] == {
        "model": "test-model",
        "messages": messages,
        "response_format": {"type": "json_object"},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "description": "Full-text search over incidents",
                    "parameters": {
                        "type": "object",
                        "required": ["query"],
                        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "default": 20}},
                    },
                },
            }
        ],
    }


def test_without_tools_or_a_key_the_request_has_neither(model_server):
    model_server.play("answer_hello")
    asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "hi"}]))(model_server))
    [request] = model_server.requests
    assert set(request["body"]) == {"model", "messages"}
    assert "Authorization" not in request["headers"]


def test_tool_calls_are_parsed(model_server):
    model_server.play("tool_call_two")
    reply = asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}], tools=[GET, COUNT]))(model_server))
    assert reply.content is None
    assert [(call.id, call.name, call.arguments, call.error) for call in reply.tool_calls] == [
        ("call_get_1", "get_incident", {"id": "INC-7"}, None),
        ("call_count_1", "count", {"query": "disk"}, None),
    ]
    assert reply.message()["tool_calls"][0] == {
        "id": "call_get_1",
        "type": "function",
        "function": {"name": "get_incident", "arguments": '{"id": "INC-7"}'},
    }


def test_tool_call_arguments_that_are_not_json_are_reported_not_raised(model_server):
    model_server.play("tool_call_malformed")
    reply = asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}], tools=[SEARCH]))(model_server))
    [call] = reply.tool_calls
    assert isinstance(call, ToolCall) and (call.name, call.arguments) == ("search", {})
    assert call.error.startswith("the arguments are not JSON (") and "{query: 'disk full', limit: 3" in call.error


def test_an_http_error_is_a_model_error_with_the_status_endpoint_and_message(model_server):
    model_server.play("error_invalid_api_key", status=401)
    with pytest.raises(ModelError) as error:
        asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}]))(model_server))
    assert str(error.value) == (
        f"{model_server.url}/chat/completions answered HTTP 401: Incorrect API key provided: "
        "sk-test. You can find your API key at your provider's dashboard."
    )


def test_an_error_page_that_is_not_json_is_quoted(model_server):
    model_server.play("bad_gateway.html", status=502)

    async def main():
        async with client(model_server, extra="retries = 0") as model:
            return await model.chat([{"role": "user", "content": "x"}])

    with pytest.raises(ModelError, match=r"answered HTTP 502: <html><head><title>502 Bad Gateway"):
        asyncio.run(main())
    assert len(model_server.requests) == 1


@pytest.fixture
def waits(monkeypatch):
    """The waits between attempts, kept instead of slept."""
    from planc.backend.models import client

    waited = []

    async def pause(seconds):
        waited.append(seconds)

    monkeypatch.setattr(client, "pause", pause)
    return waited


def test_a_transient_failure_is_tried_again_after_the_wait_the_server_asks_for(model_server, waits):
    model_server.play("bad_gateway.html", status=503, headers={"Retry-After": "7"})
    model_server.play("error_invalid_api_key", status=429)
    model_server.play("answer_hello")
    reply = asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "Say hello."}]))(model_server))
    assert reply.content == "Hello from the loopback model."
    assert waits == [7.0, 1.0] and len(model_server.requests) == 3  # Retry-After, then the doubled backoff


def test_retries_are_bounded_and_the_last_failure_is_said(model_server, waits):
    model_server.play(*["bad_gateway.html"] * 4, status=503)
    with pytest.raises(ModelError, match=r"answered HTTP 503: .* \(after 4 attempts\)"):
        asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}]))(model_server))
    assert waits == [0.5, 1.0, 2.0] and len(model_server.requests) == 4


def test_a_client_error_is_not_tried_again(model_server, waits):
    model_server.play("error_invalid_api_key", status=401)
    with pytest.raises(ModelError, match="HTTP 401"):
        asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}]))(model_server))
    assert waits == [] and len(model_server.requests) == 1


def test_a_body_that_is_not_a_chat_completion_is_a_model_error(model_server):
    model_server.play("error_no_choices")
    with pytest.raises(ModelError, match=r"not a chat completion \(no choices\[0\].message"):
        asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}]))(model_server))


def test_an_unreachable_server_is_a_model_error():
    closed = ModelServer()
    closed.http.server_close()  # the port is free again: nothing listens there
    with pytest.raises(ModelError, match=rf"cannot reach {closed.url}/chat/completions: "):
        asyncio.run(run(lambda model: model.chat([{"role": "user", "content": "x"}]))(closed))


def test_a_server_that_does_not_answer_in_timeout_s_is_a_model_error(waits):
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        model = ModelClient.for_role(
            registry(f'[models.judge]\nbase_url = "{url}"\nmodel = "m"\ntimeout_s = 0.2\nretries = 1\n'), "judge"
        )

        async def main():
            async with model:
                await model.chat([{"role": "user", "content": "x"}])

        with pytest.raises(
            ModelError,
            match=r"did not answer within 0.2 s \(`timeout_s` of \[models.judge\]\) "
            r"\(after 2 attempts\)",
        ):
            asyncio.run(main())
    assert waits == [0.5]


# --- the agent loop


def test_a_tool_call_goes_to_the_callback_and_its_result_back_to_the_model(model_server):
    result, calls = agent(model_server, "tool_call_search", "answer_triage")
    assert result == {
        "output": {"severity": "high", "summary": "Disk full on db-1"},
        "iterations": 2,
        "tools_called": [{"tool": "search", "round": 1}],
        "final": True,
    }
    assert calls == [("search", {"query": "disk full", "limit": 3})]
    first, second = model_server.bodies()
    assert [tool["function"]["name"] for tool in first["tools"]] == ["search"]
    assert first["messages"][1]["content"].startswith("Triage the incident.\n\nWhen you are done, answer with only a JSON")
    assert json.dumps(TRIAGE) in first["messages"][1]["content"]
    assert second["messages"][2]["tool_calls"][0]["id"] == "call_search_1"
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_search_1",
        "content": json.dumps([{"id": "INC-7", "title": "Disk full on db-1"}]),
    }


def test_the_context_is_sent_and_the_system_prompt_is_added_to_the_built_in_one(model_server):
    agent(model_server, "answer_triage", context={"id": "INC-7"}, system_prompt="You triage incidents.")
    [body] = model_server.bodies()
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT + "\n\nYou triage incidents."}
    assert 'Context (JSON):\n{"id": "INC-7"}' in body["messages"][1]["content"]


def test_a_tool_failure_goes_back_as_an_error_result(model_server):
    async def failing(name, arguments, call_id):
        raise ToolFailure("the index is being rebuilt")

    result, calls = agent(model_server, "tool_call_search", "answer_triage", call_tool=failing)
    assert result["final"] is True and result["tools_called"] == [{"tool": "search", "round": 1}]
    assert model_server.bodies()[1]["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_search_1",
        "content": json.dumps({"error": "`search` failed: the index is being rebuilt"}),
    }


def test_any_other_exception_of_the_callback_stops_the_agent(model_server):
    async def aborting(name, arguments, call_id):
        raise RuntimeError("the gate aborted the run")

    with pytest.raises(RuntimeError, match="the gate aborted the run"):
        agent(model_server, "tool_call_search", "answer_triage", call_tool=aborting)
    assert len(model_server.requests) == 1


def test_calls_the_agent_cannot_make_are_errors_and_not_dispatched(model_server):
    result, calls = agent(model_server, "tool_call_unknown", "tool_call_malformed", "answer_triage")
    assert calls == [] and result["tools_called"] == [] and result["final"] is True
    unknown, malformed = (body["messages"][-1] for body in model_server.bodies()[1:])
    assert json.loads(unknown["content"]) == {"error": "there is no tool `delete_everything`; the tools are search"}
    assert json.loads(malformed["content"])["error"].startswith("`search` was not called: the arguments are not JSON")


def test_tool_calls_are_at_most_max_iterations_in_all(model_server):
    result, calls = agent(model_server, "tool_call_two", "tool_call_two", "answer_triage", tools=(GET, COUNT), max_iterations=3)
    assert result["final"] is True and result["tools_called"] == [
        {"tool": "get_incident", "round": 1},
        {"tool": "count", "round": 1},
        {"tool": "get_incident", "round": 2},
    ]
    assert json.loads(model_server.bodies()[2]["messages"][-2]["content"]) == {
        "error": "`count` was not called: this agent may make 3 tool calls and made them all"
    }


def test_a_schema_mismatch_goes_to_the_repair_role_and_uses_no_round(model_server):
    result, _ = agent(model_server, "answer_triage_wrong", "answer_triage", max_iterations=1)
    assert result == {
        "output": {"severity": "high", "summary": "Disk full on db-1"},
        "iterations": 1,
        "tools_called": [],
        "final": True,
    }
    first, repair = model_server.bodies()
    assert (first["model"], repair["model"]) == ("test-model", "repair-model")
    assert [m["role"] for m in repair["messages"]] == ["system", "user"] and "tools" not in repair
    asked = repair["messages"][1]["content"]
    assert asked.startswith("The JSON Schema:\n" + json.dumps(TRIAGE)) and '{"severity": "urgent"}' in asked
    assert asked.endswith(
        "What does not conform:\n- at $.severity: 'urgent' is not one of ['low', 'high']\n"
        "- at $: 'summary' is a required property"
    )


def test_a_mismatch_the_repair_role_cannot_fix_goes_back_to_the_agent_and_costs_a_round(model_server):
    result, _ = agent(model_server, "answer_triage_wrong", "answer_triage_wrong", "answer_triage")
    assert result == {
        "output": {"severity": "high", "summary": "Disk full on db-1"},
        "iterations": 2,
        "tools_called": [],
        "final": True,
    }
    models = [body["model"] for body in model_server.bodies()]
    assert models == ["test-model", "repair-model", "test-model"]  # the fix-up is tried once
    correction = model_server.bodies()[2]["messages"][-1]
    assert correction["role"] == "user" and correction["content"].startswith(
        "Your answer does not conform to the output schema:\n- at $.severity: 'urgent' is not one of"
    )


def test_mismatches_until_the_budget_runs_out_end_without_output(model_server):
    result, _ = agent(model_server, "answer_triage_wrong", "answer_triage_wrong", "answer_triage_wrong", max_iterations=2)
    assert result == {"output": {}, "iterations": 2, "tools_called": [], "final": False}
    assert len(model_server.requests) == 3


def test_a_malformed_answer_costs_a_round(model_server):
    result, _ = agent(model_server, "answer_prose", "answer_triage_fenced")
    assert result == {"output": {"severity": "low", "summary": "Stale cache"}, "iterations": 2, "tools_called": [], "final": True}
    correction = model_server.bodies()[1]["messages"][-1]["content"]
    assert correction.startswith("Your answer is not JSON (Expecting value") and "The incident looks severe" in correction


def test_when_the_budget_runs_out_the_output_is_empty_and_not_final(model_server):
    result, _ = agent(model_server, "answer_prose", "answer_prose", max_iterations=2)
    assert result == {"output": {}, "iterations": 2, "tools_called": [], "final": False}
    assert len(model_server.requests) == 2


def test_the_last_round_offers_no_tools_and_its_calls_are_not_made(model_server):
    result, calls = agent(model_server, "tool_call_search", "tool_call_search", max_iterations=2)
    assert result == {"output": {}, "iterations": 2, "tools_called": [{"tool": "search", "round": 1}], "final": False}
    assert len(calls) == 1
    first, last = model_server.bodies()
    assert "tools" in first and "tools" not in last
    assert last["messages"][-1]["content"].startswith("This is your last round and no tools are left: answer now.")


# --- infer


@pytest.mark.parametrize(("recording", "answer"), [("answer_yes", True), ("answer_no", False)])
def test_ask_yes_no(model_server, recording, answer):
    model_server.play(recording)
    assert asyncio.run(run(lambda model: ask_yes_no(model, "Is INC-7 urgent?"))(model_server)) is answer
    assert model_server.bodies()[0]["messages"][-1] == {"role": "user", "content": "Is INC-7 urgent?"}


def test_an_answer_other_than_yes_or_no_is_an_error_naming_it(model_server):
    model_server.play("answer_maybe")
    with pytest.raises(
        ModelError,
        match=r"the model answered 'Probably yes, since the outage lasted over an hour.' "
        r"to the yes/no question 'Is INC-7 urgent\?': only yes or no is an answer",
    ):
        asyncio.run(run(lambda model: ask_yes_no(model, "Is INC-7 urgent?"))(model_server))


def test_a_repair_turn_adds_a_round_even_when_the_rounds_are_used_up(model_server):
    checked = []

    async def check(answer):
        checked.append(answer["summary"])
        return [] if len(checked) == 2 else ["name the host"]

    result, _ = agent(
        model_server, "answer_triage_fenced", "answer_triage", max_iterations=1, check=check, check_name="names_host", repairs=1
    )
    assert result == {
        "output": {"severity": "high", "summary": "Disk full on db-1"},
        "iterations": 2,
        "tools_called": [],
        "final": True,
    }
    assert checked == ["Stale cache", "Disk full on db-1"]
    assert "tools" not in model_server.bodies()[1]  # the repair round is the last: it offers no tools
