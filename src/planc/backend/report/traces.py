"""A run as OpenTelemetry spans, made from its events (`events.py`): one more consumer of the same stream.

This module needs the `otel` extra (`pip install 'planc[otel]'`) and is imported only when a run is
traced (`planc run --otel`, or OTEL_EXPORTER_OTLP_ENDPOINT set), so planc starts without OpenTelemetry.

| span | from the events | attributes |
|---|---|---|
| the run: `invoke_workflow NAME` | `run_started` to `run_finished` | `gen_ai.operation.name` = `invoke_workflow`, `planc.run.id`, `planc.plan`, `planc.run.status` |
| a step: `step PATH TOOL` | `step_started` to `step_finished`, `step_failed` or `step_exited` | `planc.step.path`, `planc.step.tool` |
| a tool call: `execute_tool TOOL` | `tool_started` to `tool_finished` or `tool_failed` | `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id` (an agent's call), `planc.step.path` |
| an inference: `chat MODEL` | `model_started` to `model_finished` or `model_failed` | `gen_ai.operation.name` = `chat`, `gen_ai.provider.name`, `gen_ai.request.model`, `server.address`, `server.port`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `planc.model.role` |

A span's parent is the innermost span open at its path or at a path it is inside
(`planc.syntax.steps.enclosing_paths`): a tool step's call is under the step, the steps of a declared
plan under the call of the step that runs it, a block's steps under their control step, an agent's
calls and inferences under the agent's step. A span that ends in an error has status ERROR, its
`error.type` (the kind of planc's error: ToolFailed, CallTimedOut, ...) and an `exception` event
with the message. Inputs, results and conversations are not put on spans (they are in the run
store): the GenAI conventions leave them to the user to opt in to.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from planc.syntax.steps import enclosing_paths

FLUSH_S = 5.0  # at the end of a run, the longest wait for its spans to be sent
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

# The span each kind of event starts, and the events that end it.
STARTS = {"step_started": "step", "tool_started": "tool", "model_started": "model"}
ENDS = {
    "step_finished": "step",
    "step_failed": "step",
    "step_exited": "step",
    "tool_finished": "tool",
    "tool_failed": "tool",
    "model_finished": "model",
    "model_failed": "model",
}


class RunSpans:
    """The spans of one run, started and ended as its events come: an events sink (`Hooks.events`).

    `tracer` makes the spans; `name` names the run's span (the plan's file, or the run resumed), `plan`
    is the plan's path. `close()` ends whatever is still open (a run that never sent `run_finished`).
    """

    def __init__(self, tracer: trace.Tracer, name: str, plan: str | None = None) -> None:
        self.tracer, self.name, self.plan = tracer, name, plan
        self.root: Span | None = None
        self.open: dict[str, list[tuple[str, Span]]] = {}  # path -> (kind, span) open there, innermost last

    def __call__(self, event: dict) -> None:
        kind, at = event.get("event"), nanoseconds(event)
        if kind == "run_started":
            self.started_run(event, at)
        elif kind in STARTS:
            self.started(STARTS[kind], event, at)
        elif kind in ENDS:
            self.ended(ENDS[kind], event, at)
        elif kind == "run_finished":
            self.finished_run(event, at)
        elif kind == "tool_progress":
            self.progressed(event, at)

    def started_run(self, event: dict, at: int) -> None:
        attributes = {"gen_ai.operation.name": "invoke_workflow"}
        if event.get("run") is not None:
            attributes["planc.run.id"] = event["run"]
        if self.plan is not None:
            attributes["planc.plan"] = self.plan
        self.root = self.tracer.start_span(f"invoke_workflow {self.name}", attributes=attributes, start_time=at)

    def started(self, kind: str, event: dict, at: int) -> None:
        path = event.get("step", "")
        name, span_kind, attributes = SPANS[kind](event)
        span = self.tracer.start_span(
            name,
            context=trace.set_span_in_context(self.parent(path)),
            kind=span_kind,
            attributes={**attributes, "planc.step.path": path},
            start_time=at,
        )
        self.open.setdefault(path, []).append((kind, span))

    def parent(self, path: str) -> Span:
        for enclosing in enclosing_paths(path):
            if self.open.get(enclosing):
                return self.open[enclosing][-1][1]
        if self.root is None:  # events without a `run_started` (a sink added mid-run)
            self.root = self.tracer.start_span(f"invoke_workflow {self.name}")
        return self.root

    def progressed(self, event: dict, at: int) -> None:
        """A tool's progress: an event `progress` on its call's open span."""
        spans = [span for kind, span in self.open.get(event.get("step", ""), []) if kind == "tool"]
        if spans:
            attributes = {
                f"planc.progress.{field}": event[field]
                for field in ("progress", "total", "message")
                if event.get(field) is not None
            }
            spans[-1].add_event("progress", attributes, timestamp=at)

    def ended(self, kind: str, event: dict, at: int) -> None:
        path = event.get("step", "")
        spans = self.open.get(path, [])
        index = next((i for i in range(len(spans) - 1, -1, -1) if spans[i][0] == kind), None)
        if index is None:
            return
        _, span = spans.pop(index)
        if not spans:
            del self.open[path]
        usage = event.get("usage") or {}
        for field, attribute in (
            ("prompt_tokens", "gen_ai.usage.input_tokens"),
            ("completion_tokens", "gen_ai.usage.output_tokens"),
        ):
            if isinstance(usage.get(field), int):
                span.set_attribute(attribute, usage[field])
        if event["event"] == "step_exited":
            span.set_attribute("planc.exit.status", event.get("status", "ok"))
            if event.get("status") == "error":
                failed(span, "Exited", event.get("message") or "the plan exited with status error", at)
        elif "error" in event:
            failed(span, event.get("error_type", "_OTHER"), event["error"], at)
        span.end(end_time=at)

    def finished_run(self, event: dict, at: int) -> None:
        status = event.get("status", "ok")
        self.end_open(f"the run ended {status} while this was running", at)
        if self.root is None:
            return
        self.root.set_attribute("planc.run.status", status)
        if status != "ok":  # an exit with status error, a failure, an interruption
            message = event.get("error") or event.get("message") or f"the run ended {status}"
            failed(self.root, event.get("error_type", "Exited" if status == "error" else "_OTHER"), message, at)
        self.root.end(end_time=at)
        self.root = None

    def end_open(self, message: str, at: int) -> None:
        """End every span still open, innermost first, as errors saying `message`."""
        for spans in reversed(list(self.open.values())):
            for _, span in reversed(spans):
                failed(span, "_OTHER", message, at)
                span.end(end_time=at)
        self.open.clear()

    def close(self) -> None:
        if self.root is not None:
            self.finished_run({"status": "failed", "error": "the run ended without finishing"}, time.time_ns())


def failed(span: Span, kind: str, message: str, at: int) -> None:
    """`span` ended in an error of `kind` saying `message`, as OpenTelemetry records errors."""
    span.set_status(Status(StatusCode.ERROR, message))
    span.set_attribute("error.type", kind)
    span.add_event("exception", {"exception.type": kind, "exception.message": message}, timestamp=at)


def step_span(event: Mapping) -> tuple[str, SpanKind, dict]:
    tool = event.get("tool", "")
    return f"step {event.get('step', '')} {tool}", SpanKind.INTERNAL, {"planc.step.tool": tool}


def tool_span(event: Mapping) -> tuple[str, SpanKind, dict]:
    tool = event.get("tool", "")
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
    if event.get("call_id"):
        attributes["gen_ai.tool.call.id"] = event["call_id"]
    return f"execute_tool {tool}", SpanKind.INTERNAL, attributes


def model_span(event: Mapping) -> tuple[str, SpanKind, dict]:
    attributes = {"gen_ai.operation.name": "chat", "planc.model.role": event.get("role", "")}
    if event.get("provider"):
        attributes["gen_ai.provider.name"] = event["provider"]
    if event.get("model"):
        attributes["gen_ai.request.model"] = event["model"]
    if event.get("url"):
        where = urlsplit(event["url"])
        if where.hostname:
            attributes["server.address"] = where.hostname
            attributes["server.port"] = where.port or (443 if where.scheme == "https" else 80)
    return f"chat {event.get('model', event.get('role', ''))}", SpanKind.CLIENT, attributes


SPANS = {"step": step_span, "tool": tool_span, "model": model_span}


def nanoseconds(event: Mapping) -> int:
    """When `event` happened (its `time` stamp), in nanoseconds since the epoch; now when it has none.

    >>> nanoseconds({"time": "1970-01-01T00:00:01.000002Z"})
    1000002000
    """
    stamp = event.get("time")
    if stamp is None:
        return time.time_ns()
    return (datetime.datetime.fromisoformat(stamp) - EPOCH) // datetime.timedelta(microseconds=1) * 1000


@contextlib.contextmanager
def traced(name: str, plan: str | None = None, *, warn: Callable[[str], None]) -> Iterator[RunSpans]:
    """The spans of one run (`RunSpans`, an events sink), sent when the run ends.

    They go to the tracer provider the program has set (`opentelemetry.trace.set_tracer_provider`:
    a program that embeds planc, or a test with an in-memory exporter); else to one of planc's own,
    which sends them over OTLP/HTTP where the standard OTEL_EXPORTER_OTLP_* variables say
    (http://localhost:4318 by default), as service OTEL_SERVICE_NAME (`planc` by default). Sending
    never fails the run: each request times out (OTEL_EXPORTER_OTLP_TIMEOUT), the end of the run
    waits at most FLUSH_S seconds for the spans to go, and what did not go is one line to `warn`.
    """
    provider, own = trace.get_tracer_provider(), None
    if isinstance(provider, trace.ProxyTracerProvider):  # none set: planc's own, shut down here
        own = otlp_provider()
        provider = own[0]
    spans = RunSpans(provider.get_tracer("planc"), name, plan)
    try:
        yield spans
    finally:
        spans.close()
        if own is not None and not (shut_down(own[0], FLUSH_S) and not own[1].failed):
            where = next((os.environ[each] for each in ENDPOINT_VARIABLES if os.environ.get(each)), DEFAULT_ENDPOINT)
            warn(f"the run's spans were not all sent within {FLUSH_S:g} s: does an OTLP/HTTP collector answer at {where}?")


ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_ENDPOINT = "http://localhost:4318"


class Watched(SpanExporter):
    """`exporter`, remembering whether a batch failed to go."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter, self.failed = exporter, False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.exporter.export(spans)
        self.failed = self.failed or result is not SpanExportResult.SUCCESS
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


def otlp_provider() -> tuple[TracerProvider, Watched]:
    """A tracer provider of planc's own, and its exporter: the spans sent in batches over OTLP/HTTP."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # its retries are not news: planc says what failed
    # service.name is planc's unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise
    resource = Resource.create({"service.name": "planc"}).merge(OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    exporter = Watched(OTLPSpanExporter())
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, exporter


def shut_down(provider: TracerProvider, seconds: float) -> bool:
    """Send what `provider` still holds and stop it, waiting `seconds` at most (the SDK's own shutdown may
    wait half a minute for a collector that does not answer); whether it stopped in time. What is left is
    dropped at exit, as the exporter's threads are daemons."""
    stopping = threading.Thread(target=provider.shutdown, name="planc-traces", daemon=True)
    stopping.start()
    stopping.join(seconds)
    return not stopping.is_alive()
