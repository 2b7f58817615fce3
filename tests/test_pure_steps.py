"""The pure steps (numbers, text, lists, dates): each family agrees with a plain Python reference, value for
value and failure for failure, when run as a plan; they cost nothing; bad input fails the step, never the
process; `today` replays as it was read; their names are reserved; docs/language.md's examples run as shown."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import json
import math
import re
import sqlite3
from pathlib import Path

import pytest
from cli import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

import planc
from planc.backend.run.interpreter import run_plan
from planc.backend.state.values import RunError
from planc.registry.steps.linear_regex import search as linear_search
from planc.registry.steps.pure_steps import FAMILIES, PURE_STEPS

ROOT = Path(__file__).resolve().parents[1]
PROPERTY = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Refused(Exception):
    """The reference's word for: this input fails the step."""


def run_step(name: str, inputs: dict):
    """`name` run as a one-step plan with `inputs` (passed as `$args`): ("ok", result) or ("failed", message)."""
    text = f"{name}({', '.join(f'{key}: $args.{key}' for key in inputs)})"
    checked = planc.check(text)
    assert checked.ok, checked.diagnostics
    try:
        return "ok", asyncio.run(run_plan(checked, arguments=inputs)).value
    except RunError as error:
        assert str(error).startswith("step 1: "), error
        assert f"`{name}`" in str(error), error
        return "failed", str(error)


def agrees(name: str, inputs: dict, reference) -> None:
    """The step and the reference give the same result, or both refuse the input."""
    try:
        expected = ("ok", reference(name, inputs))
    except Refused:
        expected = ("failed", None)
    found = run_step(name, inputs)
    assert found[0] == expected[0], (name, inputs, found, expected)
    if found[0] == "ok":
        assert json.dumps(found[1], sort_keys=True) == json.dumps(expected[1], sort_keys=True), (name, inputs)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- numbers


def reference_numbers(name, inputs):
    if name in ("add", "subtract", "multiply", "divide"):
        a, b = inputs["a"], inputs["b"]
        if not (_is_number(a) and _is_number(b)) or (name == "divide" and b == 0):
            raise Refused
        result = {"add": a + b, "subtract": a - b, "multiply": a * b}[name] if name != "divide" else a / b
        if (isinstance(result, int) and abs(result) > 2**53) or (isinstance(result, float) and not math.isfinite(result)):
            raise Refused
        return result
    if name == "round":
        if not _is_number(inputs["value"]):
            raise Refused
        digits = inputs.get("digits", 0)
        return int(round(inputs["value"])) if digits == 0 else float(round(inputs["value"], digits))
    over, field = inputs["over"], inputs.get("field")
    if name == "count":
        return len(over) if field is None else len([i for i in over if isinstance(i, dict) and i.get(field) is not None])
    if field is not None:
        if any(not isinstance(item, dict) or field not in item for item in over):
            raise Refused
        over = [item[field] for item in over]
    if name in ("min", "max"):
        if not over or not (all(map(_is_number, over)) or all(isinstance(v, str) for v in over)):
            raise Refused
        return min(over) if name == "min" else max(over)
    if not all(map(_is_number, over)) or (name == "average" and not over):
        raise Refused
    total = math.fsum(over) if any(isinstance(v, float) for v in over) else sum(over)
    return total if name == "sum" else math.fsum(over) / len(over)


NUMBERS = st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False), st.integers(-(2**60), 2**60))
ODD = st.one_of(st.none(), st.booleans(), st.text(max_size=3))
ITEMS = st.one_of(NUMBERS, st.fixed_dictionaries({"amount": NUMBERS}), st.fixed_dictionaries({"other": NUMBERS}))


@st.composite
def numbers_cases(draw):
    name = draw(st.sampled_from([n for n, pure in PURE_STEPS.items() if pure.family == "numbers"]))
    if name in ("add", "subtract", "multiply", "divide"):
        return name, {"a": draw(NUMBERS | ODD), "b": draw(st.one_of(NUMBERS, st.just(0), ODD))}
    if name == "round":
        return name, {"value": draw(NUMBERS | ODD), "digits": draw(st.integers(0, 6))}
    plain = draw(st.booleans())
    over = draw(st.lists(NUMBERS if plain else ITEMS, max_size=6) | st.lists(NUMBERS | ODD, max_size=4))
    return name, {"over": over, **({} if plain else {"field": "amount"})}


