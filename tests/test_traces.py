"""A run's events, stamped (`--events`), and the OpenTelemetry spans made from them (`--otel`).

The spans of a run in this process go to the SDK's in-memory exporter, through the tracer provider
this module sets (`opentelemetry.trace.set_tracer_provider`: the seam a program embedding planc
uses too). A run as a process of its own sends them over OTLP/HTTP to `Collector`, a real HTTP
server on loopback that keeps each POST to /v1/traces and decodes it with OpenTelemetry's own
protobuf messages. Tests wait for a POST, a file or the process's end, never for a guessed time.
"""

from __future__ import annotations

import datetime
import json
import os
import queue
import signal
import socket
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli import HANG_GUARD_S, invoke, planc_completed
from model_server import model_server  # noqa: F401  (the fixture)
from test_attacks_store import started, wait_until
from tool_project import tool_project

from planc.store.run_store import RunStore

TOOLS = """
import json, os, time
LOG = os.environ["PLANC_TEST_CALLS"]

def _called(name, **args):
    with open(LOG, "a") as log:
        log.write(json.dumps({"tool": name, **args}) + "\\n")

def search(query, limit=3):
    _called("search", query=query, limit=limit)
    return [{"id": f"I{i}", "status": "open" if i % 2 else "resolved"} for i in range(limit)]

def fails(x):
    _called("fails", x=x)
    raise ValueError("no such thing")

def hold(x):
    _called("hold", x=x)
    while os.environ.get("PLANC_TEST_HOLD"):  # until the run is interrupted
        time.sleep(0.01)
    return x
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, default = 3 }} }}
required = ["query"]
returns = {{ type = "array", items = {{ type = "object", properties = {{ id = {{ type = "string" }}, status = {{ type = "string" }} }} }} }}
returns_at_most = "limit"
effects = {{ read_only = true }}

[tools.fails]
provider = "python:{module}:fails"
params = {{ x = {{ type = "integer" }} }}

[tools.hold]
provider = "python:{module}:hold"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
effects = {{ read_only = true }}

[plans.top]
file = "plans/top.plan"
params = {{ limit = {{ type = "integer", default = 4 }} }}
"""

TOP = 'search(query: "disk", limit: $args.limit)\n  |> filter(where: status == "open")\n'
SCHEMA = (
    '{type: "object", properties: {severity: {type: "string"}, summary: {type: "string"}}, required: ["severity", "summary"]}'
)
AGENT = f'agent(prompt: "Triage the disk alerts", output_schema: {SCHEMA}, tools: ["search"])'


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "tracetools", TOOLS, TOML, {"calls.jsonl": ""}):
        (tmp_path / "plans").mkdir()
        (tmp_path / "plans" / "top.plan").write_text(TOP, encoding="utf-8")
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.jsonl"))
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def calls(project) -> list[str]:
    return [json.loads(line)["tool"] for line in (project / "calls.jsonl").read_text().splitlines()]


def write_plan(project, text: str) -> None:
    (project / "p.plan").write_text(text, encoding="utf-8")


def run_id_of(stderr: str) -> str:
    return next(line.split()[1] for line in stderr.splitlines() if line.startswith("run: "))


def recorded(project, run_id: str) -> dict:
    store = RunStore(project / "runs.sqlite", read_only=True)
    try:
        return store.run(run_id)
    finally:
        store.close()


def event_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr


# --- the events, stamped


def test_each_event_line_has_its_time_its_run_and_its_number(project):
    write_plan(project, 'search(query: "disk", limit: 2)\nplan__top(limit: 2)\n')
    result = invoke("run", "p.plan", "--events", "events.jsonl")
    assert result.exit_code == 0, result.output
    run_id = run_id_of(result.stderr)
    events = event_lines(project / "events.jsonl")
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert {event["run"] for event in events} == {run_id}
    times = [datetime.datetime.fromisoformat(event["time"]) for event in events]
    assert all(
        event["time"].endswith("Z") and moment.utcoffset() == datetime.timedelta(0) for event, moment in zip(events, times)
    )
    assert times == sorted(times)
    assert (events[0]["event"], events[-1]["event"]) == ("run_started", "run_finished")
    # The store keeps the same events, at the same times.
    stored = recorded(project, run_id)["events"]
    assert [event["event"] for event in stored] == [event["event"] for event in events]
    assert [event["at"] for event in stored] == [moment.timestamp() for moment in times]


