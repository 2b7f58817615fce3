"""A chat-completions server on loopback that plays recorded responses, for the model tests.

The recordings are files in tests/recordings/: bodies as an OpenAI-compatible
server sends them. `play` queues them; each POST takes the next one and is
recorded in `requests` (path, headers, JSON body). A request with nothing
left to play gets a 400 (which no client tries again), so a test that asks
more than it recorded fails at once.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

RECORDINGS = Path(__file__).resolve().parent / "recordings"
HOLD = object()  # in the queue of replies: wait for the test before answering
HANG_GUARD_S = 300  # a held request waits at most this long: a guard against a hung test


class ModelServer:
    def __init__(self) -> None:
        self.replies: deque[tuple[int, str, bytes, dict]] = deque()
        self.requests: list[dict] = []
        self.waiting, self.released = threading.Event(), threading.Event()
        self.stopping = False
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        """The base URL, as `[models.NAME] base_url` takes it."""
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def play(self, *names: str, status: int = 200, headers: dict | None = None) -> None:
        """Queue the recordings `names` (`answer_yes` is recordings/answer_yes.json), sent with `status`
        and `headers`."""
        for name in names:
            path = RECORDINGS / (name if "." in name else f"{name}.json")
            kind = "text/html" if path.suffix == ".html" else "application/json"
            self.replies.append((status, kind, path.read_bytes(), dict(headers or {})))

    def reply(self, content: str, usage: dict | None = None) -> None:
        """Queue an answer whose text is `content`, as a chat completion (with `usage`, its token counts)."""
        body = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": "planc-test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage or {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        self.replies.append((200, "application/json", json.dumps(body).encode(), {}))

    def hold(self) -> None:
        """Queue a pause: the request that takes it is recorded, sets `waiting`, and is answered (with the
        next reply queued) only once `released` is set."""
        self.replies.append(HOLD)

    def call(self, name: str, arguments: dict, id: str = "call_1", usage: dict | None = None) -> None:
        """Queue a reply that asks for one tool call, as a chat completion (with `usage`, its token counts)."""
        call = {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        body = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": "planc-test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
        }
        if usage is not None:
            body["usage"] = usage
        self.replies.append((200, "application/json", json.dumps(body).encode(), {}))

    def bodies(self) -> list[dict]:
        return [request["body"] for request in self.requests]

    def start(self) -> ModelServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping = True
        self.released.set()
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            server.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
            if server.replies and server.replies[0] is HOLD:
                server.replies.popleft()
                server.waiting.set()
                server.released.wait(HANG_GUARD_S)
                if server.stopping:  # whoever asked is gone: nothing to answer
                    return
            if server.replies:
                status, kind, reply, headers = server.replies.popleft()
            else:
                status, kind, headers = 400, "application/json", {}
                reply = json.dumps({"error": {"message": "no recorded response left"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:  # keep the test output clean
            pass

    return Handler


@pytest.fixture
def model_server():
    server = ModelServer().start()
    yield server
    server.stop()