@PROPERTY
@given(numbers_cases())
def test_numbers_agree_with_python(case):
    agrees(*case, reference_numbers)


# --- text


def reference_text(name, inputs):
    text = inputs.get("text")
    if name == "split":
        if inputs["separator"] == "":
            raise Refused
        return text.split(inputs["separator"])
    if name == "join":
        return inputs.get("separator", "").join(inputs["over"])
    if name == "slice":
        return inputs["value"][inputs.get("start", 0) : inputs.get("end")]
    if name == "parse_json":
        try:
            return json.loads(text, parse_constant=lambda constant: (_ for _ in ()).throw(Refused()))
        except json.JSONDecodeError:
            raise Refused from None
    if name == "matches":
        try:
            return bool(re.search(inputs["pattern"], text))
        except re.error:
            raise Refused from None
    simple = {"lines": str.splitlines, "lower": str.lower, "upper": str.upper, "trim": str.strip}
    if name in simple:
        return simple[name](text)
    if name == "replace":
        return text.replace(inputs["old"], inputs["new"])
    if name == "includes":
        return inputs["part"] in text
    return text.startswith(inputs["prefix"])


TEXT = st.text(alphabet='ab,\n \t.{}ÉßA1"', max_size=12)


@st.composite
def text_cases(draw):
    name = draw(st.sampled_from([n for n, pure in PURE_STEPS.items() if pure.family == "text" and n != "matches"]))
    text = draw(TEXT)
    extra = {
        "split": lambda: {"separator": draw(st.sampled_from([",", "\n", "ab", " "]))},
        "join": lambda: {"separator": draw(TEXT)},
        "replace": lambda: {"old": draw(st.text("ab,", min_size=1, max_size=2)), "new": draw(TEXT)},
        "includes": lambda: {"part": draw(TEXT)},
        "starts_with": lambda: {"prefix": draw(TEXT)},
        "slice": lambda: {"start": draw(st.integers(-5, 5)), "end": draw(st.integers(-5, 15))},
    }.get(name, dict)()
    if name == "join":
        return name, {"over": draw(st.lists(TEXT, max_size=4)), **extra}
    if name == "slice":
        return name, {"value": draw(TEXT | st.lists(st.integers(), max_size=5)), **extra}
    if name == "parse_json":
        text = draw(
            TEXT
            | st.recursive(st.none() | st.booleans() | st.integers() | TEXT, lambda inner: st.lists(inner, max_size=3)).map(
                json.dumps
            )
            | st.sampled_from(["NaN", "[1, Infinity]", '{"a": 1}'])
        )
    return name, {"text": text, **extra}


@PROPERTY
@given(text_cases())
def test_text_agrees_with_python(case):
    agrees(*case, reference_text)


# A pattern language small enough to reach the corners: classes, anchors, repeats of groups, alternation.
ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", "^", "$", r"\b", r"\B", "(a|b)", "(?:ab|)"])


@st.composite
def patterns(draw):
    parts = draw(st.lists(st.tuples(ATOMS, st.sampled_from(["", "*", "+", "?", "{2}", "{1,3}", "*?"])), max_size=5))
    pattern = "".join(atom + (repeat if atom not in ("^", "$", r"\b", r"\B") else "") for atom, repeat in parts)
    return f"({pattern})+" if draw(st.booleans()) else pattern


@PROPERTY
@given(patterns(), st.text(alphabet="ab1 \n_", max_size=12))
def test_matches_agrees_with_python_re(pattern, text):
    assert linear_search(pattern, text) == bool(re.search(pattern, text)), (pattern, text)
    agrees("matches", {"text": text, "pattern": pattern}, reference_text)


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "(?<!a)b", "(?i)a", "(?>a)", "a*+", "(?(1)a|b)", "(", "a{5000}"])
def test_a_pattern_that_needs_backtracking_or_is_not_one_fails_the_step(pattern):
    status, message = run_step("matches", {"text": "aaaa", "pattern": pattern})
    assert status == "failed" and "`pattern` is refused" in message


def test_the_pattern_that_makes_re_backtrack_for_ever_is_answered_by_the_automaton():
    """`(a+)+$` against a long run of `a` and a `b`: Python's `re` takes 2^n steps; the automaton reads the
    text once. Thirty thousand characters would not finish with `re` in the age of the universe."""
    assert run_step("matches", {"text": "a" * 30_000 + "b", "pattern": "(a+)+$"}) == ("ok", False)
    assert run_step("matches", {"text": "a" * 30_000, "pattern": "(a+)+$"}) == ("ok", True)