def test_failures_and_exits_are_events_too(project):
    write_plan(project, 'search(query: "disk", limit: 1)\nfails(x: 1)\n')
    result = invoke("run", "p.plan", "--events", "events.jsonl")
    assert result.exit_code == 1
    ended = [(event["event"], event.get("step"), event.get("error_type")) for event in event_lines(project / "events.jsonl")][-3:]
    assert ended == [("tool_failed", "2", "ToolFailed"), ("step_failed", "2", "ToolFailed"), ("run_finished", None, "ToolFailed")]
    assert calls(project) == ["search", "fails"]

    write_plan(project, 'exit(status: "error", message: "nothing to do")\n')
    result = invoke("run", "p.plan", "--events", "events.jsonl")
    assert result.exit_code == 4
    last = event_lines(project / "events.jsonl")[-2:]
    assert [(event["event"], event["status"], event["message"]) for event in last] == [
        ("step_exited", "error", "nothing to do"),
        ("run_finished", "error", "nothing to do"),
    ]


def test_a_resumed_run_numbers_its_events_on_from_the_last_one_recorded(project, spans, monkeypatch):
    write_plan(project, 'search(query: "disk", limit: 1)\nhold(x: 7)\n')
    with Collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        first = started(project, "run", "p.plan", "--events", "first.jsonl", "--otel")
        wait_until(first, "the call of hold", lambda: calls(project) == ["search", "hold"])
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=HANG_GUARD_S)
        clean(err)
        assert (first.returncode, out) == (130, "")
        interrupted = collector.spans()
    run_id = run_id_of(err)
    before = event_lines(project / "first.jsonl")
    assert before[-1]["event"] == "run_finished" and before[-1]["status"] == "interrupted"

    resumed = invoke("resume", run_id, "--events", "second.jsonl", "--otel")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == 7
    after = event_lines(project / "second.jsonl")
    numbers = [event["seq"] for event in before + after]
    assert numbers == list(range(1, len(numbers) + 1))  # no gap, no number twice, across the two processes
    assert {event["run"] for event in before + after} == {run_id}
    assert len(recorded(project, run_id)["events"]) == len(numbers)
    assert calls(project) == ["search", "hold", "hold"]  # hold is read-only: called again; search answered from the record

    # The interrupted run's spans were sent as it ended: the call it was in ended with it.
    root = next(span for span in interrupted if not span["parent"])
    assert root["attributes"]["planc.run.status"] == "interrupted" and root["status"] == "ERROR"
    assert root["attributes"]["error.type"] == "Interrupted" and root["message"] == err.splitlines()[-1][len("error: ") :]
    held = next(span for span in interrupted if span["name"] == "execute_tool hold")
    assert held["status"] == "ERROR" and held["message"] == "the run ended interrupted while this was running"
    # The resumed run is a trace of its own, under the same run id.
    [resumed_root] = [span for span in spans.get_finished_spans() if span.parent is None]
    assert resumed_root.name == f"invoke_workflow {run_id}"
    assert resumed_root.attributes["planc.run.id"] == run_id
    assert resumed_root.attributes["planc.run.status"] == "ok"


# --- spans, in this process


def tree(finished) -> list:
    """The spans as (name, [children]) from each root, children in the order they started."""
    children = defaultdict(list)
    for span in sorted(finished, key=lambda span: span.start_time):
        children[span.parent.span_id if span.parent else None].append(span)

    def shape(span):
        return (span.name, [shape(child) for child in children[span.context.span_id]])

    return [shape(root) for root in children[None]]


