"""Attacks on planc's promises where plans nest, loop, time out and fail, and where the policy cannot judge.

Each test uses spy tools that append every call to a file, and asserts the exact calls made (none
where planc refuses), the exit code, the run's recorded status and that no traceback is shown.
The store, interruption and tool-result promises have their own module (test_attacks_store.py).
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli import invoke, planc_completed
from tool_project import tool_project

from planc.store.stored import VERSION

TOOLS = '''
import os, sys, threading

SPY = os.environ["PLANC_TEST_SPY"]
MEETING = threading.Barrier(int(os.environ.get("PLANC_TEST_MEET", "1")), timeout=120)  # a hang guard only


def _called(line):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(line + "\\n")


def append(text):
    _called(f"append {text}")
    return text


def transfer(amount):
    _called(f"transfer {amount}")
    return {"sent": amount}


def hang(x):
    _called(f"hang {x}")
    threading.Event().wait()  # never returns


def leave(code):
    _called(f"leave {code}")
    sys.exit(code)


EXITED = threading.Event()  # set by a test's events hook when a plan has exited


def wait_for_exit(i):
    """Meet (as `meet` does), then return only once the plan has exited (the timeout is a guard against
    a hung test, not a claim about speed)."""
    _called(f"wait_for_exit {i}")
    MEETING.wait()
    EXITED.wait(timeout=120)
    return i


def meet(i):
    _called(f"meet {i}")
    MEETING.wait()  # every call of the map must be in flight at once to get past this
    return i
'''

TOML = """
policy = "policy.cedar"

[tools.append]
provider = "python:{module}:append"
params = {{ text = {{ type = "string" }} }}
required = ["text"]

[tools.transfer]
provider = "python:{module}:transfer"
params = {{ amount = {{ type = "number" }} }}
required = ["amount"]

[tools.hang]
provider = "python:{module}:hang"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
timeout_s = 0.5

[tools.leave]
provider = "python:{module}:leave"
params = {{ code = {{ type = "integer" }} }}
required = ["code"]

[tools.wait_for_exit]
provider = "python:{module}:wait_for_exit"
params = {{ i = {{ type = "integer" }} }}
required = ["i"]

[tools.meet]
provider = "python:{module}:meet"
params = {{ i = {{ type = "integer" }} }}
required = ["i"]

[plans.inner]
file = "inner.plan"
params = {{ limit = {{ type = "integer", default = 2 }} }}

[plans.bad]
file = "bad.plan"

[plans.gone]
file = "gone.plan"

[plans.pay]
file = "pay.plan"
params = {{ amount = {{ type = "number" }} }}

[plans.pay_odd]
file = "pay_odd.plan"
"""

POLICY = """
@id("big-transfers")
forbid(principal, action, resource == Tool::"transfer") when { context.args has amount && context.args.amount > 1000 };

@id("no-appends-in-loops")
forbid(principal, action, resource == Tool::"append") when { context.in_loop };

@id("mallory-may-not-append")
forbid(principal == User::"mallory", action, resource == Tool::"append");

