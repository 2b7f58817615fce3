"""The model's half of the loop, on the embedded example, with a scripted model on loopback.

    python examples/incidents/plan_demo.py

A stand-in for a model answers the planner's two requests as models often do: first with prose
around a plan that has two mistakes (a misspelled parameter, a word without its quotes), then,
given planc's repair message, with the fixed plan. planc checks each answer against this folder's
planc.toml and policy, sends the diagnostics back, and runs the plan that checks (as checked: with
that policy). No network, no key: the "model" is a local HTTP server that plays the two answers.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs

import planc
from planc.registry.settings.declarations import ModelConfig

HERE = Path(__file__).resolve().parent
TASK = "Find the open severe disk incidents and post how many there are to #incidents."
ANSWERS = [
    """Sure. This searches for disk incidents, keeps the open severe ones and posts the count:

```
disk = search(query: "disk", limt: 50)
  |> filter(where: severity >= 3 and status == "open")
notify(channel: incidents, text: "{$2.length} open severe disk incidents")
```""",
    """```
disk = search(query: "disk", limit: 50)
  |> filter(where: severity >= 3 and status == "open")
notify(channel: "#incidents", text: "{$2.length} open severe disk incidents")
```""",
]


def serve_scripted_model(answers=ANSWERS):
    """An OpenAI-compatible chat-completions endpoint on loopback that plays `answers` in turn: its
    base URL, and the function that stops it."""
    left = list(answers)

    class ScriptedModel(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            message = {"role": "assistant", "content": left.pop(0)}
            body = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", stop


def main() -> None:
    url, stop = serve_scripted_model()
    registry = planc.load_registry(HERE / "planc.toml")
    registry = attrs.evolve(registry, models={"planner": ModelConfig("planner", url, "scripted")})
    print(f"task: {TASK}\n")
    planned = planc.plan(TASK, registry=registry, policy=planc.load_policy(registry.policy))
    stop()
    for number, round_ in enumerate(planned.rounds, start=1):
        print(f"--- round {number}: the model answered\n{round_.reply}\n")
        if round_.repair:
            print(f"--- planc sent back\n{round_.repair}")
    if not planned.ok:
        raise SystemExit("no plan checked")
    print(f"--- the checked plan\n{planned.text}")
    result = planc.run(planned.checked)
    print(f"--- it ran: {json.dumps(result.value)}")


if __name__ == "__main__":
    main()