def named(finished, name: str) -> list:
    return [span for span in finished if span.name == name]


def test_a_run_is_a_tree_of_spans_steps_tool_calls_and_inferences(project, spans, model_server):
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text() + f'\n[models.default]\nbase_url = "{model_server.url}"\nmodel = "planc-test-model"\n', encoding="utf-8"
    )
    model_server.play("tool_call_search", "answer_triage")
    write_plan(project, f'search(query: "disk", limit: 2)\nplan__top(limit: 2)\n{AGENT}\n')
    result = invoke("run", "p.plan", "--otel")
    assert result.exit_code == 0, result.output
    run_id = run_id_of(result.stderr)
    finished = spans.get_finished_spans()
    assert tree(finished) == [
        (
            "invoke_workflow p.plan",
            [
                ("step 1 search", [("execute_tool search", [])]),
                (
                    "step 2 plan__top",
                    [
                        (
                            "execute_tool plan__top",
                            [  # the declared plan's steps, under the call of the step that runs it
                                ("step 2/1 search", [("execute_tool search", [])]),
                                ("step 2/2 filter", []),
                            ],
                        )
                    ],
                ),
                (
                    "step 3 agent",
                    [
                        ("chat planc-test-model", []),
                        ("execute_tool search", []),  # the call the model asked for
                        ("chat planc-test-model", []),
                    ],
                ),
            ],
        )
    ]
    [root] = named(finished, "invoke_workflow p.plan")
    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_workflow",
        "planc.run.id": run_id,
        "planc.plan": "p.plan",
        "planc.run.status": "ok",
    }
    first, nested, asked = named(finished, "execute_tool search")
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "planc.step.path": "1",
    }
    assert nested.attributes["planc.step.path"] == "2/1"
    assert asked.attributes["gen_ai.tool.call.id"] == "call_search_1"
    assert asked.attributes["planc.step.path"] == "3/agent.1/search"
    chats = named(finished, "chat planc-test-model")
    port = int(model_server.url.split(":")[2].split("/")[0])
    assert [dict(chat.attributes) for chat in chats] == [
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "planc-test-model",
            "server.address": "127.0.0.1",
            "server.port": port,
            "planc.model.role": "chat",
            "planc.step.path": "3",
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
        }
        for input_tokens, output_tokens in ((180, 24), (260, 22))
    ]  # as the recorded replies say
    assert [chat.kind.name for chat in chats] == ["CLIENT", "CLIENT"]
    assert all(span.status.status_code.name == "UNSET" for span in finished)
    # Each span lasts from its event's time to its end's.
    events = {(event["event"], event.get("step")): event for event in recorded(project, run_id)["events"]}
    step = named(finished, "step 1 search")[0]
    assert step.start_time / 1e9 == pytest.approx(events[("step_started", "1")]["at"], abs=1e-6)
    assert step.end_time / 1e9 == pytest.approx(events[("step_finished", "1")]["at"], abs=1e-6)
    assert calls(project) == ["search", "search", "search"]


def test_a_failing_tool_ends_its_call_its_step_and_the_run_in_error(project, spans):
    write_plan(project, 'search(query: "disk", limit: 1)\nfails(x: 1)\nsearch(query: "never")\n')
    result = invoke("run", "p.plan", "--otel")
    clean(result.stderr)
    assert result.exit_code == 1
    assert calls(project) == ["search", "fails"]
    run_id = run_id_of(result.stderr)
    assert recorded(project, run_id)["status"] == "failed"
    finished = spans.get_finished_spans()
    assert tree(finished) == [
        (
            "invoke_workflow p.plan",
            [("step 1 search", [("execute_tool search", [])]), ("step 2 fails", [("execute_tool fails", [])])],
        )
    ]
    message = "step 2: `fails` failed: ValueError: no such thing"
    for name in ("execute_tool fails", "step 2 fails", "invoke_workflow p.plan"):
        [span] = named(finished, name)
        assert (span.status.status_code.name, span.status.description) == ("ERROR", message), name
        assert span.attributes["error.type"] == "ToolFailed"
        [exception] = span.events
        assert (exception.name, dict(exception.attributes)) == (
            "exception",
            {"exception.type": "ToolFailed", "exception.message": message},
        )
    assert named(finished, "invoke_workflow p.plan")[0].attributes["planc.run.status"] == "failed"


