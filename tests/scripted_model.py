"""A chat-completions server on loopback whose every answer is a pure function of the conversation
it is sent.

The non-interference properties (test_noninterference.py) run one plan in two worlds and compare
what the runs did: a model that answered from a queue, or at random, would tell the runs apart by
itself. This one reads the whole request and answers from it alone, copying words and numbers out of
the conversation into its tool calls and answers, so that what a tool returned (or the error it
raised) reaches what the model says next, as it would with a real model that an attacker's text
steers:

- a yes/no question (`infer`) is answered yes or no by a digest of the question;
- an agent is asked for a tool call in its first rounds while it is offered tools: the tool, and the
  word or number each argument gets, chosen by a digest of the conversation, from the last message;
- otherwise the answer is `{"to": WORD, "amount": NUMBER, "ok": BOOLEAN}`, copied the same way.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

YES_NO = "Answer the question with one word: yes or no."
TOOL_ROUNDS = 3  # an agent calls tools in its first rounds, then answers
WORDS = re.compile(r"[^\W\d_]+", re.UNICODE)
NUMBERS = re.compile(r"\d+")
KEYS = re.compile(r'"[^"]*"\s*:')


def digest(value: object) -> int:
    return int(
        hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12],
        16,
    )


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _copied(messages: list[dict], kind: str, salt: str) -> str | int:
    """A word (`kind` "string") or number from the last message that has one, chosen by a digest of
    the whole conversation and `salt`; a constant where none has any."""
    pattern = WORDS if kind == "string" else NUMBERS
    for message in reversed(messages):
        values = KEYS.sub(" ", _text(message))  # a JSON text's values, not its keys, which every world shares
        found = [word for word in pattern.findall(values) if word not in ("true", "false", "null")]
        if found:
            chosen = found[digest([messages, salt]) % len(found)]
            return chosen if kind == "string" else int(chosen) % 1000
    return "nobody" if kind == "string" else 0


def answer(body: dict) -> dict:
    """The chat completion for request `body`: the message the model sends back."""
    messages = body.get("messages", [])
    if messages and messages[0].get("content") == YES_NO:
        return {"role": "assistant", "content": "yes" if digest(messages) % 2 else "no"}
    tools = body.get("tools") or []
    rounds = sum(1 for message in messages if message.get("role") == "assistant")
    if tools and rounds < TOOL_ROUNDS:
        tool = tools[digest(messages) % len(tools)]["function"]
        properties = tool.get("parameters", {}).get("properties", {})
        arguments = {
            name: _copied(
                messages,
                "integer" if schema.get("type") in ("integer", "number") else "string",
                name,
            )
            for name, schema in properties.items()
        }
        call = {
            "id": f"call_{rounds + 1}",
            "type": "function",
            "function": {
                "name": tool["name"],
                "arguments": json.dumps(arguments, ensure_ascii=False),
            },
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    said = {
        "to": _copied(messages, "string", "to"),
        "amount": _copied(messages, "integer", "amount"),
        "ok": digest(messages) % 3 == 0,
    }
    return {"role": "assistant", "content": json.dumps(said, ensure_ascii=False)}


class ScriptedModel:
    """The server: `url` is what `[models.NAME] base_url` takes; `requests` counts what it answered."""

    def __init__(self) -> None:
        self.requests = 0
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def start(self) -> ScriptedModel:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


def _handler(server: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            server.requests += 1
            message = answer(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            reply = json.dumps(
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "model": "scripted",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
