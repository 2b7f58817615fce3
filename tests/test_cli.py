"""The `planc` command as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import invoke, planc_completed

from planc.syntax.format import format_source
from planc.syntax.parser import parse

GOOD = 'search(query: "outages", limit: 5)\n  |> summarize(style: "bullets")\n'
BAD = 'search(query: "outages")\n  |> summarize(style: bullets)\n'
REPLY = (
    "Sure! I will search first, then summarise.\n"
    "\n"
    "```plan\n"
    'search(query: "x")\n'
    "  |> summarize(style: bullets)\n"
    "```\n"
    "Let me know if you need more.\n"
)


@pytest.fixture
def files(tmp_path, monkeypatch):
    """Write plan files into a fresh working directory: files(name=text) -> None."""
    monkeypatch.chdir(tmp_path)

    def write(**texts: str) -> None:
        for name, text in texts.items():
            (tmp_path / name.replace("_", ".")).write_text(text, encoding="utf-8")

    return write


def check_json(*args: str) -> list[dict]:
    result = invoke("check", "--format", "json", *args)
    assert result.exit_code in (0, 1), result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


# --- planc check: exit codes -------------------------------------------------------------


def test_check_exits_0_on_a_valid_plan(files):
    files(good_plan=GOOD)
    result = invoke("check", "good.plan")
    assert result.exit_code == 0
    assert "good.plan: ok, 2 steps" in result.stdout


def test_check_exits_1_on_errors_and_renders_them_rustc_style(files):
    files(bad_plan=BAD)
    result = invoke("check", "bad.plan")
    assert result.exit_code == 1
    out = result.stdout
    assert "error[E206]" in out
    assert "--> bad.plan:2:23" in out
    assert "  |> summarize(style: bullets)" in out
    assert "\n  | " + " " * 22 + "^" * 7 + "\n" in out
    assert 'help: did you mean the string "bullets"?' in out
    assert "bad.plan: 1 error" in out


def test_check_exits_1_when_any_of_several_files_has_errors(files):
    files(good_plan=GOOD, bad_plan=BAD)
    assert invoke("check", "good.plan", "good.plan").exit_code == 0
    assert invoke("check", "good.plan", "bad.plan").exit_code == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "missing.plan"], "missing.plan: no such file"),
        (["check", "empty"], "a folder with no .plan file"),
        (["check", "latin1.plan"], "not UTF-8"),
        (["fmt", "missing.plan"], "missing.plan: no such file"),
        (["show", "missing.plan"], "missing.plan: no such file"),
    ],
)
def test_unreadable_files_exit_2_with_one_clean_line(files, tmp_path, args, message):
    (tmp_path / "latin1.plan").write_bytes(b'a(x: "caf\xe9")\n')
    (tmp_path / "empty").mkdir()
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_usage_errors_exit_2(files):
    files(good_plan=GOOD)
    assert invoke("check").exit_code == 2
    assert invoke("check", "--format", "xml", "good.plan").exit_code == 2


def test_check_reads_standard_input():
    result = invoke("check", "-", input="a(x: $2)\n")
    assert result.exit_code == 1
    assert "--> -:1:6" in result.stdout


def test_the_installed_command_in_a_real_process(tmp_path):
    (tmp_path / "good.plan").write_text(GOOD, encoding="utf-8")
    (tmp_path / "bad.plan").write_text(BAD, encoding="utf-8")

    def call(*args):
        return planc_completed(*args, cwd=tmp_path)

    ok = call("check", "good.plan")
    assert ok.returncode == 0
    assert ok.stderr.startswith("warning: no planc.toml was found for good.plan")  # its tools are not checked
    bad = call("check", "--format", "line", "bad.plan")
    assert bad.returncode == 1
    assert bad.stdout.startswith("bad.plan:2:23: E206 bare word `bullets`")
    missing = call("check", "missing.plan")
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert missing.stderr.strip().splitlines() == ["Error: missing.plan: no such file"]
    assert "\x1b[" not in bad.stdout, "colour only on a terminal"


# --- planc check: every syntax and resolution code, where it points ----------------------

CODE_CASES = [
    # (code, plan, line, column, text at the span, a hint contains / fix replacement)
    ("E100", 'search(query: "x"\n       limit: 5)', 2, 8, "limit", "`,`"),
    ("E101", 'a()\nsummarize(style: "bullets)', 2, 18, '"bullets)', '"""'),
    ("E102", 'a()\nsearch("sev2 outages", limit: 50)', 2, 8, '"sev2 outages"', "name:"),
    ("E103", "a()\nsummarize(style: 'bullets')", 2, 18, "'bullets'", '"bullets"'),
    ("E104", "# nothing to do\n\n", 1, 1, "", "at least one step"),
    ("E105", 'search(query: "a",\n       query: "b")', 2, 8, 'query: "b"', "line 1, column 8"),
    ("E203", 'summarize(text: $2)\nsearch(query: "x")', 1, 17, "$2", "before them"),
    ("E204", 'hits = search(query: "x")\nsummarize(text: $hit)', 2, 17, "$hit", "did you mean `$hits`?"),
    ("E205", "hits = a()\nb()\nhits = c()", 3, 1, "hits", "line 1, column 1"),
    ("E206", "a()\n  |> summarize(style: bullets)", 2, 23, "bullets", '"bullets"'),
    ("E207", 'a()\n  |> summarize(text: "Title: {item.title}")', 2, 31, "item", "`do` block"),
]


