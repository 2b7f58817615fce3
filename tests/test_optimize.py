"""The optimizer: `planc optimize`, `planc run --optimize`, and runs under its schedule with real Python tools."""

from __future__ import annotations

import asyncio
import json
import re
import sys

import pytest
from cli import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from tool_project import tool_project

import planc
from planc.backend.run.interpreter import run_plan
from planc.backend.state.values import RunError
from planc.optimize.optimize import optimize
from planc.registry import load_registry

TOOLS = """
import asyncio, json, os
LOG = os.environ["PLANC_TEST_CALLS"]

def _log(event, tool, **args):
    with open(LOG, "a") as log:
        log.write(json.dumps({"event": event, "tool": tool, **args}) + "\\n")

async def search(query):
    _log("start", "search", query=query)
    await asyncio.sleep(0.02)
    _log("end", "search", query=query)
    return [{"id": f"{query}-{i}", "title": f"{query} {i}"} for i in range(2)]

async def create_ticket(title):
    _log("start", "create_ticket", title=title)
    await asyncio.sleep(0.02)
    _log("end", "create_ticket", title=title)
    return {"ticket": title}

async def lookup(id):
    _log("start", "lookup", id=id)
    _log("end", "lookup", id=id)
    return {"id": id}

async def fails(x):
    _log("start", "fails", x=x)
    await asyncio.sleep(x / 100)
    raise ValueError(f"broken {x}")
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }} }}
required = ["query"]
pipe = "query"
returns = {{ type = "array", items = {{ type = "object", properties = {{ id = {{ type = "string" }}, title = {{ type = "string" }} }} }} }}
effects = {{ read_only = true, deterministic = true }}

[tools.create_ticket]
provider = "python:{module}:create_ticket"
params = {{ title = {{ type = "string" }} }}
required = ["title"]
effects = {{ read_only = false, destructive = false }}

[tools.lookup]
provider = "python:{module}:lookup"
params = {{ id = {{ type = "string" }} }}
required = ["id"]

[tools.fails]
provider = "python:{module}:fails"
params = {{ x = {{ type = "integer" }} }}
effects = {{ read_only = true }}

[mcp.clock]
command = ["clock-server"]
trust_annotations = true
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    from planc.registry.mcp.lock import entry

    now = entry("now", "The time now", {"type": "object", "properties": {}}, None, {"readOnlyHint": True})
    lock = {"format": "planc.lock", "version": 1, "servers": {"clock": {"command": ["clock-server"], "tools": {"now": now}}}}
    with tool_project(tmp_path, "opttools", TOOLS, TOML, {"planc.lock.json": json.dumps(lock), "calls.jsonl": ""}):
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.jsonl"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def log(project) -> list[dict]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def optimize_cli(project, text, *args):
    (project / "p.plan").write_text(text, encoding="utf-8")
    return invoke("optimize", "p.plan", *args)


def run_cli(project, text, *args):
    (project / "p.plan").write_text(text, encoding="utf-8")
    (project / "calls.jsonl").write_text("")
    return invoke("run", "p.plan", *args)


def codes(stderr: str) -> list[str]:
    return re.findall(r"note\[(N6\d\d)\]", stderr)


# --- common-subexpression elimination ---------------------------------------------------------


def test_two_identical_searches_become_one_and_refs_read_the_first(project):
    text = (
        'hits = search(query: "disk")\n'
        'search(query: "disk") |> map(do: { search(query: item.id) })\n'
        'again = search(query: "disk")\n'
        "reshape(value: {a: $hits, b: $2, c: $3, d: $again})\n"
    )
    result = optimize_cli(project, text)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        'hits = search(query: "disk")\n'
        "map(over: $hits, do: { search(query: item.id) })\n"
        "reshape(value: {a: $hits, b: $1, c: $2, d: $hits})\n"
    )
    assert codes(result.stderr).count("N600") == 2
    assert "step 2 repeats the call of step 1" in result.stderr and "read-only and deterministic" in result.stderr
    assert planc.check(result.stdout, registry=load_registry(project / "planc.toml")).ok
    plain = run_cli(project, text)
    assert [call.get("query") for call in log(project) if call["event"] == "start"].count("disk") == 3
    optimized = run_cli(project, text, "--optimize")
    assert optimized.exit_code == 0, optimized.output
    assert [call.get("query") for call in log(project) if call["event"] == "start"].count("disk") == 1
    assert json.loads(optimized.stdout) == json.loads(plain.stdout)
    assert "N600" in optimized.stderr  # the notes go to stderr


def test_a_repeated_call_that_ends_the_plan_becomes_a_reshape(project):
    result = optimize_cli(project, 'search(query: "x")\ncreate_ticket(title: "t")\nsearch(query: "x")\n')
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == 'search(query: "x")'  # the ticket is between: nothing removed
    result = optimize_cli(project, 'search(query: "x")\nsearch(query: "y")\nsearch(query: "x")\n')
    assert result.stdout == 'search(query: "x")\nsearch(query: "y")\nreshape(value: $1)\n'


def test_clock_now_twice_stays_twice(project):
    text = "clock__now()\nclock__now()\n"
    result = optimize_cli(project, text)
    assert result.exit_code == 0, result.output
    assert result.stdout == text  # read-only, but not deterministic: each call may answer differently
    assert "N600" not in codes(result.stderr)
    assert "N601" in codes(result.stderr)  # still read-only: the two may run at the same time


def test_a_step_that_changes_something_between_two_calls_keeps_both(project):
    text = 'search(query: "disk")\ncreate_ticket(title: "disk")\nsearch(query: "disk")\n'
    result = optimize_cli(project, text)
    assert result.exit_code == 0
    assert result.stdout == text
    assert codes(result.stderr) == []  # create_ticket declares its effects: nothing is missing


def test_different_arguments_or_inputs_are_different_calls(project):
    text = (
        'a = search(query: "x")\nb = search(query: "y")\nsearch(query: "x") |> map(do: { lookup(id: item.id) })\n'
        'lookup(id: "{$a[0].id}")\nlookup(id: "{$b[0].id}")\n'
    )
    result = optimize_cli(project, text)
    assert result.stdout.count("search(") == 2 and result.stdout.count("lookup(") == 3


def test_without_effects_metadata_nothing_is_rewritten_and_a_note_says_what_would_allow_it(project):
    text = 'lookup(id: "a")\nlookup(id: "a")\nlookup(id: "b")\n'
    result = optimize_cli(project, text)
    assert result.exit_code == 0
    assert result.stdout == text
    assert "N600" not in codes(result.stderr) and "N601" not in codes(result.stderr)
    assert codes(result.stderr).count("N602") == 2
    assert "read_only = true, deterministic = true" in result.stderr  # would let step 2 reuse step 1
    assert "`effects = { read_only = true }` for `lookup`" in result.stderr  # would let them run together


def test_without_a_registry_every_tool_is_without_metadata(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.plan").write_text("a(x: 1)\na(x: 1)\n", encoding="utf-8")
    result = invoke("optimize", "p.plan")
    assert result.exit_code == 0
    assert result.stdout == "a(x: 1)\na(x: 1)\n"
    assert set(codes(result.stderr)) == {"N602"}


def test_optimize_refuses_a_plan_with_errors_and_reports_usage_errors(project):
    result = optimize_cli(project, "search(query: 1)\n")
    assert result.exit_code == 1 and "E300" in result.stderr and result.stdout == ""
    result = invoke("optimize", "missing.plan")
    assert result.exit_code == 2 and "no such file" in result.stderr and "Traceback" not in result.output


# --- the schedule -----------------------------------------------------------------------------


def most_at_once(events: list[dict]) -> int:
    """The most calls started and not yet ended at any point of the log."""
    running = most = 0
    for event in events:
        running += 1 if event["event"] == "start" else -1
        most = max(most, running)
    return most


FOUR_SEARCHES = "".join(f's{n} = search(query: "q{n}")\n' for n in range(4)) + "reshape(value: [$s0, $s1, $s2, $s3])\n"


def test_independent_read_only_steps_run_at_the_same_time(project):
    sequential = run_cli(project, FOUR_SEARCHES)
    assert most_at_once(log(project)) == 1
    optimized = run_cli(project, FOUR_SEARCHES, "--optimize")
    assert optimized.exit_code == 0, optimized.output
    assert most_at_once(log(project)) == 4  # every search started before the first one ended
    assert json.loads(optimized.stdout) == json.loads(sequential.stdout)
    assert "steps 1, 2, 3 and 4 run at the same time" in optimized.stderr


def test_a_step_waits_for_what_it_reads(project):
    text = 'a = search(query: "x")\nsearch(query: "{$a[0].id}") |> map(do: { search(query: item.id) })\nsearch(query: "y")\n'
    run_cli(project, text, "--optimize")
    events = [(e["event"], e["query"]) for e in log(project)]
    assert events.index(("end", "x")) < events.index(("start", "x-0"))  # a reference
    assert events.index(("end", "x-0")) < events.index(("start", "x-0-0"))  # a pipe
    assert events.index(("start", "y")) < events.index(("end", "x"))  # y reads nothing


def test_steps_that_change_something_keep_their_place(project):
    text = (
        'search(query: "a")\ncreate_ticket(title: "one")\nsearch(query: "b")\nsearch(query: "c")\n'
        'create_ticket(title: "two")\nsearch(query: "d")\n'
    )
    result = run_cli(project, text, "--optimize")
    assert result.exit_code == 0, result.output
    events = [(e["event"], e.get("query") or e.get("title")) for e in log(project)]
    # Each ticket starts after everything before it ended, and everything after it starts after it ended.
    assert events[:4] == [("start", "a"), ("end", "a"), ("start", "one"), ("end", "one")]
    assert {events[4], events[5]} == {("start", "b"), ("start", "c")}  # b and c overlap
    assert events[8:] == [("start", "two"), ("end", "two"), ("start", "d"), ("end", "d")]


def checked_plan(project, text):
    checked = planc.check(text, registry=load_registry(project / "planc.toml"))
    assert checked.ok, checked.diagnostics
    return checked


def test_the_first_failing_step_in_text_order_is_the_error(project):
    # Step 1 fails after 50 ms, step 2 after 10 ms: one after the other, step 1's error is the run's.
    checked = checked_plan(project, 'fails(x: 5)\nfails(x: 1)\nsearch(query: "later")\n')
    optimized = optimize(checked)
    with pytest.raises(RunError, match="^step 1: `fails` failed: ValueError: broken 5"):
        asyncio.run(run_plan(optimized.checked, registry=checked.context.registry, schedule=optimized.schedule))
    with pytest.raises(RunError, match="^step 1: "):
        asyncio.run(run_plan(checked, registry=checked.context.registry))


def test_a_failure_stops_the_steps_after_it_and_nothing_effectful_runs(project):
    text = 'fails(x: 1)\nsearch(query: "slow")\ncreate_ticket(title: "never")\n'
    result = run_cli(project, text, "--optimize")
    assert result.exit_code == 1 and "step 1: `fails` failed" in result.stderr
    tools = [(e["event"], e["tool"]) for e in log(project)]
    assert ("start", "create_ticket") not in tools
    # The call in flight when step 1 failed is awaited, so the record says what it did.
    assert tools.count(("start", "search")) == tools.count(("end", "search")) == 1


def test_an_exit_under_the_schedule_ends_the_plan(project):
    text = (
        'a = search(query: "a")\nb = search(query: "b")\n'
        'exit(when: $a.length > 1, output: {a: $a[0].id, b: $b[0].id})\ncreate_ticket(title: "never")\n'
    )
    result = run_cli(project, text, "--optimize")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"a": "a-0", "b": "b-0"}
    assert "create_ticket" not in [e["tool"] for e in log(project)]


# --- equivalence: random plans, run one step after the other and optimized --------------------

EQUIVALENCE_TOOLS = """
import asyncio
import planc