def test_a_pattern_past_regex_chars_fails_the_step(tmp_path):
    (tmp_path / "planc.toml").write_text("[limits]\nregex_chars = 5\n", encoding="utf-8")
    (tmp_path / "p.plan").write_text('matches(text: "abc", pattern: "abcdef")\n', encoding="utf-8")
    result = invoke("run", tmp_path / "p.plan", "--config", tmp_path / "planc.toml", "--store", tmp_path / "runs.sqlite")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "`matches` failed: `pattern` has 6 characters, more than `[limits] regex_chars` (5)" in result.output


# --- lists


def _key(value):
    return json.dumps(value, sort_keys=True)


def reference_lists(name, inputs):
    over, field = inputs.get("over"), inputs.get("field")
    if name == "zip":
        return [{"left": a, "right": b} for a, b in zip(inputs["left"], inputs["right"])]
    if name == "take":
        return over[: inputs["count"]]
    if name == "skip":
        return over[inputs["count"] :]
    if name == "flatten":
        if not all(isinstance(item, list) for item in over):
            raise Refused
        return [part for item in over for part in item]
    keys = over
    if field is not None:
        if any(not isinstance(item, dict) or field not in item for item in over):
            raise Refused
        keys = [item[field] for item in over]
    if name == "pluck":
        return keys
    if name == "sort":
        if not (all(map(_is_number, keys)) or all(isinstance(k, str) for k in keys)):
            raise Refused
        pairs = sorted(zip(keys, range(len(over))), key=lambda pair: pair[0], reverse=inputs.get("descending", False))
        return [over[index] for _, index in pairs]
    if name == "unique":
        kept, seen = [], []
        for item, key in zip(over, keys):
            if _key(key) not in seen:
                seen.append(_key(key))
                kept.append(item)
        return kept
    groups = {}
    for item, key in zip(over, keys):
        groups.setdefault(_key(key), {"key": key, "items": []})["items"].append(item)
    return list(groups.values())


SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", "Y"]), st.none(), st.booleans())
RECORDS = st.fixed_dictionaries({"k": SCALARS}, optional={"n": st.integers(-3, 3)})


@st.composite
def lists_cases(draw):
    name = draw(st.sampled_from([n for n, pure in PURE_STEPS.items() if pure.family == "lists"]))
    if name == "zip":
        return name, {"left": draw(st.lists(SCALARS, max_size=4)), "right": draw(st.lists(SCALARS, max_size=4))}
    if name == "flatten":
        return name, {"over": draw(st.lists(st.lists(SCALARS, max_size=3) | SCALARS, max_size=4))}
    with_field = draw(st.booleans()) or name in ("group_by", "pluck")
    over = draw(st.lists(RECORDS if with_field else st.integers(-5, 5) | SCALARS, max_size=6))
    inputs = {"over": over, **({"field": draw(st.sampled_from(["k", "n"]))} if with_field else {})}
    if name in ("take", "skip"):
        inputs = {"over": over, "count": draw(st.integers(0, 7))}
    if name == "sort":
        inputs["descending"] = draw(st.booleans())
    return name, inputs


@PROPERTY
@given(lists_cases())
def test_lists_agree_with_python(case):
    agrees(*case, reference_lists)


# --- dates


def _date(text):
    try:
        return datetime.date.fromisoformat(text)
    except (TypeError, ValueError):
        raise Refused from None


def reference_dates(name, inputs):
    if name == "parse_date":
        try:
            if "format" in inputs:
                return datetime.datetime.strptime(inputs["text"], inputs["format"]).date().isoformat()
            return datetime.datetime.fromisoformat(inputs["text"]).date().isoformat()
        except ValueError:
            raise Refused from None
    if name == "add_days":
        try:
            return (_date(inputs["date"]) + datetime.timedelta(days=inputs["days"])).isoformat()
        except OverflowError:
            raise Refused from None
    if name == "days_between":
        return (_date(inputs["end"]) - _date(inputs["start"])).days
    return _date(inputs["date"]).strftime(inputs["format"])


DATES = st.dates().map(datetime.date.isoformat) | st.sampled_from(["2024-02-30", "31/05/2024", "", "2024-05-31T10:00"])