permit(principal, action, resource);
"""

FILES = {
    "policy.cedar": POLICY,
    "inner.plan": 'append(text: "inner {$args.limit}")\n',
    "bad.plan": "append(text: 5)\n",
    "pay.plan": "transfer(amount: $args.amount)\n",
    "pay_odd.plan": 'append(text: "paying")\ntransfer(amount: 5000.5)\n',
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "attacktools", TOOLS, TOML, FILES):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
        monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
        yield tmp_path


def calls(project) -> list[str]:
    spy = project / "spy.log"
    return spy.read_text(encoding="utf-8").splitlines() if spy.exists() else []


def statuses(project) -> list[str]:
    store = project / "runs.sqlite"
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        return [status for (status,) in db.execute("SELECT status FROM runs ORDER BY started_at, id")]


def run(project, text: str, *args: str):
    (project / "p.plan").write_text(text, encoding="utf-8")
    result = invoke("run", "p.plan", *args)
    assert "Traceback" not in result.output
    return result


# --- the policy fails closed ------------------------------------------------------------------------

# Cedar's own words when `big-transfers` compares a decimal with a long: Cedar would skip the policy.
UNEVALUATED = (
    'calling `transfer` is denied (for User::"anonymous"): policy `big-transfers` could not be '
    "evaluated for it: type error: expected long, got decimal"
)
UNHOLDABLE = (
    'calling `transfer` is not permitted (for User::"anonymous"): `context.args.amount` is 0.123456, '
    "which Cedar cannot hold: a decimal has at most 4 digits after the point"
)


def test_a_forbid_cedar_cannot_evaluate_refuses_the_plan_before_any_call(project):
    text = 'append(text: "first")\ntransfer(amount: 5000.5)\n'
    (project / "p.plan").write_text(text, encoding="utf-8")
    check = invoke("check", "--format", "line", "p.plan")
    assert check.exit_code == 1 and check.output == f"p.plan:2:1: E400 {UNEVALUATED}\n"
    result = run(project, text)
    assert result.exit_code == 1 and UNEVALUATED in result.output
    assert calls(project) == [] and statuses(project) == []  # refused before the run was recorded


def test_a_run_time_value_cedar_cannot_evaluate_stops_the_run_before_its_call(project):
    result = run(project, 'transfer(amount: 1)\nreshape(value: 5000.5)\ntransfer(amount: $2)\nappend(text: "after")\n')
    assert result.exit_code == 1 and f"step 3: {UNEVALUATED}" in result.output
    assert calls(project) == ["transfer 1"] and statuses(project) == ["failed"]


@pytest.mark.parametrize(
    "text, args, recorded",
    [
        ('append(text: "first")\ntransfer(amount: 0.123456)\n', (), []),  # refused at check time
        ('append(text: "first")\ntransfer(amount: $args.amount)\n', ("--arg", "amount=0.123456"), ["failed"]),  # at run time
    ],
)
def test_a_value_cedar_cannot_hold_is_refused_saying_so(project, text, args, recorded):
    result = run(project, text, *args)
    assert result.exit_code == 1 and UNHOLDABLE in result.output and "no policy" not in result.output
    assert calls(project) == (["append first"] if recorded else []) and statuses(project) == recorded


def test_a_declared_plan_whose_step_cedar_cannot_evaluate_is_its_callers_error(project):
    result = run(project, 'append(text: "first")\nplan__pay_odd()\n')
    assert result.exit_code == 1 and UNEVALUATED in result.output and "step 2/2 is `transfer` in pay_odd.plan" in result.output
    assert calls(project) == [] and statuses(project) == []


def test_a_declared_plan_given_a_value_cedar_cannot_evaluate_stops_before_its_call(project):
    result = run(project, 'append(text: "first")\nplan__pay(amount: 5000.5)\nappend(text: "after")\n')
    assert result.exit_code == 1 and f"step 2/1: {UNEVALUATED}" in result.output
    assert calls(project) == ["append first"] and statuses(project) == ["failed"]
    assert run(project, "plan__pay(amount: 5000)\n").exit_code == 1 and calls(project) == ["append first"]
    assert run(project, "plan__pay(amount: 5)\n").exit_code == 0 and calls(project) == ["append first", "transfer 5"]


# --- declared plans are checked with their callers ----------------------------------------------


@pytest.mark.parametrize(
    "callee, words",
    [
        ("plan__bad()", "E211"),  # a type error in the plan's file
        ("plan__gone()", "E211"),  # its file is missing
    ],
)
def test_a_declared_plan_that_cannot_run_refuses_its_caller_before_any_call(project, callee, words):
    text = f'append(text: "first")\n{callee}\n'
    (project / "p.plan").write_text(text, encoding="utf-8")
    for command in ("check", "compile"):
        result = invoke(command, "p.plan", *(["-o", "p.json"] if command == "compile" else []))
        assert result.exit_code == 1 and words in result.output and "Traceback" not in result.output
    result = run(project, text)
    assert result.exit_code == 1 and words in result.output
    assert calls(project) == [] and statuses(project) == []  # refused before the run was recorded


def test_a_syntax_error_in_a_declared_plan_is_its_callers_error(project):
    (project / "bad.plan").write_text('append(text: "x"\n', encoding="utf-8")
    result = run(project, 'append(text: "first")\nplan__bad()\n')
    assert result.exit_code == 1 and "E211" in result.output and "bad.plan:1:" in result.output
    assert calls(project) == []


def test_a_declared_plan_is_judged_inside_the_callers_loop(project):
    """`forbid ... when { context.in_loop }` cannot be bypassed by moving the call into a plan."""
    result = run(project, 'append(text: "first")\nmap(over: [1, 2], do: { plan__inner() })\n')
    assert result.exit_code == 1
    assert "E400" in result.output and "no-appends-in-loops" in result.output and "2/do.1/1" in result.output
    assert calls(project) == [] and statuses(project) == []


def test_a_declared_plan_is_judged_for_the_callers_principal(project):
    result = run(project, "plan__inner()\n", "--principal", 'User::"mallory"')
    assert result.exit_code == 1 and "mallory-may-not-append" in result.output
    assert calls(project) == []
    assert run(project, "plan__inner()\n").exit_code == 0 and calls(project) == ["append inner 2"]


def test_a_declared_plan_run_directly_takes_its_declared_params(project):
    result = invoke("run", "inner.plan", "--arg", "limit=many")
    assert result.exit_code == 1 and "`limit` is invalid" in result.output and "Traceback" not in result.output
    result = invoke("run", "inner.plan", "--arg", "limt=3")
    assert result.exit_code == 1 and "no parameter `limt`" in result.output
    assert calls(project) == [] and statuses(project) == []
    assert invoke("run", "inner.plan").exit_code == 0 and calls(project) == ["append inner 2"]  # its default


def test_editing_a_declared_plan_makes_a_compiled_caller_stale(project):
    (project / "p.plan").write_text("plan__inner()\n", encoding="utf-8")
    assert invoke("compile", "p.plan", "-o", "p.json").exit_code == 0
    (project / "inner.plan").write_text('append(text: "something else")\n', encoding="utf-8")
    result = invoke("run", "p.json")
    assert result.exit_code == 1 and "the file of the declared plan `inner` changed" in result.output
    assert calls(project) == [] and statuses(project) == []


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda text: text.replace(f'"version": {VERSION}', f'"version": "{VERSION}"'), "version"),
        (lambda text: text.replace('"policy": null', '"policy": 5'), "not a valid stored plan: at `.policy`"),
        (lambda text: text.replace('"format":', '"version": 3,\n  "format":'), "appears twice"),
    ],
)
def test_a_malformed_stored_plan_is_a_clean_refusal(project, edit, words):
    (project / "p.plan").write_text('append(text: "x")\n', encoding="utf-8")
    (project / "policy.cedar").unlink()
    (project / "planc.toml").write_text((project / "planc.toml").read_text().replace('policy = "policy.cedar"', ""))
    assert invoke("compile", "p.plan", "-o", "p.json").exit_code == 0
    (project / "p.json").write_text(edit((project / "p.json").read_text()), encoding="utf-8")
    result = invoke("run", "p.json")
    assert result.exit_code == 1 and words in result.output and "Traceback" not in result.output
    assert calls(project) == [] and statuses(project) == []


# --- nothing starts after a failure ---------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 2, 10])
def test_a_denied_item_stops_the_map(project, concurrency):
    result = run(project, f"map(over: [5000, 1, 2], concurrency: {concurrency}, do: {{ transfer(amount: item) }})\n")
    assert result.exit_code == 1 and "big-transfers" in result.output
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_resuming_the_failed_run_makes_no_call(project):
    run(project, "map(over: [5000, 1, 2], concurrency: 2, do: { transfer(amount: item) })\n")
    run_id = json.loads(invoke("runs", "--format", "json").stdout)[0]["id"]
    result = invoke("resume", run_id)
    assert result.exit_code == 1 and "big-transfers" in result.output and "Traceback" not in result.output
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_a_failing_filter_item_stops_the_filter(project):
    text = "filter(over: [5000, 1, 2], do: { transfer(amount: item); reshape(value: true) })\n"
    result = run(project, text)
    assert result.exit_code == 1 and calls(project) == [] and statuses(project) == ["failed"]


def test_missing_data_in_an_item_stops_the_map(project):
    text = "map(over: [{a: 1}, {b: 2}, {a: 3}], concurrency: 3, do: { transfer(amount: item.b) })\n"
    result = run(project, text)
    assert result.exit_code == 1 and "there is no field `b`" in result.output
    assert calls(project) == [] and statuses(project) == ["failed"]


def test_an_exit_in_a_map_item_ends_the_plan_and_starts_nothing_more(project, monkeypatch):
    """Items 0 and 1 run at once (their calls meet): item 0 exits after its call; item 1's call, already
    running (it returns only once the exit has happened, as the events say), finishes; items 2 and 3
    never start."""
    import importlib

    import planc
    from planc.backend.calls.hooks import Hooks

    monkeypatch.setenv("PLANC_TEST_MEET", "2")
    monkeypatch.syspath_prepend(str(project))  # the tools module, as planc imports it: one module, one EXITED
    tools = importlib.import_module(f"attacktools_{project.name.replace('-', '_')}")
    checked = planc.check(
        "map(over: [0, 1, 2, 3], concurrency: 2, do: {\n"
        "  decide(when: item == 0, then: { meet(i: item) }, else: { wait_for_exit(i: item) })\n"
        '  exit(when: item == 0, output: "stopped at 0")\n'
        '})\nappend(text: "after")\n',
        registry=planc.load_registry(project / "planc.toml"),
    )
    assert checked.ok, checked.diagnostics

    def events(event):
        if event["event"] == "step_exited":  # sent once the plan's stop is set: nothing starts after it
            tools.EXITED.set()

    result = planc.run(checked, hooks=Hooks(events=events), store=project / "runs.sqlite")
    assert (result.value, result.status) == ("stopped at 0", "ok")
    assert sorted(calls(project)) == ["meet 0", "wait_for_exit 1"] and statuses(project) == ["ok"]


# --- every call is bounded --------------------------------------------------------------------------


def test_a_tool_that_never_returns_fails_at_its_timeout_and_planc_exits(project):
    (project / "p.plan").write_text('hang(x: 1)\nappend(text: "never")\n', encoding="utf-8")
    done = planc_completed("run", "p.plan", cwd=project)  # returns although the tool's thread never does
    assert done.returncode == 1 and "no result within 0.5 s" in done.stderr and "Traceback" not in done.stderr
    assert calls(project) == ["hang 1"] and statuses(project) == ["failed"]
    with sqlite3.connect(project / "runs.sqlite") as db:
        (error,) = db.execute("SELECT error FROM calls WHERE tool = 'hang'").fetchone()
    assert "whether it had its effect is unknown" in error


def test_a_tool_that_exits_is_a_failed_call_not_the_end_of_planc(project):
    result = run(project, 'leave(code: 0)\nappend(text: "never")\n')
    assert result.exit_code == 1 and "SystemExit(0)" in result.output
    assert calls(project) == ["leave 0"] and statuses(project) == ["failed"]


def test_a_map_has_as_many_sync_calls_in_flight_as_its_concurrency(project, monkeypatch):
    """Fifty calls meet at a barrier that opens only when all fifty are in flight at once."""
    monkeypatch.setenv("PLANC_TEST_MEET", "50")
    items = ", ".join(str(i) for i in range(50))
    result = run(project, f"map(over: [{items}], concurrency: 50, do: {{ meet(i: item) }})\n")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == list(range(50)) and len(calls(project)) == 50


# --- the property: no call starts after the first failure ------------------------------------------

PROPERTY_TOOLS = """
import asyncio