@pytest.mark.parametrize("code, plan, line, column, text, hint", CODE_CASES, ids=[c[0] for c in CODE_CASES])
def test_each_code_is_reported_where_the_mistake_is(files, code, plan, line, column, text, hint):
    files(case_plan=plan)
    (report,) = check_json("case.plan")
    assert report["ok"] is False
    found = [d for d in report["diagnostics"] if d["code"] == code]
    assert found, report["diagnostics"]
    diagnostic = found[0]
    start, end = diagnostic["span"]["start"], diagnostic["span"]["end"]
    assert (start["line"], start["column"]) == (line, column)
    assert plan[start["offset"] : end["offset"]] == text
    advice = diagnostic["hints"] + ([diagnostic["fix"]["replacement"]] if diagnostic["fix"] else [])
    assert any(hint in piece for piece in advice), advice


def test_resolution_diagnostics_name_the_step_path(files):
    files(case_plan="a() |> map(do: { b(x: accumulator) })\nc(x: $9)")
    (report,) = check_json("case.plan")
    assert [(d["code"], d["step"]) for d in report["diagnostics"]] == [("E207", "2/do.1"), ("E204", "3")]


# --- output formats -----------------------------------------------------------------------

POSITION_KEYS = {"offset", "line", "column"}


def _assert_span(span) -> None:
    assert set(span) == {"start", "end"}
    for position in span.values():
        assert set(position) == POSITION_KEYS
        assert all(type(position[key]) is int for key in POSITION_KEYS)


def test_json_output_has_the_documented_shape(files):
    files(good_plan=GOOD, bad_plan=BAD + "x(y: 1, y: 2)\n")
    result = invoke("check", "--format", "json", "good.plan", "bad.plan")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2, "one JSON object per file, one line each"
    good, bad = map(json.loads, lines)
    for report in (good, bad):
        assert set(report) == {"file", "ok", "diagnostics", "steps", "cost"}
        assert type(report["file"]) is str and type(report["ok"]) is bool
        assert type(report["diagnostics"]) is list and type(report["steps"]) is int
        assert report["cost"] is None or type(report["cost"]) is dict
    assert (good["file"], good["ok"], good["diagnostics"], good["steps"]) == ("good.plan", True, [], 2)
    assert (bad["file"], bad["ok"]) == ("bad.plan", False)
    assert bad["diagnostics"]
    for diagnostic in bad["diagnostics"]:
        assert set(diagnostic) == {"code", "severity", "message", "span", "step", "hints", "fix"}
        assert type(diagnostic["code"]) is str and diagnostic["severity"] in ("error", "warning", "note")
        assert type(diagnostic["message"]) is str and diagnostic["message"]
        _assert_span(diagnostic["span"])
        assert diagnostic["step"] is None or type(diagnostic["step"]) is str
        assert type(diagnostic["hints"]) is list and all(type(h) is str for h in diagnostic["hints"])
        fix = diagnostic["fix"]
        if fix is not None:
            assert set(fix) == {"span", "replacement"} and type(fix["replacement"]) is str
            _assert_span(fix["span"])


def test_json_output_carries_a_cost_object(files):
    files(good_plan=GOOD)
    (report,) = check_json("good.plan")
    assert report["cost"] == {
        "calls": [2, 2],
        "inferences": [0, 0],
        "usd": [0.0, 0.0],
        "latency_ms": {"sequential": [0, 0], "critical_path": [0, 0]},
    }