@st.composite
def dates_cases(draw):
    name = draw(st.sampled_from([n for n, p in PURE_STEPS.items() if p.family == "dates" and n != "today"]))
    if name == "parse_date":
        text = draw(DATES | st.dates().map(lambda d: d.strftime("%d/%m/%Y")))
        return name, {"text": text, **({"format": "%d/%m/%Y"} if draw(st.booleans()) else {})}
    if name == "add_days":
        return name, {"date": draw(DATES), "days": draw(st.integers(-(10**6), 10**6))}
    if name == "days_between":
        return name, {"start": draw(DATES), "end": draw(DATES)}
    return name, {"date": draw(DATES), "format": draw(st.sampled_from(["%Y", "%d %B %Y", "%j", "x"]))}


@PROPERTY
@given(dates_cases())
def test_dates_agree_with_python(case):
    agrees(*case, reference_dates)


def test_every_pure_step_is_in_a_family_and_drawn_by_its_property():
    drawn = {"numbers": numbers_cases, "text": text_cases, "lists": lists_cases, "dates": dates_cases}
    assert set(drawn) == set(FAMILIES) == {pure.family for pure in PURE_STEPS.values()}


@pytest.mark.parametrize(
    "name, param, default", [(name, param, default) for name, pure in PURE_STEPS.items() for param, default in pure.defaults]
)
def test_a_step_that_leaves_out_a_defaulted_argument_runs_with_the_declared_default(name, param, default):
    """A deterministic pure step runs without merging the declared defaults into its inputs (it is on every
    item of a `map`): its implementation's own default must be the one its parameters declare."""
    implementation = inspect.signature(PURE_STEPS[name].run).parameters[param].default
    assert (implementation, type(implementation)) == (default, type(default))


# --- what a user sees


def _family_examples():
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    section = page[page.index("\n## Pure steps\n") : page.index("\n## Agents\n")]
    found = []
    for family in FAMILIES:
        part = section[section.index(f"\n### {family.capitalize()}\n") :]
        part = part[: part.find("\n### ", 1)] if "\n### " in part[1:] else part
        found += [
            (family, plan, json.loads(result))
            for plan, result in re.findall(r"```plan\n(.*?)```\n\n```json\n(.*?)```", part, re.S)
        ]
    return found


def test_every_family_has_a_section_with_an_example_in_docs():
    assert sorted({family for family, _, _ in _family_examples()}) == sorted(FAMILIES)


@pytest.mark.parametrize(("family", "plan", "result"), _family_examples(), ids=lambda value: str(value)[:12])
def test_the_documented_example_gives_the_documented_result(family, plan, result):
    checked = planc.check(plan)
    assert checked.diagnostics == (), checked.diagnostics
    assert checked.cost.total.to_json()["calls"] == [0, 0] and checked.cost.total.to_json()["usd"] == [0.0, 0.0]
    assert asyncio.run(run_plan(checked)).value == result


# --- promises, attacked with the recording tools of test_run.py (each call appends a line to calls.jsonl)

from test_run import calls, project  # noqa: E402,F401  (project: the recording tools' project, a fixture)


def _runs(project) -> list[tuple]:
    with sqlite3.connect(project / "runs.sqlite") as db:
        return db.execute("SELECT id, status, message FROM runs ORDER BY started_at").fetchall()


