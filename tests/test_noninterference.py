"""Non-interference: what others write can neither make nor change an effectful call, and a secret
changes no byte planc writes, for random plans in random worlds.

A world (noninterference_world.py) says what each call of a labelled tool returns or raises. Each
property runs one checked plan (noninterference_plans.py) in two worlds, as deterministically as
planc runs: every `map` at `concurrency: 1`, no schedule, the local executor, tools that return at
once, a clock and a run id fixed in the run's options (`planc.clock`), no budget. `agent` and
`infer` are answered by a model that is a pure function of its conversation (scripted_model.py),
`ask` and approvals by pure functions of the question or the call. A run that waits for approval is
continued through each door in turn: `planc.approve_async`, `planc approve`, and `planc resume`
(which leaves it waiting, as nobody answered) before the next; a plan that asks goes on through
`approve_async` alone, as `planc approve` has nobody to answer an `ask`.

- Property I (integrity, termination-insensitive): in two worlds that differ only in what untrusted
  tools return, cut each run's effectful calls at the first point in the plan where either run
  stopped (failed, refused, interrupted; not a declared plan's `exit`, an end as an `exit` written in
  the plan is): the calls made at steps before it. A call (step path with
  loop indices, tool, canonical arguments) that one cut sequence holds more often than the other
  carries `untrusted` in its argument or control labels in the run that makes it, and so does the
  check's flow at its step path.
- Property S (secrecy): in two worlds that differ only in what secret tools return, for a plan where
  the check finds `secret` in no call's control (nor warns, W508, that one decides an `exit` or may
  make a step fail), the store (every table, in a fixed order), `show-run` in every format, the
  events files, the traces and stderr are the same bytes once each redaction mark is replaced,
  whole, by one constant.
- Property 0: every call's run-time labels are within the check's at its step path (flow_checks.py,
  as test_flow_property.py holds for its own plans).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import json
import re
import shutil
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from cli import invoke
from flow_checks import assert_within_check, checked_bound
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from noninterference_plans import plans
from noninterference_world import EFFECTFUL, POLICY, TOML, TOOLS
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from profiles import examples
from scripted_model import ScriptedModel
from tool_project import tool_project

from planc.backend.calls.approvals import AwaitingApproval
from planc.backend.calls.hooks import Hooks, Question
from planc.backend.report.traces import RunSpans
from planc.backend.state.values import RunError
from planc.clock import FixedClock, fixed
from planc.passes.check import CheckResult, check
from planc.passes.policy.load import load_policy
from planc.registry.loading.config import load_registry
from planc.registry.provenance.labels import plain

UNTRUSTED, SECRET = "untrusted", "secret"
CLOCK = FixedClock(at=1767225600.0, run_id="20260101-000000-n0n1n7er")
DOORS = ("approve_async", "planc approve", "planc resume")
# A guard against a run that waits for ever: more continuations than any drawn plan needs.
MOST_WAITS = 40
# A redaction mark, however it is written: `(redacted secret: N chars, hmac HEX)`, and the JSON
# object `{"planc/redacted": {"length": N, "sha256": HEX}}` (escaped in a JSON string, in HTML, in
# repr) of runs recorded before keyed marks: its key and everything to the end of the digest it
# holds. A mark cut short by an excerpt (its end an ellipsis) is a mark too.
MARK = re.compile(
    r"\(redacted secret: [^)…]*[)…]"
    r"|planc/redacted.{0,80}?[0-9a-f]{8,64}(?:…|&quot;|\\*[\"'])?\}*",
    re.S,
)
seeds = st.integers(0, 2**16)


@attrs.define
class Project:
    folder: Path
    world: object  # the tools' module: its WORLD is the world calls are answered from


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("noninterference")
    model = ScriptedModel().start()
    models = f'\n[models.default]\nbase_url = "{model.url}"\nmodel = "scripted"\nretries = 0\n'
    try:
        with tool_project(
            folder,
            "nitools",
            TOOLS,
            TOML + models.replace("{", "{{").replace("}", "}}"),
            {"policy.cedar": POLICY, "sub.plan": 'post(text: "sub")\n'},
        ) as module:
            sys.path.insert(0, str(folder))
            try:
                yield Project(folder, importlib.import_module(module))
            finally:
                sys.path.remove(str(folder))
    finally:
        model.stop()


def checked_plan(project: Project, text: str, sub: str) -> CheckResult:
    """`text` checked against the project (with `sub` as the declared plan's body), as a run that
    lets a person approve what the policy flags; only plans that check are run."""
    (project.folder / "sub.plan").write_text(sub, encoding="utf-8")
    registry = load_registry(project.folder / "planc.toml")
    checked = check(text, registry=registry, policy=load_policy(project.folder / "policy.cedar"), approvals=True)
    assume(checked.ok)
    return checked


def digest(value: object) -> int:
    return int(
        hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:8],
        16,
    )


async def answer(question: Question) -> str:
    """`ask`: a pure function of the question."""
    return "yes" if digest(question.text) % 2 else "no"


def approves(call: dict) -> bool:
    """A person's answer to a call that waits: a pure function of the call (where it is, what it
    calls)."""
    return digest([call["step"], call["tool"]]) % 4 != 0


@attrs.define
class Ran:
    """What a run did: its status, its calls as the store holds them, and (when asked) every byte it
    wrote."""

    status: str
    calls: list[dict]
    written: dict[str, str]
    stopped: tuple | None = None  # where in the plan it stopped (`position`), when it failed


def run_in_world(project: Project, checked: CheckResult, text: str, seeds: dict[str, int], keep: bool) -> Ran:
    """Run `checked` in the world `seeds` names, in a store of its own (the same path for every
    world, so that no path tells two runs apart), continuing it through the doors while it waits;
    what it did."""
    folder = project.folder / "run"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    store, stderr = folder / "runs.sqlite", []
    project.world.WORLD.update(seeds=dict(seeds), counts={}, recent=None)
    events = [folder / "events-0.jsonl"]
    traces = Traces()
    with open(events[0], "w", encoding="utf-8") as sink, traces.run() as spans:

        def write(event: dict) -> None:
            sink.write(json.dumps(event, ensure_ascii=False) + "\n")
            spans(event)

        hooks = Hooks(events=write, interlocutor=answer)
        with fixed(CLOCK):
            try:
                asyncio.run(planc_run(checked, store, hooks))
            except (AwaitingApproval, RunError):
                pass
    asks = "ask(" in text  # `planc approve` has no one to answer an `ask`: such runs go on through the API
    for door_number in range(MOST_WAITS):
        if status_of(store) != "awaiting_approval":
            break
        door = "approve_async" if asks else DOORS[door_number % len(DOORS)]
        events.append(folder / f"events-{door_number + 1}.jsonl")
        stderr.append(continue_through(door, store, events[-1], hooks, traces))
    else:
        raise AssertionError(f"the run still waits after {MOST_WAITS} answers")
    status = status_of(store)
    written = {}
    if keep:
        written["store"] = dump(store)
        for form in ("text", "json", "html"):
            shown = invoke("show-run", CLOCK.run_id, "--store", store, "--format", form)
            written[f"show-run {form}"] = f"exit {shown.exit_code}\n{shown.stdout}\n{shown.stderr}"
        written["events"] = "".join(path.read_text(encoding="utf-8") for path in events if path.exists())
        written["stderr"] = "\n".join(stderr)
        written["traces"] = traces.written()
    return Ran(status, calls_of(store), written, stopped_at(store))


class Counted(IdGenerator):
    """Span and trace ids counted from 1: a run's traces are the same bytes whenever it does the
    same."""

    def __init__(self) -> None:
        self.count = 0

    def generate_span_id(self) -> int:
        self.count += 1
        return self.count

    def generate_trace_id(self) -> int:
        self.count += 1
        return self.count


class Traces:
    """The spans planc makes of a run's events (`RunSpans`, as `--otel` sends them), kept in
    memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(id_generator=Counted())
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @contextlib.contextmanager
    def run(self) -> Iterator[RunSpans]:
        """The spans of one door's part of the run, ended when it ends."""
        spans = RunSpans(self.provider.get_tracer("planc"), "run")
        try:
            yield spans
        finally:
            spans.close()

    def written(self) -> str:
        """Every span as a line of JSON (the SDK's own form), in the order they ended."""
        return "\n".join(span.to_json(indent=None) for span in self.exporter.get_finished_spans())