STATE = {"writes": 0, "effects": []}

def reset():
    STATE["writes"] = 0
    STATE["effects"] = []

@planc.tool(read_only=True, deterministic=True, pipe="x")
async def pure(x: int) -> int:
    await asyncio.sleep((x % 3) / 1000)
    return x * 2 + 1

@planc.tool(read_only=True, deterministic=True)
async def pair(x: int, y: int) -> int:
    await asyncio.sleep((y % 2) / 1000)
    return x + y

@planc.tool(read_only=True, deterministic=True)
async def peek(x: int) -> int:
    # Deterministic as far as a plan can tell: only a write between two reads changes it.
    await asyncio.sleep((x % 2) / 1000)
    return STATE["writes"] * 10 + x

@planc.tool(read_only=True, deterministic=True)
async def fragile(x: int) -> int:
    await asyncio.sleep((x % 3) / 1000)
    if x == 7:
        raise ValueError("seven")
    return x + 3

@planc.tool(destructive=False)
async def write(x: int) -> int:
    await asyncio.sleep((x % 2) / 1000)
    STATE["writes"] += 1
    STATE["effects"].append(("write", x))
    return STATE["writes"]

@planc.tool
async def undeclared(x: int) -> int:
    STATE["writes"] += 1
    STATE["effects"].append(("undeclared", x))
    return x