def test_sarif_output_is_sarif_2_1_0(files):
    files(bad_plan=BAD, good_plan=GOOD)
    result = invoke("check", "--format", "sarif", "bad.plan", "good.plan")
    assert result.exit_code == 1
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    assert "sarif-2.1.0" in log["$schema"]
    (sarif_run,) = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "planc"
    (entry,) = sarif_run["results"]
    assert entry["ruleId"] == "E206"
    assert entry["level"] == "error"
    assert entry["message"]["text"].startswith("bare word `bullets`")
    (location,) = entry["locations"]
    physical = location["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "bad.plan"
    region = physical["region"]
    assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (2, 23, 2, 30)
    assert {rule["id"] for rule in driver["rules"]} == {"E206"}


def test_sarif_rule_help_uris_are_absolute(files):
    files(bad_plan=BAD)
    log = json.loads(invoke("check", "--format", "sarif", "bad.plan").stdout)
    for rule in log["runs"][0]["tool"]["driver"]["rules"]:
        assert "://" in rule.get("helpUri", "https://")


def test_sarif_with_no_problems_has_no_results(files):
    files(good_plan=GOOD)
    result = invoke("check", "--format", "sarif", "good.plan")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["runs"][0]["results"] == []


@pytest.mark.parametrize(
    "plan, quoted",
    [
        (BAD, "`bullets`"),
        ("summarize(style: 'bullets')", "`'bullets'`"),
        ('search(query: "x" limit: 5)', "`limit`"),
        ('search("sev2 outages")', '`"sev2 outages"`'),
    ],
)
def test_repair_output_quotes_the_offending_text(files, plan, quoted):
    files(reply_txt=plan)
    result = invoke("check", "--format", "repair", "reply.txt")
    assert result.exit_code == 1
    assert result.stdout.startswith("Your plan has 1 problem")
    assert f"The text in question: {quoted}" in result.stdout
    assert "\x1b[" not in result.stdout and "^" not in result.stdout


def test_repair_output_for_a_valid_plan(files):
    files(good_plan=GOOD)
    result = invoke("check", "--format", "repair", "good.plan")
    assert (result.exit_code, result.stdout) == (0, "The plan is valid.\n")


def test_extract_points_into_the_original_reply(files):
    files(reply_txt=REPLY)
    assert invoke("check", "reply.txt").exit_code == 1
    (report,) = check_json("--extract", "reply.txt")
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["code"] == "E206"
    span = diagnostic["span"]
    assert REPLY[span["start"]["offset"] : span["end"]["offset"]] == "bullets"
    assert (span["start"]["line"], span["start"]["column"]) == (5, 23)
    assert report["steps"] == 2


def test_extract_accepts_a_fenced_plan_in_prose(files):
    files(reply_txt=REPLY.replace("bullets", '"bullets"'))
    result = invoke("check", "--extract", "reply.txt")
    assert result.exit_code == 0, result.stdout


def test_extract_takes_an_unfenced_plan_out_of_prose(files):
    reply = 'I would run:\nsearch(query: "x")\n  |> summarize(style: bullets)\nThat is all.\n'
    files(reply_txt=reply)
    (report,) = check_json("--extract", "reply.txt")
    assert [(d["code"], d["span"]["start"]["line"], d["span"]["start"]["column"]) for d in report["diagnostics"]] == [
        ("E206", 3, 23)
    ]


# --- planc fmt ----------------------------------------------------------------------------

UGLY = '# find them\nsearch( query:"x" ,limit:5 )|>summarize( ) # then sum\n\n\nb(x: {a: 1,\n})\n'
CANONICAL = '# find them\nsearch(query: "x", limit: 5)\n  |> summarize()  # then sum\n\nb(x: {a: 1})\n'


def test_fmt_prints_the_canonical_form(files):
    files(ugly_plan=UGLY)
    result = invoke("fmt", "ugly.plan")
    assert result.exit_code == 0
    assert result.stdout == CANONICAL


def test_fmt_check_exits_1_on_a_non_canonical_file_and_0_on_a_canonical_one(files):
    files(ugly_plan=UGLY, canonical_plan=CANONICAL)
    ugly = invoke("fmt", "--check", "ugly.plan")
    assert ugly.exit_code == 1
    assert "ugly.plan" in ugly.stderr
    canonical = invoke("fmt", "--check", "canonical.plan")
    assert (canonical.exit_code, canonical.stdout) == (0, "")


def test_fmt_write_rewrites_the_file_and_keeps_comments(files, tmp_path):
    files(ugly_plan=UGLY)
    result = invoke("fmt", "--write", "ugly.plan")
    assert (result.exit_code, result.stdout) == (0, "")
    assert (tmp_path / "ugly.plan").read_text(encoding="utf-8") == CANONICAL
    assert invoke("fmt", "--check", "ugly.plan").exit_code == 0


def test_fmt_refuses_a_plan_with_syntax_errors_and_leaves_it_alone(files, tmp_path):
    files(broken_plan="a(x: 1 2)\n")
    result = invoke("fmt", "--write", "broken.plan")
    assert result.exit_code == 1  # as `planc check` and `planc diff` say of a syntax error
    assert "E100" in result.stderr
    assert (tmp_path / "broken.plan").read_text(encoding="utf-8") == "a(x: 1 2)\n"


@pytest.mark.parametrize(
    "source",
    [
        "a() # trailing\n",
        "# only a header\n\n\na()\n// and a footer\n",
        "a()  # one\nb()  # two\n",
        "decide(when: $1, then: { # inside a block\n  b()\n})\n",
    ],
)
def test_fmt_loses_no_comment_and_is_stable(source):
    formatted = format_source(parse(source))
    comments = [line[line.index("#" if "#" in line else "//") :] for line in source.splitlines() if "#" in line or "//" in line]
    for comment in comments:
        assert comment in formatted
    assert format_source(parse(formatted)) == formatted


TRIAGE_DECIDE = """decide(when: $2.length > 10, then: {
  notify(channel: "#incidents", text: "{$2.length} open incidents: {$4.text}, and more to read")
})
"""
LONG_CALL = (
    'exit(when: $hits.length == 0, status: "error",  # nothing to do\n'
    '     message: "no incidents match the query", output: {query: "certificate expired", matched: 0})\n'
)
LONG_CALL_BROKEN = """exit(
  when: $hits.length == 0,
  status: "error",  # nothing to do
  message: "no incidents match the query",
  output: {query: "certificate expired", matched: 0},
)
"""


def test_fmt_keeps_a_block_that_would_not_fit_on_one_line_over_its_lines(files):
    """`decide`'s block of one step stays over three lines: on one, the line would be 113 characters."""
    files(triage_plan=TRIAGE_DECIDE)
    result = invoke("fmt", "--check", "triage.plan")
    assert result.exit_code == 0, result.stderr
    assert len(TRIAGE_DECIDE.replace("{\n  ", "{ ").replace("\n})", " })").split("\n")[0]) > 100


def test_fmt_breaks_a_long_call_an_argument_a_line_with_its_comments_in_place(files):
    files(gate_plan=LONG_CALL)
    result = invoke("fmt", "gate.plan")
    assert result.exit_code == 0 and result.stdout == LONG_CALL_BROKEN
    files(gate_plan=LONG_CALL_BROKEN)
    assert invoke("fmt", "--check", "gate.plan").exit_code == 0  # and it stays so


def test_fmt_keeps_plans_within_the_width_planc_toml_gives(files, tmp_path):
    files(planc_toml="[fmt]\nwidth = 40\n", p_plan='notify(channel: "#ops", text: "disk full on db-1")\n')
    result = invoke("fmt", "p.plan")
    assert result.exit_code == 0
    assert result.stdout == 'notify(\n  channel: "#ops",\n  text: "disk full on db-1",\n)\n'
    (tmp_path / "planc.toml").write_text("[fmt]\nwidht = 40\n", encoding="utf-8")
    for command in ("fmt", "check"):  # a mistake in the table: one clean message, in every command
        result = invoke(command, "p.plan")
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert "planc.toml:2: unknown key `widht` in `[fmt]`; the keys are width" in result.stderr
    (tmp_path / "planc.toml").write_text("[fmt]\nwidth = 5\n", encoding="utf-8")
    result = invoke("fmt", "p.plan")
    assert result.exit_code == 2 and "`width` must be a whole number of at least 20, found 5" in result.stderr


# --- planc show ---------------------------------------------------------------------------

NESTED = (
    'hits = search(query: "x")\n  |> map(do: { get(id: item.id) |> summarize(text: "{item.title}") })\nnotify(text: "{$hits}")\n'
)


def _nodes(data):
    """Every dictionary of the tree, but for the cost, blast radius and flows `planc show` adds to it."""
    if isinstance(data, dict):
        yield data
        for key, value in data.items():
            if key not in ("cost", "blast_radius", "flows"):
                yield from _nodes(value)
    elif isinstance(data, list):
        for value in data:
            yield from _nodes(value)


def test_show_json_has_kind_and_span_on_every_node(files):
    files(nested_plan=NESTED)
    result = invoke("show", "--format", "json", "nested.plan")
    assert result.exit_code == 0
    tree = json.loads(result.stdout)
    assert tree["kind"] == "plan"
    nodes = [node for node in _nodes(tree) if "kind" in node]
    assert {"plan", "pipeline", "step", "arg", "string", "block", "path", "field", "hole", "ref"} <= {
        node["kind"] for node in nodes
    }
    for node in nodes:
        _assert_span(node["span"])
        text = NESTED[node["span"]["start"]["offset"] : node["span"]["end"]["offset"]]
        assert text or node["kind"] == "plan"
    steps = [node for node in nodes if node["kind"] == "step"]
    assert [(s["tool"], s["label"], s["path"]) for s in steps] == [
        ("search", "hits", "1"),
        ("map", None, "2"),
        ("get", None, "2/do.1"),
        ("summarize", None, "2/do.2"),
        ("notify", None, "3"),
    ]
    for step in steps:
        assert type(step["args"]) is list
        assert all(arg["kind"] == "arg" for arg in step["args"])
    # every dictionary in the tree is a node, except a fix-free position or span
    for node in _nodes(tree):
        assert "kind" in node or set(node) <= {"start", "end", "offset", "line", "column"}


def test_show_tree_names_the_steps(files):
    files(nested_plan=NESTED)
    result = invoke("show", "nested.plan")
    assert result.exit_code == 0
    out = result.stdout
    for expected in [
        "nested.plan (5 steps)",
        "hits = search",
        "2  map",
        "2/do.1  get",
        "2/do.2  summarize",
        "3  notify",
        'query: "x"',
    ]:
        assert expected in out, out


REGISTRY = """
[tools.search]
params = { query = { type = "string" }, limit = { type = "integer", maximum = 100 } }
returns = { type = "array" }
returns_at_most = "limit"
effects = { read_only = true, destructive = false, open_world = false }
cost = { usd = 0.01, latency_ms = 40 }

[tools.notify]
params = { text = { type = "string" } }
effects = { read_only = false, destructive = false, open_world = true }

[tools.purge]
params = { id = { type = "string" } }
"""
COSTLY = 'search(query: "x", limit: 3)\n  |> map(do: { purge(id: item.id) })\nnotify(text: "done")\n'


def test_show_tree_has_each_steps_cost_a_total_and_the_blast_radius(files):
    files(costly_plan=COSTLY, planc_toml=REGISTRY)
    result = invoke("show", "costly.plan")
    assert result.exit_code == 0
    out = result.stdout
    for expected in [
        "1  search  1:1  1 call, $0.01, 40 ms",
        "2  map  2:6  0-3 calls",
        "2/do.1  purge  2:16  1 call",
        "3  notify  3:1  1 call",
        "cost: 2-5 calls, 0 inferences, $0.01, 40 ms",
        "effectful (not read-only): 2/do.1 purge, 3 notify",
        "destructive: 2/do.1 purge",
        "open-world: 2/do.1 purge, 3 notify",
    ]:
        assert expected in out, out


def test_show_json_has_each_steps_cost_and_the_blast_radius(files):
    files(costly_plan=COSTLY, planc_toml=REGISTRY)
    result = invoke("show", "--format", "json", "costly.plan")
    assert result.exit_code == 0
    tree = json.loads(result.stdout)
    steps = [node for node in _nodes(tree) if node.get("kind") == "step"]
    assert [(step["path"], step["cost"]["calls"]) for step in steps] == [
        ("1", [1, 1]),
        ("2", [0, 3]),
        ("2/do.1", [1, 1]),
        ("3", [1, 1]),
    ]
    assert tree["cost"]["calls"] == [2, 5] and tree["cost"]["usd"] == [0.01, 0.01]
    assert tree["blast_radius"] == {
        "effectful": [{"path": "2/do.1", "tool": "purge"}, {"path": "3", "tool": "notify"}],
        "destructive": [{"path": "2/do.1", "tool": "purge"}],
        "open_world": [{"path": "2/do.1", "tool": "purge"}, {"path": "3", "tool": "notify"}],
    }


def test_check_prints_the_cost_and_refuses_a_plan_over_budget(files):
    files(costly_plan=COSTLY, planc_toml=REGISTRY)
    result = invoke("check", "costly.plan")
    assert result.exit_code == 0
    assert "cost: 2-5 calls, 0 inferences, $0.01, 40 ms" in result.stdout
    result = invoke("check", "--max-calls", "4", "--max-usd", "1", "--max-inferences", "0", "costly.plan")
    assert result.exit_code == 1
    assert "error[E401]: over budget: the plan may make up to 5 tool calls, and `--max-calls` is 4" in result.stdout
    assert result.stdout.count("E401") == 1
    (report,) = check_json("--max-calls", "5", "costly.plan")
    assert report["ok"] and report["cost"]["calls"] == [2, 5]


def test_a_budget_below_zero_is_a_usage_error(files):
    files(costly_plan=COSTLY)
    result = invoke("check", "--max-usd", "-1", "costly.plan")
    assert result.exit_code == 2


def test_show_exits_1_on_a_plan_with_syntax_errors(files):
    files(broken_plan="a(x: 1 2)\n")
    result = invoke("show", "broken.plan")
    assert result.exit_code == 1
    assert "E100" in result.stderr


# --- planc corpus -------------------------------------------------------------------------

CORPUS = """\
==================
valid pipeline
==================
search(query: "x") |> summarize()
---
ok

==================
positional argument
==================
search("x")
---
E102 1:8

==================
fenced reply [extract]
==================
Here:
```
search(query: "x")
```
---
ok
"""


def pinned_corpus(tmp_path) -> tuple[Path, Path]:
    """A corpus of CORPUS as syntax.txt, its golden output and its baseline written as they are now."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "syntax.txt").write_text(CORPUS, encoding="utf-8")
    baseline = tmp_path / "baseline.json"
    written = invoke("corpus", corpus, "--baseline", baseline, "--update-baseline", "--bless")
    assert written.exit_code == 0, written.output
    assert "syntax" in written.stdout and "3/3" in written.stdout
    assert f"wrote {corpus / 'syntax.out'}" in written.stdout and f"wrote {baseline}" in written.stdout
    assert invoke("corpus", corpus, "--baseline", baseline).exit_code == 0
    return corpus, baseline


def test_a_corpus_case_that_fails_fails_the_corpus(tmp_path):
    corpus, baseline = pinned_corpus(tmp_path)
    (corpus / "syntax.txt").write_text(CORPUS.replace("E102 1:8", "E102 1:9"), encoding="utf-8")
    dropped = invoke("corpus", corpus, "--baseline", baseline)
    assert dropped.exit_code == 1
    assert "FAIL" in dropped.stdout and "positional argument" in dropped.stdout
    assert f"{baseline}: expectation changed: syntax: positional argument: E102 1:8 -> E102 1:9" in dropped.stderr


def test_a_case_missing_added_or_renamed_fails_until_the_baseline_is_updated(tmp_path):
    corpus, baseline = pinned_corpus(tmp_path)
    without = CORPUS.split("==================\nfenced reply")[0]
    (corpus / "syntax.txt").write_text(without, encoding="utf-8")
    missing = invoke("corpus", corpus, "--baseline", baseline)
    assert missing.exit_code == 1
    assert missing.stderr.splitlines()[0] == (f"{baseline}: missing: syntax: fenced reply (in the baseline, not in the corpus)")

    (corpus / "syntax.txt").write_text(CORPUS.replace("valid pipeline", "a valid pipeline"), encoding="utf-8")
    renamed = invoke("corpus", corpus, "--baseline", baseline)
    assert renamed.exit_code == 1
    assert renamed.stderr.splitlines()[0] == f"{baseline}: renamed: syntax: valid pipeline -> a valid pipeline"

    (corpus / "other.txt").write_text(CORPUS, encoding="utf-8")
    added = invoke("corpus", corpus, "--baseline", baseline)
    assert f"{baseline}: added: other: valid pipeline (not in the baseline)" in added.stderr
    assert f"{corpus / 'other.out'}: missing golden file, for the 1 error cases of other.txt" in added.stderr

    updated = invoke("corpus", corpus, "--baseline", baseline, "--update-baseline", "--bless")
    assert updated.exit_code == 0, updated.output
    assert "baseline: renamed: syntax: valid pipeline -> a valid pipeline" in updated.stdout
    assert invoke("corpus", corpus, "--baseline", baseline).exit_code == 0


def test_a_whole_corpus_file_gone_is_named(tmp_path):
    corpus, baseline = pinned_corpus(tmp_path)
    (corpus / "syntax.txt").rename(corpus / "kept.txt")
    (corpus / "kept.txt").write_text(CORPUS.split("==================\npositional")[0], encoding="utf-8")
    (corpus / "syntax.out").unlink()
    gone = invoke("corpus", corpus, "--baseline", baseline)
    assert gone.exit_code == 1
    assert f"{baseline}: missing: syntax (all 3 of its cases: its corpus file is gone)" in gone.stderr


def test_golden_output_pins_the_whole_message_and_only_bless_changes_it(tmp_path, monkeypatch):
    corpus, baseline = pinned_corpus(tmp_path)
    golden = (corpus / "syntax.out").read_text(encoding="utf-8")
    assert golden.startswith(
        "==================\npositional argument\n==================\n"
        'error[E102]: positional argument `"x"`: arguments are passed by name\n'
        " --> plan.plan:1:8\n"
    )
    assert "\n--- repair\nYour plan has 1 problem." in golden and '\n--- json\n{"file": "plan.plan", ' in golden

    import attrs

    from planc.diagnostics import codes

    e102 = codes.CODES["E102"]  # its message reworded, as a change to the table would
    reworded = {form: text.replace("by name", "by their names") for form, text in e102.messages.items()}
    monkeypatch.setitem(codes.CODES, "E102", attrs.evolve(e102, messages=reworded))
    reworded = invoke("corpus", corpus, "--baseline", baseline)
    assert reworded.exit_code == 1
    assert reworded.stderr.startswith(
        f"{corpus / 'syntax.out'}: the output of `positional argument` differs from its golden output:\n"
    )
    assert '-error[E102]: positional argument `"x"`: arguments are passed by name' in reworded.stderr
    assert '+error[E102]: positional argument `"x"`: arguments are passed by their names' in reworded.stderr
    assert (corpus / "syntax.out").read_text(encoding="utf-8") == golden  # checking never writes it

    blessed = invoke("corpus", corpus, "--baseline", baseline, "--bless")
    assert blessed.exit_code == 0 and f"wrote {corpus / 'syntax.out'}" in blessed.stdout
    assert "by their names" in (corpus / "syntax.out").read_text(encoding="utf-8")

    (corpus / "syntax.out").unlink()
    lost = invoke("corpus", corpus, "--baseline", baseline)
    assert lost.exit_code == 1 and lost.stderr.startswith(f"{corpus / 'syntax.out'}: missing golden file")


def test_corpus_with_a_malformed_case_exits_2(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bad.txt").write_text("===\nno separator\n===\nsearch()\n", encoding="utf-8")
    result = invoke("corpus", str(corpus))
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- tables and trees where the output is no terminal ----------------------------------------

INCIDENTS = Path(__file__).resolve().parents[1] / "examples" / "incidents"


@pytest.mark.parametrize(
    "args, whole",
    [
        (["registry", "list", "--config", INCIDENTS / "planc.toml"], "python:incidents.tools:close_incident"),
        (["policy", "explain", INCIDENTS / "close_stale.plan"], "forbid no-destructive"),
        (["show", INCIDENTS / "gate.plan"], 'message: "no incidents match the query"'),
    ],
)
def test_a_table_or_tree_into_a_pipe_or_a_file_keeps_every_cell_whole(args, whole):
    """Not cut at 80 columns: what reads a pipe gets each cell on its line, whole (`--format json` aside)."""
    result = invoke(*args, env={"COLUMNS": None})
    assert "Traceback" not in result.output
    assert whole in result.stdout and "…" not in result.stdout
    assert max(map(len, result.stdout.splitlines())) > 80
    narrow = invoke(*args, env={"COLUMNS": "80"})  # a width said is kept, as rich keeps it
    drawn = [line for line in narrow.stdout.splitlines() if "\u2500" <= line[:1] <= "\u257f"]  # box drawing
    assert drawn and max(map(len, drawn)) <= 80
