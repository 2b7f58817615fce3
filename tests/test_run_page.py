"""`planc show-run RUN --format html`: a recorded run as one self-contained page (planc.pictures.run_page),
loaded in a real headless Chromium (tests/browser.py) and read as a person would read it.

The run: a search whose results are hostile HTML, a filter that asks the judge model about each one
(so the hostile text is in the model's messages too), and a map whose first notification fails.
"""

from __future__ import annotations

import json
import re

import pytest
from browser import loaded_dom, needs_chromium, parse_html
from cli import invoke
from model_server import model_server  # noqa: F401  (the loopback model server fixture)
from tool_project import tool_project

from planc.pictures.run_page import render_run_page

SCRIPT = "<script>document.title='pwned'</script>"
IMAGE = "<img src=x onerror=\"document.title='pwned'\">"
ERROR = "pager is down: <b>no route</b> & </pre><script>document.title='pwned'</script>"

TOOLS = f"""
def search(query, limit=2):
    return [{{"id": "I1", "title": {SCRIPT!r}}}, {{"id": "I2", "title": {IMAGE!r}}}][:limit]

def notify(channel, text):
    raise RuntimeError({ERROR!r})
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, default = 2 }} }}
required = ["query"]
effects = {{ read_only = true }}

[tools.notify]
provider = "python:{module}:notify"
params = {{ channel = {{ type = "string" }}, text = {{ type = "string" }} }}
required = ["channel", "text"]
"""

PLAN = """search(query: "disk")
  |> filter(infer: "Is {item.title} worth a page?")
map(over: $2, do: { notify(channel: "#ops", text: item.title) })
"""


@pytest.fixture
def failed_run(tmp_path, monkeypatch, model_server):  # noqa: F811
    """The run (failed) and its page: (run id, the page's path, the run as `--format json` gives it)."""
    with tool_project(tmp_path, "runpagetools", TOOLS, TOML, {"p.plan": PLAN}):
        monkeypatch.chdir(tmp_path)
        with (tmp_path / "planc.toml").open("a", encoding="utf-8") as toml:
            toml.write(
                f'\n[models.default]\nbase_url = "{model_server.url}"\nmodel = "m"\napi_key_env = "PLANC_TEST_MODEL_KEY"\n'
            )
        monkeypatch.setenv("PLANC_TEST_MODEL_KEY", "secret")
        model_server.reply("Yes.")
        model_server.reply("Yes")
        ran = invoke("run", "p.plan", "--store", "runs.sqlite")
        assert ran.exit_code == 1, ran.output
        run_id = ran.stderr.split("run: ")[1].split()[0]
        shown = invoke("show-run", run_id, "--store", "runs.sqlite", "--format", "html")
        assert shown.exit_code == 0, shown.output
        page = tmp_path / "run.html"
        page.write_text(shown.stdout, encoding="utf-8")
        recorded = json.loads(invoke("show-run", run_id, "--store", "runs.sqlite", "--format", "json").stdout)
        yield run_id, page, recorded


def test_the_page_is_self_contained_and_holds_no_markup_from_the_record(failed_run):
    _, page, _ = failed_run
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text and "<img" not in text
    assert re.findall(r"(?:src|href)=\"([^\"#][^\"]*)\"", text) == []  # nothing to load: only in-page links
    assert "@import" not in text and "url(" not in text
    assert "Content-Security-Policy\" content=\"default-src 'none'" in text
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in text