def test_an_exit_with_status_error_is_an_error_span_and_exit_4(project, spans):
    write_plan(
        project,
        'search(query: "disk", limit: 1)\ndecide(when: $1.length > 0, then: { exit(status: "error", message: "found some") })\n',
    )
    result = invoke("run", "p.plan", "--otel")
    assert result.exit_code == 4
    finished = spans.get_finished_spans()
    assert tree(finished) == [
        (
            "invoke_workflow p.plan",
            [("step 1 search", [("execute_tool search", [])]), ("step 2 decide", [("step 2/then.1 exit", [])])],
        )
    ]
    for name in ("step 2/then.1 exit", "step 2 decide", "invoke_workflow p.plan"):
        [span] = named(finished, name)
        assert (span.status.status_code.name, span.status.description) == ("ERROR", "found some"), name
        assert span.attributes["error.type"] == "Exited"
    assert named(finished, "invoke_workflow p.plan")[0].attributes["planc.run.status"] == "error"


def test_without_otel_or_an_endpoint_a_run_makes_no_spans(project, spans):
    write_plan(project, 'search(query: "disk", limit: 1)\n')
    assert invoke("run", "p.plan").exit_code == 0
    assert spans.get_finished_spans() == ()


def test_the_endpoint_variable_alone_traces_the_run(project, spans):
    write_plan(project, 'search(query: "disk", limit: 1)\n')
    result = invoke("run", "p.plan", env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert result.exit_code == 0, result.output
    assert tree(spans.get_finished_spans()) == [("invoke_workflow p.plan", [("step 1 search", [("execute_tool search", [])])])]


# --- without OpenTelemetry installed


@pytest.fixture
def no_opentelemetry(tmp_path):
    """A PYTHONPATH on which `import opentelemetry` fails, as where the `otel` extra is not installed."""
    blocked = tmp_path / "blocked" / "opentelemetry"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError(\"No module named 'opentelemetry'\")\n")
    return str(blocked.parent)


def test_otel_without_opentelemetry_is_one_message_and_nothing_runs(project, no_opentelemetry):
    write_plan(project, 'search(query: "disk", limit: 1)\n')
    done = planc_completed("run", "p.plan", "--otel", cwd=project, env={**os.environ, "PYTHONPATH": no_opentelemetry})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "Error: --otel sends the run as OpenTelemetry spans, and OpenTelemetry is not installed: pip install 'planc[otel]'"
    ]
    assert done.stdout == "" and calls(project) == []
    assert not (project / "runs.sqlite").exists()  # nothing recorded


def test_the_endpoint_variable_without_opentelemetry_warns_and_runs_untraced(project, no_opentelemetry):
    write_plan(project, 'search(query: "disk", limit: 1)\n')
    done = planc_completed(
        "run",
        "p.plan",
        cwd=project,
        env={**os.environ, "PYTHONPATH": no_opentelemetry, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    )
    clean(done.stderr)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        "warning: OTEL_EXPORTER_OTLP_ENDPOINT is set, and this run is not traced: OpenTelemetry is not installed "
        "(pip install 'planc[otel]')"
    )
    assert json.loads(done.stdout) == [{"id": "I0", "status": "resolved"}] and calls(project) == ["search"]
    assert recorded(project, run_id_of(done.stderr))["status"] == "ok"


# --- over OTLP/HTTP, from a process of its own