def _recorded(project, run_id) -> list[tuple]:
    with sqlite3.connect(project / "runs.sqlite") as db:
        return db.execute("SELECT step, tool, output FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)).fetchall()


BAD_INPUT = """search(query: "disk", limit: 2) |> pluck(field: "title") |> hits = join(separator: ", ")
notify(channel: "#ops", text: "{$hits}")
total = sum(over: [$4.text])
notify(channel: "#ops", text: "never sent: {$total}")
"""  # `notify` declares no `returns`: what `$4.text` is, the check cannot know


def test_bad_input_at_run_time_fails_that_step_cleanly_and_nothing_after_it_runs(project):
    (project / "p.plan").write_text(BAD_INPUT, encoding="utf-8")
    result = invoke("run", "p.plan", "--store", project / "runs.sqlite")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert 'step 5: `sum` failed: item 0 must be a number, found the string "disk 0, disk 1"' in result.output
    assert calls(project) == [
        {"tool": "search", "query": "disk", "limit": 2},
        {"tool": "notify", "channel": "#ops", "text": "disk 0, disk 1"},
    ]
    [(run_id, status, message)] = _runs(project)
    assert status == "failed" and "`sum` failed" in message
    assert [tool for _, tool, _ in _recorded(project, run_id)] == ["search", "notify"]  # a pure step is no call


@pytest.mark.parametrize(
    ("plan", "at", "message"),
    [
        (
            'names = split(text: "a,b", separator: ",")\nsum(over: $names)\n',
            (2, 11),
            "wrong value for `over` of `sum`: expected a list of numbers, found `$names`, a list of strings",
        ),
        (
            'split(text: "a,b", separator: ",") |> average()\n',
            (1, 39),
            "wrong value for `over` of `average`: expected a list of numbers, found the result of the step before, "
            "a list of strings",
        ),
        (
            'search(query: "disk", limit: 2) |> sum(field: "title")\n',
            (1, 36),
            "wrong value for `over` of `sum`: expected a list of objects whose `title` is a number, found the result of "
            "the step before, a list of objects whose `title` is a string",
        ),
        (
            'search(query: "disk", limit: 2) |> max(field: "nope")\n',
            (1, 36),
            "wrong value for `over` of `max`: expected a list of objects whose `nope` is a number or a string",
        ),
    ],
)
def test_a_pure_step_over_items_it_cannot_work_with_is_refused_by_the_check_before_anything_runs(project, plan, at, message):
    """A pure step is typed by its list's items, not the list alone: `sum` of strings is E300 at its `over` (at
    its name, when `over` is piped), and the run calls nothing."""
    (project / "p.plan").write_text(plan, encoding="utf-8")
    result = invoke("run", "p.plan", "--store", project / "runs.sqlite")
    assert result.exit_code == 1 and "Traceback" not in result.output
    checked = planc.check(plan, registry=planc.load_registry(project / "planc.toml"))
    [error] = checked.diagnostics
    assert error.code == "E300" and (error.span.start.line, error.span.start.column) == at
    assert error.message.startswith(message)
    assert calls(project) == [] and not (project / "runs.sqlite").exists() or _runs(project) == []


@pytest.mark.parametrize(
    ("step", "refusal"),
    [
        ("add(a: $1.sent, b: 1)", "argument `a` of `add` is invalid at run time: True is not of type 'number'"),
        ("upper(text: $1.sent)", "argument `text` of `upper` is invalid at run time: True is not of type 'string'"),
        ("round(value: $1.channel)", "argument `value` of `round` is invalid at run time: '#ops' is not of type 'number'"),
        ("reshape(value: $1.sent) |> add(b: 1)", "argument `a` of `add` is invalid at run time: True is not of type 'number'"),
        ("add(a: 1, b: $1.missing)", "`$1.missing`: there is no field `missing` (the fields are `sent`, `channel`, `text`)"),
        ("reshape(value: 1) |> add(b: $1.missing)", "`$1.missing`: there is no field `missing`"),
    ],
)
def test_an_input_the_check_could_not_see_is_refused_at_run_time(project, step, refusal):
    """`notify` declares no `returns`, so the check cannot know what its fields are: a pure step given one
    of the wrong type refuses it when it runs (a bool is no number, though Python's `isinstance` says it is
    an int), as any call refuses a wrong argument, and so does one given a field that is not there; nothing
    after it runs."""
    (project / "p.plan").write_text(
        f'notify(channel: "#ops", text: "first")\n{step}\nnotify(channel: "#ops", text: "never")\n', encoding="utf-8"
    )
    result = invoke("run", "p.plan", "--store", project / "runs.sqlite")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert refusal in result.output
    assert calls(project) == [{"tool": "notify", "channel": "#ops", "text": "first"}]
    [(run_id, status, message)] = _runs(project)
    assert status == "failed" and refusal in message
    assert [tool for _, tool, _ in _recorded(project, run_id)] == ["notify"]


def test_an_input_past_result_bytes_fails_the_step_and_not_the_process(project):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + "\n[limits]\nresult_bytes = 1000\n", encoding="utf-8")
    text = (
        'search(query: "xxxx", limit: 1) |> pluck(field: "title") |> join() |> replace(old: "x", new: "'
        + "y" * 400
        + '")\nnotify(channel: "#ops", text: "{$4}")\n'
    )
    (project / "p.plan").write_text(text, encoding="utf-8")
    result = invoke("run", "p.plan", "--store", project / "runs.sqlite")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "`replace` failed: the result would have" in result.output
    assert [call["tool"] for call in calls(project)] == ["search"]