"""

EQUIVALENCE_TOML = "".join(
    f'[tools.{name}]\nprovider = "python:{{module}}:{name}"\n\n'
    for name in ("pure", "pair", "peek", "fragile", "write", "undeclared")
)


@pytest.fixture(scope="module")
def equivalence(tmp_path_factory):
    folder = tmp_path_factory.mktemp("equivalence")
    with tool_project(folder, "equivtools", EQUIVALENCE_TOOLS, EQUIVALENCE_TOML) as module:
        sys.path.insert(0, str(folder))
        registry = load_registry(folder / "planc.toml")
        import importlib

        yield registry, importlib.import_module(module)
        sys.path.remove(str(folder))


@st.composite
def random_plans(draw) -> str:
    """Plans over the equivalence tools: every step's result is an integer or a list of them."""
    lines: list[str] = []
    kinds: dict[int, str] = {}  # labelled step number -> "int" or "list"

    def value(number: int) -> str:
        earlier = list(kinds)
        if earlier and draw(st.booleans()):
            target = draw(st.sampled_from(earlier))
            return f"$s{target}" + ("[0]" if kinds[target] == "list" else "")
        return str(draw(st.integers(0, 7)))

    for number in range(1, draw(st.integers(2, 9)) + 1):
        kind = draw(
            st.sampled_from(["pure", "pure", "pair", "peek", "fragile", "write", "undeclared", "map", "decide", "exit", "pipe"])
        )
        if kind == "pipe" and kinds.get(number - 1) == "int":
            lines[-1] += " |> pure()"  # not labelled: nothing refers to it
            continue
        label = f"s{number} = "
        if kind in ("pure", "peek", "fragile", "write", "undeclared", "pipe"):
            step = f"{'pure' if kind == 'pipe' else kind}(x: {value(number)})"
        elif kind == "pair":
            step = f"pair(x: {value(number)}, y: {value(number)})"
        elif kind == "map":
            inner = draw(st.sampled_from(["pure", "write", "peek"]))
            step = f"map(over: [{value(number)}, {value(number)}], do: {{ {inner}(x: item) }})"
        elif kind == "decide":
            step = (
                f"decide(when: {value(number)} > 4, then: {{ write(x: {value(number)}) }}, else: {{ pure(x: {value(number)}) }})"
            )
        else:
            step = f"exit(value: {value(number)}, when: {value(number)} > 6, output: [{value(number)}])"
        kinds[number] = "list" if kind == "map" else "int"
        lines.append(label + step)
    if draw(st.booleans()):
        lines.append("reshape(value: [" + ", ".join(f"$s{n}" for n in kinds) + "])")
    return "\n".join(lines) + "\n"