class Collector:
    """An OTLP/HTTP receiver on loopback: each POST to /v1/traces is kept and answered 200."""

    def __init__(self) -> None:
        self.posts: queue.Queue = queue.Queue()
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                posts.put((self.path, self.headers.get("Content-Type"), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()

    def requests(self) -> list:
        """The export requests received: waits for the first (a planc that has ended has sent them all)."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        received = [self.posts.get(timeout=HANG_GUARD_S)]  # a guard against a hung test, not a claim about speed
        while not self.posts.empty():
            received.append(self.posts.get_nowait())
        assert {(path, kind) for path, kind, _ in received} == {("/v1/traces", "application/x-protobuf")}
        return [ExportTraceServiceRequest.FromString(body) for _, _, body in received]

    def spans(self) -> list[dict]:
        """Every span received, as plain data: its name, ids, status, attributes and resource's service.name."""
        found = []
        for request in self.requests():
            for resource_spans in request.resource_spans:
                service = {item.key: item.value.string_value for item in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(
                            {
                                "name": span.name,
                                "id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "trace": span.trace_id.hex(),
                                "service": service.get("service.name"),
                                "status": {0: "UNSET", 1: "OK", 2: "ERROR"}[span.status.code],
                                "message": span.status.message,
                                "attributes": {item.key: _value(item.value) for item in span.attributes},
                            }
                        )
        return found


def _value(value):
    return getattr(value, value.WhichOneof("value"))


@pytest.mark.parametrize("service", [None, "incident-triage"])
def test_planc_run_otel_sends_the_spans_to_an_otlp_http_collector(project, service):
    write_plan(project, 'search(query: "disk", limit: 2)\nplan__top(limit: 2)\n')
    named_service = {"OTEL_SERVICE_NAME": service} if service else {}
    with Collector() as collector:
        done = planc_completed(
            "run",
            "p.plan",
            "--otel",
            cwd=project,
            env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, **named_service},
        )
        clean(done.stderr)
        assert done.returncode == 0, done.stderr
        received = collector.spans()
    run_id = run_id_of(done.stderr)
    by_id = {span["id"]: span for span in received}
    parents = sorted((span["name"], by_id[span["parent"]]["name"] if span["parent"] else None) for span in received)
    assert parents == sorted(
        [
            ("invoke_workflow p.plan", None),
            ("step 1 search", "invoke_workflow p.plan"),
            ("execute_tool search", "step 1 search"),
            ("step 2 plan__top", "invoke_workflow p.plan"),
            ("execute_tool plan__top", "step 2 plan__top"),
            ("step 2/1 search", "execute_tool plan__top"),
            ("execute_tool search", "step 2/1 search"),
            ("step 2/2 filter", "execute_tool plan__top"),
        ]
    )
    assert {span["trace"] for span in received} == {received[0]["trace"]}
    assert {span["service"] for span in received} == {service or "planc"}
    [root] = [span for span in received if not span["parent"]]
    assert root["attributes"] == {
        "gen_ai.operation.name": "invoke_workflow",
        "planc.run.id": run_id,
        "planc.plan": "p.plan",
        "planc.run.status": "ok",
    }
    assert calls(project) == ["search", "search"]


def test_a_collector_that_never_answers_does_not_fail_the_run(project):
    """The collector takes the connection and never answers: the run ends as it would, one warning said."""
    write_plan(project, 'search(query: "disk", limit: 1)\n')
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        where = f"http://127.0.0.1:{silent.getsockname()[1]}"
        done = planc_completed("run", "p.plan", "--otel", cwd=project, env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": where})
    clean(done.stderr)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"id": "I0", "status": "resolved"}]
    assert done.stderr.splitlines()[-1] == (
        f"warning: the run's spans were not all sent within 5 s: does an OTLP/HTTP collector answer at {where}?"
    )
    assert calls(project) == ["search"]
    assert recorded(project, run_id_of(done.stderr))["status"] == "ok"