RECORD = []  # ("start" | "fail" | "end", x), in the order they happen; the test reads and clears it


async def work(x):
    RECORD.append(("start", x))
    for _ in range(x % 3):
        await asyncio.sleep(0)  # let other items run in between
    if x % 7 == 3:
        RECORD.append(("fail", x))
        raise ValueError(f"item {x} fails")
    RECORD.append(("end", x))
    return x
"""

PROPERTY_TOML = """
policy = "policy.cedar"

[tools.work]
provider = "python:{module}:work"
params = {{ x = {{ type = "integer" }} }}
required = ["x"]
"""

PROPERTY_POLICY = """
@id("no-big-items")
forbid(principal, action, resource == Tool::"work") when { context.args has x && context.args.x >= 900 };
permit(principal, action, resource);
"""


@pytest.fixture(scope="module")
def property_project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("property")
    with tool_project(folder, "propertytools", PROPERTY_TOOLS, PROPERTY_TOML, {"policy.cedar": PROPERTY_POLICY}) as module:
        import importlib
        import sys

        sys.path.insert(0, str(folder))
        try:  # the module `planc run` imports its tool from (the same one: by name), whose RECORD the test reads
            yield folder, importlib.import_module(module)
        finally:
            sys.path.remove(str(folder))


def _items():
    from hypothesis import strategies as st

    # mostly plain items, some that fail in the tool (x % 7 == 3), some the policy denies (>= 900)
    return st.lists(st.one_of(st.integers(0, 99), st.integers(900, 999)), min_size=1, max_size=8)


def _loop():
    from hypothesis import strategies as st

    return st.tuples(st.sampled_from(["map", "filter"]), _items(), st.integers(1, 4), st.one_of(st.none(), st.integers(0, 7)))


def _plan(loops) -> tuple[str, dict]:
    """The plan text, and for each top-level step the list it goes over."""
    lines, lists = [], {}
    for number, (kind, items, concurrency, exit_at) in enumerate(loops, start=1):
        exit_step = f'; exit(when: index == {exit_at}, output: "exited")' if exit_at is not None else ""
        if kind == "map":
            lines.append(f"map(over: {items}, concurrency: {concurrency}, do: {{ work(x: item){exit_step} }})")
        else:
            lines.append(f"filter(over: {items}, do: {{ work(x: item){exit_step}; reshape(value: true) }})")
        lists[str(number)] = items
    return "\n".join(lines) + "\n", lists


def test_no_call_starts_after_the_first_failure(property_project, monkeypatch, tmp_path_factory):
    """For random plans of `map`s and `filter`s whose items fail in the tool, are denied by the policy or
    exit, each run by `planc run`: once the first of these has happened, no tool call starts anywhere in
    the run, and the run ends as that first one says: exit 1 and recorded `failed` after a failure or a
    denial (the message naming the item's step), exit 0 with the exit's output after an exit, and the
    plan's result when nothing stopped it."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st
    from profiles import examples

    folder, tools = property_project
    store = tmp_path_factory.mktemp("property-store") / "runs.sqlite"
    hooked: list = []
    # what `planc run` hands its events to (the --events file) gets them here, as they happen
    monkeypatch.setattr("planc.cli.runs.events_writer", lambda sink, path: hooked[0])

    @settings(max_examples=examples(200))
    @given(st.lists(_loop(), min_size=1, max_size=3))
    def prop(loops):
        text, lists = _plan(loops)
        (folder / "p.plan").write_text(text, encoding="utf-8")
        tools.RECORD.clear()

        def event(event):
            step = event.get("step") or ""
            found = re.fullmatch(r"(\d+)/do\.(\d)\[(\d+)\]", step)
            if event["event"] == "step_started" and found:
                top, inner, index = found.groups()
                item = lists[top][int(index)]
                loop = loops[int(top) - 1]
                if inner == "1" and item >= 900:  # the policy refuses it before the call
                    tools.RECORD.append(("stop", item, step))
                elif inner == "2" and loop[3] is not None and int(index) == loop[3]:
                    tools.RECORD.append(("exit", item, step))

        hooked[:] = [event]
        result = invoke("run", folder / "p.plan", "--config", folder / "planc.toml", "--store", store)
        record = list(tools.RECORD)
        first = next((entry for entry in record if entry[0] in ("fail", "stop", "exit")), None)
        if first is not None:
            late = [entry for entry in record[record.index(first) :] if entry[0] == "start"]
            assert late == [], f"{text}\n{record}"
        run = json.loads(invoke("show-run", "last", "--store", store, "--format", "json").stdout)
        said = f"{text}\n{record}\n{result.output}"
        if first is None:
            assert (result.exit_code, run["status"]) == (0, "ok"), said
        elif first[0] == "exit":
            assert (result.exit_code, run["status"], json.loads(result.stdout)) == (0, "ok", "exited"), said
        else:
            assert (result.exit_code, run["status"]) == (1, "failed"), said
            assert result.stderr.splitlines()[-1].startswith("error: step "), said

    prop()


# --- configuration --------------------------------------------------------------------------------

CODE_TOOL = """
import os
import planc


@planc.tool(read_only=True)
def shout(text: str) -> str:
    with open(os.environ["PLANC_TEST_SPY"], "a", encoding="utf-8") as spy:
        spy.write(f"shout {text}\\n")
    return text.upper()
"""


def test_a_replay_imports_no_tool_module(tmp_path, monkeypatch):
    """A tool declared in code (no `params` in planc.toml) is imported to check and run a plan; its
    replay needs neither the module nor its import."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANC_TEST_SPY", str(tmp_path / "spy.log"))
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    with tool_project(
        tmp_path, "codetools", CODE_TOOL, '[tools.shout]\nprovider = "python:{module}:shout"\n', {"p.plan": 'shout(text: "hi")\n'}
    ) as module:
        ran = invoke("run", "p.plan")
        assert ran.exit_code == 0 and json.loads(ran.stdout) == "HI"
        run_id = json.loads(invoke("runs", "--format", "json").stdout)[0]["id"]
        (tmp_path / f"{module}.py").unlink()
        import sys

        sys.modules.pop(module, None)
        replayed = invoke("replay", run_id)
        assert replayed.exit_code == 0, replayed.output
        assert replayed.stdout == ran.stdout and module not in sys.modules
        assert calls(tmp_path) == ["shout hi"]