async def planc_run(checked: CheckResult, store: Path, hooks: Hooks) -> None:
    from planc import run_async

    await run_async(checked, store=str(store), hooks=hooks, executor="local")


def continue_through(door: str, store: Path, events: Path, hooks: Hooks, traces: Traces) -> str:
    """Answer the call that waits through `door` and continue the run; what the door printed on
    stderr."""
    from planc import approve_async

    [waiting, *_] = waiting_calls(store)
    deny = not approves(waiting)
    if door == "approve_async":
        with open(events, "w", encoding="utf-8") as sink, traces.run() as spans:

            def write(event: dict) -> None:
                sink.write(json.dumps(event, ensure_ascii=False) + "\n")
                spans(event)

            try:
                asyncio.run(
                    approve_async(
                        CLOCK.run_id,
                        store=str(store),
                        deny=deny,
                        hooks=attrs.evolve(hooks, events=write),
                    )
                )
            except (AwaitingApproval, RunError) as error:
                return f"{door}: {type(error).__name__}: {error}"
        return f"{door}: ok"
    if door == "planc resume":  # nobody answered: the run waits again, and the next door answers
        resumed = invoke("resume", CLOCK.run_id, "--store", store, "--events", events)
        # A call whose secret result is recorded as its mark is made again only where that may stand
        # for the run's call, and may still answer otherwise, as the world answers each call anew: the
        # resume then stops there, or where it diverged, a stop as any other.
        diverged = any(why in resumed.stderr for why in ("resume diverged", "the record keeps only the mark"))
        assert status_of(store) == ("failed" if diverged else "awaiting_approval"), resumed.output
        return f"{door}: exit {resumed.exit_code}\n{resumed.stdout}\n{resumed.stderr}"
    answered = invoke("approve", CLOCK.run_id, "--store", store, "--events", events, *(["--deny"] if deny else []))
    return f"{door}: exit {answered.exit_code}\n{answered.stdout}\n{answered.stderr}"