def outcome(checked, registry, tools, schedule=None):
    """(the result or the error with step numbers left out, the effectful calls in order)."""
    tools.reset()
    try:
        result = asyncio.run(run_plan(checked, registry=registry, schedule=schedule))
        ended = (result.status, result.value)
    except RunError as error:
        ended = ("failed", re.sub(r"step \d+", "step N", str(error)))
    return ended, list(tools.STATE["effects"])


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=random_plans())
def test_an_optimized_run_has_the_same_result_and_effects_as_the_plan(equivalence, text):
    registry, tools = equivalence
    checked = planc.check(text, registry=registry)
    assert checked.ok, (text, [(d.code, d.message) for d in checked.diagnostics if d.is_error])
    optimized = optimize(checked)
    assert optimized.checked.ok
    assert outcome(optimized.checked, registry, tools, optimized.schedule) == outcome(checked, registry, tools), text


def test_a_tool_that_declares_the_default_effects_has_metadata(project):
    toml = project / "planc.toml"
    module = re.search(r'provider = "python:(\w+):create_ticket"', toml.read_text()).group(1)
    toml.write_text(
        toml.read_text() + f'\n[tools.purge]\nprovider = "python:{module}:create_ticket"\n'
        'params = { title = { type = "string" } }\nrequired = ["title"]\n'
        "effects = { destructive = true }\n",
        encoding="utf-8",
    )
    result = optimize_cli(project, 'search(query: "disk")\npurge(title: "disk")\nsearch(query: "disk")\n')
    assert result.exit_code == 0, result.output
    assert codes(result.stderr) == []  # purge said what it does: nothing is missing, nothing to suggest
    result = optimize_cli(project, 'search(query: "disk")\nlookup(id: "disk")\nsearch(query: "disk")\n')
    assert set(codes(result.stderr)) == {"N602"} and "`lookup`" in result.stderr  # lookup declares no effects