@needs_chromium
def test_a_browser_shows_the_run_and_runs_nothing_from_it(failed_run):
    run_id, page, recorded = failed_run
    dom = loaded_dom(page)
    assert dom.find("title").text() == f"planc run {run_id}: failed"  # unchanged: no script ran
    assert dom.find_all("script") == [] and dom.find_all("img") == []  # the hostile markup stayed text
    assert dom.find(id="run-id").text() == run_id and dom.find(id="run-status").text() == "failed"
    assert "step 3/do.1[0]: `notify` failed" in dom.find(id="run-message").text()

    steps = {row.attributes["data-step"]: row for row in dom.find_all("details", "step")}
    assert list(steps) == ["1", "2", "3", "3/do.1[0]"]  # a row per step, in the order they started
    took = {path: row.find("span", "took").text() for path, row in steps.items()}
    assert all(re.fullmatch(r"\d+(\.\d)? ms|\d+\.\d\d s", took[path]) for path in steps), took
    # the map failed with its item: it ended then, and shows as failed, open, as its item does
    assert [steps[path].attributes["data-outcome"] for path in ("3", "3/do.1[0]")] == ["failed", "failed"]
    assert all("failed" in steps[path].attributes["class"].split() for path in ("3", "3/do.1[0]"))
    for row in steps.values():
        assert re.fullmatch(r"left:\d+\.\d\d%;width:\d+\.\d\d%", row.find("span", "bar").attributes["style"])

    failed = steps["3/do.1[0]"]
    assert "failed" in failed.classes and "open" in failed.attributes  # what went wrong shows unasked
    assert failed.find("pre", "error").text() == f"step 3/do.1[0]: `notify` failed: RuntimeError: {ERROR}"
    assert json.loads(failed.find_all("pre")[0].text()) == {"channel": "#ops", "text": SCRIPT}

    result = json.loads(steps["1"].find_all("pre")[1].text())  # the search's result, as the text it was
    assert result == [{"id": "I1", "title": SCRIPT}, {"id": "I2", "title": IMAGE}]

    judged = dom.find_all("details", "inference")
    assert [row.attributes["data-step"] for row in judged] == ["2[0]", "2[1]"]
    assert [row.attributes["data-tool"] for row in judged] == ["model:judge", "model:judge"]
    conversations = dom.find(id="inferences").find_all("article")
    assert [article.find("pre", "reply").text() for article in conversations] == ["Yes.", "Yes"]
    first = conversations[0].find_all("div", "message-turn")
    assert [turn.find("span", "role").text() for turn in first] == ["system", "user"]
    assert first[1].find("pre").text() == f"Is {SCRIPT} worth a page?"
    assert conversations[1].find_all("div", "message-turn")[1].find("pre").text() == f"Is {IMAGE} worth a page?"
    assert [call["step"] for call in recorded["calls"]] == ["1", "2[0]", "2[1]", "3/do.1[0]"]

    lines = [item.text() for item in dom.find(id="plan").find_all("li")]
    assert lines == PLAN.rstrip("\n").split("\n")
    assert "None: the run is failed." in dom.find(id="output").text()


@needs_chromium
def test_the_browser_check_would_see_a_script_run(tmp_path):
    """The checks above can fail: the same browser, given a page with a real script, runs it."""
    page = tmp_path / "scripted.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><title>planc</title></head><body>{SCRIPT}{IMAGE}</body></html>", encoding="utf-8"
    )
    dom = loaded_dom(page)
    assert dom.find("title").text() == "pwned" and len(dom.find_all("script")) == 1


def _run(**fields) -> dict:
    """A run as the store reads one, with `fields` changed."""
    run = {
        "id": "r1",
        "started_at": 100.0,
        "finished_at": 102.0,
        "status": "ok",
        "plan": {"source": "a()\n"},
        "arguments": {},
        "output": None,
        "message": None,
        "options": {},
        "calls": [],
        "events": [],
    }
    return run | fields


def test_a_run_still_running_shows_its_open_call_to_the_last_thing_recorded():
    events = [{"at": 100.0, "event": "run_started"}, {"at": 100.5, "event": "step_started", "step": "1", "tool": "a"}]
    calls = [
        {
            "sequence": 1,
            "step": "1",
            "tool": "a",
            "input": {},
            "output": None,
            "error": None,
            "started_at": 101.0,
            "finished_at": None,
        }
    ]
    dom = parse_html(render_run_page(_run(finished_at=None, status="running", events=events, calls=calls)))
    row = dom.find("details", "step")
    assert row.attributes["data-outcome"] == "unknown" and "unfinished" in row.classes
    bar = row.find("span", "bar").attributes["style"]
    assert bar == "left:50.00%;width:50.00%"  # from the step's start to the call's, the last time recorded
    assert "the run stopped during the call" in row.text()
    assert dom.find(id="output").text().endswith("None: the run is running.")


def test_a_planning_run_without_a_plan_shows_its_rounds():
    call = {
        "sequence": 1,
        "step": "plan",
        "tool": "model:planner",
        "input": {"messages": [{"role": "user", "content": "do it"}], "tools": []},
        "output": {"content": "```\nx(\n```", "tool_calls": []},
        "error": None,
        "started_at": 100.0,
        "finished_at": 101.0,
    }
    dom = parse_html(render_run_page(_run(plan=None, status="failed", calls=[call], options={"planned": {"task": "do <it>"}})))
    assert "No plan was recorded" in dom.find(id="plan").text()
    assert dom.find("details", "inference").attributes["data-step"] == "plan"
    assert dom.find(id="inferences").find("pre", "reply").text() == "```\nx(\n```"
    assert "do <it>" in dom.find("dl", "facts").text()


def test_a_huge_value_is_cut():
    dom = parse_html(render_run_page(_run(output="x" * 200_000)))
    shown = dom.find(id="output").find("pre").text()
    assert len(shown) < 60_000 and "more characters" in shown