def test_pure_steps_cost_nothing_and_add_no_call_to_a_plan(project):
    """The cost property for pure steps: adding them to a plan adds no call, inference or spend to its
    range, and the run makes exactly the calls it made without them."""
    bare = 'search(query: "disk", limit: 3)\nnotify(channel: "#ops", text: "{$1[0].title}")\n'
    with_pure = (
        'search(query: "disk", limit: 3) |> sort(field: "severity", descending: true) |> take(count: 2)\n'
        '  |> pluck(field: "title") |> top = join(separator: "; ")\n'
        'n = count(over: $1)\nnow = today()\nnotify(channel: "#ops", text: "{$top} ({$n}, {$now})")\n'
    )
    registry = planc.load_registry(project / "planc.toml")
    costs = [planc.check(text, registry=registry).cost.total.to_json() for text in (bare, with_pure)]
    assert costs[0] == costs[1] and costs[1]["calls"] == [2, 2]
    (project / "p.plan").write_text(with_pure, encoding="utf-8")
    assert invoke("run", "p.plan", "--store", project / "runs.sqlite").exit_code == 0
    assert [call["tool"] for call in calls(project)] == ["search", "notify"]


def test_today_is_recorded_and_a_replay_gives_the_date_the_run_read(project):
    (project / "p.plan").write_text('now = today()\nnotify(channel: "#ops", text: "{$now}")\n', encoding="utf-8")
    first = invoke("run", "p.plan", "--store", project / "runs.sqlite")
    assert first.exit_code == 0, first.output
    [(run_id, _, _)] = _runs(project)
    assert [(step, tool) for step, tool, _ in _recorded(project, run_id)] == [("1", "today"), ("2", "notify")]
    replayed = invoke("replay", run_id, "--store", project / "runs.sqlite")
    assert replayed.exit_code == 0 and replayed.stdout == first.stdout, replayed.output
    # A copy of the store, as if the run had read another day (not `*.sqlite`: test_replay_every_run
    # replays every store the session leaves, and this one no longer agrees with its own calls).
    tampered = project / "tampered.db"
    tampered.write_bytes((project / "runs.sqlite").read_bytes())
    with sqlite3.connect(tampered) as db:
        db.execute("UPDATE calls SET output = ? WHERE run_id = ? AND tool = 'today'", ('"1999-12-31"', run_id))
    replayed = invoke("replay", run_id, "--store", tampered)
    # the replay takes the date from the record, not the clock, so `notify` now differs from what was recorded
    assert replayed.exit_code == 1 and "Traceback" not in replayed.output
    assert 'step 2: replay diverged: `notify` is called with `text`: "1999-12-31"' in replayed.output
    assert len(calls(project)) == 1  # neither replay sent anything


BASE = [
    'rows = spending(month: "2024-05")',
    'map(over: [1, 2], do: { notify(channel: "#a", text: "{item}") })',
    'notify(channel: "#b", text: "{$rows.length}")',
]


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, len(BASE)), st.sampled_from(sorted(PURE_STEPS))), max_size=8))
def test_pure_steps_anywhere_add_nothing_to_what_a_plan_may_cost(inserted):
    """The cost property: any pure steps, anywhere (top level or in a block), leave the plan's range of
    calls, inferences, dollars and latency exactly as it was."""
    from planc.registry.tools.signatures import example_call

    registry = planc.load_registry(ROOT / "corpus" / "pure" / "planc.toml")
    lines = list(BASE)
    for position, name in sorted(inserted, reverse=True):
        call = example_call(PURE_STEPS[name].tool)
        lines.insert(position, call if position != 1 else f"map(over: [1], do: {{ {call} }})")
    before, after = (planc.check("\n".join(text), registry=registry) for text in (BASE, lines))
    assert after.ok, after.diagnostics
    assert after.cost.total.to_json() == before.cost.total.to_json()


@pytest.mark.parametrize("name", ["sum", "today", "split", "group_by"])
def test_a_planc_toml_tool_may_not_take_a_pure_steps_name(tmp_path, name):
    (tmp_path / "planc.toml").write_text(f'[tools.{name}]\nprovider = "mcp:x"\n', encoding="utf-8")
    (tmp_path / "p.plan").write_text(f"{name}()\n", encoding="utf-8")
    result = invoke("check", tmp_path / "p.plan", "--config", tmp_path / "planc.toml")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"`{name}` is a pure step planc runs itself: the name is reserved" in result.output