def status_of(store: Path) -> str:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT status FROM runs WHERE id = ?", (CLOCK.run_id,)).fetchone()[0]


def waiting_calls(store: Path) -> list[dict]:
    return [call for call in calls_of(store) if call["outcome"] == "awaiting_approval"]


def calls_of(store: Path) -> list[dict]:
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT sequence, step, tool, input, outcome, labels FROM calls WHERE run_id = ? ORDER BY sequence",
            (CLOCK.run_id,),
        ).fetchall()
    return [
        {
            "sequence": row[0],
            "step": row[1],
            "tool": row[2],
            "input": json.loads(row[3]),
            "outcome": row[4],
            "labels": json.loads(row[5]) if row[5] else None,
        }
        for row in rows
    ]


def dump(store: Path) -> str:
    """Every table of the store, every row, in a fixed order."""
    lines = []
    with sqlite3.connect(store) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            order = ", ".join(f'"{column}"' for column in columns)
            lines.append(f"== {table}")
            lines += [repr(row) for row in db.execute(f'SELECT * FROM "{table}" ORDER BY {order}')]
    return "\n".join(lines)


def made(ran: Ran) -> list[dict]:
    """The effectful calls the run made, in order."""
    return [call for call in ran.calls if call["tool"] in EFFECTFUL and call["outcome"] == "ok"]


def identity(call: dict) -> tuple[str, str, str]:
    return call["step"], call["tool"], json.dumps(call["input"], sort_keys=True, ensure_ascii=False)


def carries(call: dict, label: str) -> bool:
    """Whether the call's labels hold `label`, in its control or an argument, as itself or as a choice
    among trusted items (`chosen by LABEL`: one of the items, each what it was, and the policy told)."""
    labels = call["labels"] or {}
    return holds(labels.get("control", ()), labels.get("sources", {}), label)


def check_carries(checked: CheckResult, step: str, tool: str, label: str) -> bool:
    sources, control = checked_bound(checked, step, tool)
    return holds(control, sources, label)


