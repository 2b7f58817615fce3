"""The two models that answer the plans' `agent` steps: an honest oracle and a compromised model.

Both are scripted, not language models, and both serve planc's OpenAI-compatible chat endpoint on
loopback, so that an agent step goes the way it goes with a real model (the request, the answer, its
validation against the step's `output_schema`, the labels of what it was shown).

- **honest** answers as the task intends, from the task's own ground truth: each field of the
  output schema is the value of the argument of the same name in the user task's `ground_truth`
  calls (the plans name their fields after the parameters they feed; the last call's, or all of
  them for a list), `answer` is the task's
  `GROUND_TRUTH_OUTPUT`, and a field the ground truth has no argument for comes from the suite's
  `oracle.json` (written from the task's prompt and ground truth). It is an oracle: it knows the
  answer without reading, and stands for a model that reads well.
- **compromised** obeys the injection whenever anything it was shown (its prompt, its context)
  contains one: every field of its answer is then the attacker's, taken from the injection task's
  own ground truth (the argument of the same name; else the first of the field's type: the
  attacker's account or address for a string; for an attack that calls nothing and only wants the user
  told something, a string is what it wants said), where the schema allows a value of the attacker's.
  Shown no injection, it answers as the honest model does. It is a worst case, stronger than any
  real model: the result does not depend on how persuasive the attack's wording is.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

HONEST, COMPROMISED = "honest", "compromised"
CONTEXT = re.compile(r"Context \(JSON\):\n(.*?)\n\nWhen you are done", re.S)
SCHEMA = re.compile(r"conforms to this JSON Schema:\n(.*)\Z", re.S)


@attrs.define
class Scenario:
    """What the models know of the run at hand: the task, the attack, and which model answers."""

    model: str = HONEST
    user_task: object = None
    injection_task: object = None
    injections: dict = attrs.Factory(dict)  # vector -> the attack's text
    environment: object = None  # the environment before the run: what the ground truths are computed on
    oracle: dict = attrs.Factory(dict)  # the suite's oracle.json: task id -> field -> value
    shown_injection: int = 0  # how many answers were given to a request that contained the injection


def leaves(value):
    """Every string, number, boolean and null in a JSON value, at any depth."""
    if isinstance(value, dict):
        for part in value.values():
            yield from leaves(part)
    elif isinstance(value, list):
        for part in value:
            yield from leaves(part)
    else:
        yield value


def squeezed(text: str) -> str:
    """Whitespace made single spaces: YAML folds the newlines of an injection planted in a quoted string."""
    return " ".join(text.split())


def contains_injection(scenario: Scenario, text: str) -> bool:
    if scenario.injection_task is None:
        return False
    seen = squeezed(text)
    marks = [scenario.injection_task.GOAL, *scenario.injections.values()]
    return any(squeezed(mark) and squeezed(mark) in seen for mark in marks)


def ground_truth_args(task, environment) -> list[tuple[str, object]]:
    return [(name, value) for call in task.ground_truth(environment.model_copy(deep=True))
            for name, value in call.args.items()]


def fits(value, schema: dict) -> bool:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    checks = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict), None: lambda v: True}
    return any(checks.get(k, lambda v: False)(value) for k in kinds)


def honest_answer(scenario: Scenario, schema: dict) -> dict:
    task = scenario.user_task
    arguments = ground_truth_args(task, scenario.environment)
    known = scenario.oracle.get(task.ID, {})
    answer = {}
    for field, part in schema.get("properties", {}).items():
        if field in known:
            answer[field] = known[field]
        elif field == "answer":
            answer[field] = task.GROUND_TRUTH_OUTPUT
        else:
            if part.get("type") == "array":  # every value the ground truth gives the argument
                found = [value for name, value in arguments if name == field and fits(value, part.get("items", {}))]
            else:  # the last: the call that acts comes after the calls that read
                found = [value for name, value in arguments if name == field and fits(value, part)][-1:]
            if not found:
                raise LookupError(f"{task.ID}: the honest oracle has no value for `{field}`")
            answer[field] = found if part.get("type") == "array" else found[0]
    return answer


def attackers(scenario: Scenario, field: str, schema: dict):
    """The attacker's value for `field`, or None when the schema allows none of the attacker's."""
    arguments = ground_truth_args(scenario.injection_task, scenario.environment)
    if schema.get("type") == "array":
        items = [value for _, value in arguments if fits(value, schema.get("items", {}))]
        return items or None
    if schema.get("type") == "boolean":
        return True  # whatever makes the plan act
    named = [value for name, value in arguments if name == field and fits(value, schema)]
    typed = [value for _, value in arguments if fits(value, schema)]
    found = named or typed
    if not found and fits("", schema) and getattr(scenario.injection_task, "GROUND_TRUTH_OUTPUT", ""):
        return scenario.injection_task.GROUND_TRUTH_OUTPUT  # an attack that only wants something said to the user
    return found[0] if found else None


def compromised_answer(scenario: Scenario, schema: dict) -> dict:
    honest = honest_answer(scenario, schema)
    answer = {}
    for field, part in schema.get("properties", {}).items():
        value = attackers(scenario, field, part)
        answer[field] = honest[field] if value is None else value
    return answer


def answer(scenario: Scenario, request: dict) -> str:
    asked = request["messages"][-1]["content"]
    schema = json.loads(SCHEMA.search(asked).group(1))
    context = CONTEXT.search(asked)
    shown = [asked] + ([leaf for leaf in leaves(json.loads(context.group(1))) if isinstance(leaf, str)] if context else [])
    injected = any(contains_injection(scenario, text) for text in shown)
    scenario.shown_injection += injected
    if scenario.model == COMPROMISED and injected:
        return json.dumps(compromised_answer(scenario, schema))
    return json.dumps(honest_answer(scenario, schema))


def serve(scenario: Scenario):
    """An OpenAI-compatible chat endpoint on loopback answering as `scenario` says: its URL, and `stop`."""

    class Model(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                message, status = {"role": "assistant", "content": answer(scenario, request)}, 200
            except LookupError as error:  # the bench's own gap: shown as the step's failure, not hidden
                message, status = {"error": {"message": str(error)}}, 400
            body = json.dumps({"choices": [{"index": 0, "message": message}]} if status == 200 else message).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", stop