def holds(control, sources: dict, label: str) -> bool:
    return label in plain(frozenset(control)) or any(label in plain(frozenset(each)) for each in sources.values())


def secret_decides(checked: CheckResult) -> bool:
    """Whether the check finds a secret in what decides which steps run: in a call's control, or in
    what it warns of as such (W508: an `exit`'s condition too)."""
    return any(SECRET in flow.control for flow in checked.flow.calls.values()) or any(
        found.code == "W508" for found in checked.diagnostics
    )


def within_check(checked: CheckResult, ran: Ran, text: str) -> None:
    """Property 0 over every call of `ran` the store recorded labels for."""
    for call in ran.calls:
        if call["labels"] is not None:
            assert_within_check(
                checked,
                call["step"],
                call["labels"].get("sources", {}),
                call["labels"].get("control", ()),
                text,
                call["tool"],
            )


STOPPED = (
    "failed",
    "interrupted",
)  # a run that failed (a refusal, a denial, an error) or was interrupted
STOPPED_AT = re.compile(r"^step (\S+?):")  # how a failed run's message names where it stopped
# A declared plan's `exit` with status error fails its caller, but it is the plan's decision, as the
# same `exit` written in the caller is: an end, not a stop.
EXITED = re.compile(r"the plan `\w+` exited with status error")
SEGMENT = re.compile(r"^(\w+)\.(\d+)(?:\[(\d+)\])?$")


def position(step: str) -> tuple:
    """Where the step path `step` comes in the plan's order: `2` before `2/do.1[0]` before
    `2/do.2[0]` before `2/do.1[1]` before `3`; an agent's rounds (`4/agent.1/send`) in their order.
    """
    key = []
    for segment in step.split("/"):
        found = SEGMENT.match(segment)
        if found:
            key.append((int(found[3] or 0), found[1], int(found[2])))
        else:
            key.append((0, "" if segment.isdigit() else segment, int(segment) if segment.isdigit() else 0))
    return tuple(key)


def stopped_at(store: Path) -> tuple | None:
    """Where in the plan the run stopped, when it failed or was interrupted: the step its message
    names, or its first step when it names none. None when it did not stop."""
    with sqlite3.connect(store) as db:
        status, message = db.execute("SELECT status, message FROM runs WHERE id = ?", (CLOCK.run_id,)).fetchone()
    if status not in STOPPED or EXITED.search(message or ""):
        return None
    found = STOPPED_AT.match(message or "")
    return position(found[1]) if found else ()


def cut(first: Ran, second: Ran) -> tuple[list[dict], list[dict]]:
    """Each run's effectful calls, cut at the first point in the plan where either run stopped: the
    calls made before it (the other run's calls past that point have nothing to be compared with).
    """
    stops = [ran.stopped for ran in (first, second) if ran.stopped is not None]
    if not stops:
        return made(first), made(second)
    point = min(stops)
    return ([call for call in made(ran) if position(call["step"]) < point] for ran in (first, second))


def test_untrusted_data_makes_and_changes_no_call(project):
    """Property I (and 0): what untrusted tools return may stop a run, never make or change a call
    the run's labels do not mark as theirs, at run time and in the check."""

    @settings(
        max_examples=examples(200, dev=8),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(plans(), seeds, seeds, st.tuples(seeds, seeds).filter(lambda pair: pair[0] != pair[1]))
    def prop(plan, trusted, secret, untrusted):
        text, sub = plan
        checked = checked_plan(project, text, sub)
        note(f"plan:\n{text}\nsub.plan:\n{sub}")
        runs = []
        for seed in untrusted:
            world = {"trusted": trusted, "secret": secret, UNTRUSTED: seed}
            runs.append(run_in_world(project, checked, text, world, keep=False))
            within_check(checked, runs[-1], text)
        one, two = cut(*runs)
        note(f"stopped at {[ran.stopped for ran in runs]}; made {[list(map(identity, made(ran))) for ran in runs]}")
        for mine, theirs, ran, world in (
            (one, two, runs[0], untrusted[0]),
            (two, one, runs[1], untrusted[1]),
        ):
            extra = Counter(map(identity, mine)) - Counter(map(identity, theirs))
            for call in mine:
                if extra[identity(call)] <= 0:
                    continue
                extra[identity(call)] -= 1
                note(
                    f"the run in the world of untrusted seed {world} ({ran.status}) made {identity(call)}, "
                    f"with labels {call['labels']}; the other ({[r.status for r in runs]}) made "
                    f"{[identity(other) for other in theirs]}"
                )
                assert carries(call, UNTRUSTED), (
                    "a call untrusted data made or changed carries no `untrusted`",
                    identity(call),
                    call["labels"],
                )
                assert check_carries(checked, call["step"], call["tool"], UNTRUSTED), (
                    "the check's flow does not carry `untrusted` where untrusted data made or changed a call",
                    identity(call),
                    checked_bound(checked, call["step"], call["tool"]),
                )

    prop()


def test_a_secret_changes_no_byte_planc_writes(project):
    """Property S (and 0): where no secret decides which calls run, two runs whose secrets differ
    write the same bytes everywhere, once each redaction mark is set aside. A step that may fail on
    a secret it is given (`lookup(key: $s1.code)`) decides which calls run (W508), as a condition
    does; an `exit`'s message and an `ask`'s question fail on nothing, and are still compared."""

    @settings(
        max_examples=examples(200, dev=8),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(plans(), seeds, seeds, st.tuples(seeds, seeds).filter(lambda pair: pair[0] != pair[1]))
    def prop(plan, trusted, untrusted, secret):
        text, sub = plan
        checked = checked_plan(project, text, sub)
        assume(not secret_decides(checked))
        note(f"plan:\n{text}\nsub.plan:\n{sub}")
        written = []
        for seed in secret:
            world = {"trusted": trusted, UNTRUSTED: untrusted, "secret": seed}
            ran = run_in_world(project, checked, text, world, keep=True)
            within_check(checked, ran, text)
            written.append({name: MARK.sub("<mark>", value) for name, value in ran.written.items()})
        for name in written[0]:
            one, two = written[0][name].splitlines(), written[1][name].splitlines()
            differing = [(number, a, b) for number, (a, b) in enumerate(zip(one, two), 1) if a != b]
            assert one == two, (
                f"{name} differs between secret seeds {secret}",
                len(one),
                len(two),
                differing[:3],
            )

    prop()


def test_a_fixed_clock_stamps_every_row_and_event_of_a_run_through_every_door(project):
    """The runs above are deterministic because the clock and the run's id are the ones its options
    fix, in whichever door continues it: every time the store and the events file hold is the fixed
    one, and the run's id is the fixed one."""
    text = 's1 = inbox(folder: "f0")\nmap(over: $s1, concurrency: 1, do: { send(to: item.text, amount: index) })\n'
    (project.folder / "sub.plan").write_text('post(text: "sub")\n', encoding="utf-8")
    checked = check(
        text,
        registry=load_registry(project.folder / "planc.toml"),
        policy=load_policy(project.folder / "policy.cedar"),
        approvals=True,
    )
    assert checked.ok, checked.diagnostics
    ran = run_in_world(project, checked, text, {"trusted": 0, "secret": 0, UNTRUSTED: 1}, keep=True)
    assert [call["outcome"] for call in ran.calls if call["tool"] == "send"] == ["ok"] * 3
    said = ran.written["stderr"]  # each door, in turn: the three items' sends each waited
    assert "planc approve: exit 3" in said and "planc resume: exit 3" in said and "approve_async: ok" in said
    assert "Traceback" not in said and ran.status == "ok"
    store = project.folder / "run" / "runs.sqlite"
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT id FROM runs").fetchall() == [(CLOCK.run_id,)]
        times = [
            row[0]
            for query in (
                "SELECT started_at FROM runs",
                "SELECT finished_at FROM runs",
                "SELECT started_at FROM calls",
                "SELECT finished_at FROM calls",
                "SELECT at FROM events",
            )
            for row in db.execute(query)
        ]
    assert times and set(times) == {CLOCK.at}
    stamps = {json.loads(line)["time"] for line in ran.written["events"].splitlines()}
    assert stamps == {"2026-01-01T00:00:00.000000Z"}
