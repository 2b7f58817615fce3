"""`ask`: `planc run` on a terminal asks the person, `--answers FILE` answers unattended runs, questions
come one at a time, and what came of each question is recorded, so a replay asks nobody and a resume asks
again only a question left open. The tools are the recording ones of test_run.py (calls.jsonl)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import threading

import pytest
from cli import invoke
from terminal import Terminal, needs_a_terminal
from test_run import calls, check
from test_run import project as tools_project  # noqa: F401  (the recording tools' project)

from planc.backend.calls.hooks import Hooks, Question, Unanswered
from planc.backend.run.interpreter import run_plan
from planc.backend.state.interrupts import Interrupts, TerminalLine

OWNERS = """map(over: ["web", "db", "cache"], concurrency: 3, do: {
  owner = ask(question: "Who owns {item}?")
  notify(channel: "#ops", text: "{item}: {$owner}")
})
"""


@pytest.fixture
def project(tools_project, monkeypatch):
    """The recording tools' project, recording its runs into its own store."""
    monkeypatch.setenv("PLANC_STORE", str(tools_project / "runs.sqlite"))
    return tools_project


def write(project, text: str, name: str = "p.plan") -> str:
    (project / name).write_text(text, encoding="utf-8")
    return name


def run_of(project) -> tuple[str, str, list[tuple]]:
    """The last run's id and status, and its recorded calls: (step, tool, input, outcome)."""
    with sqlite3.connect(project / "runs.sqlite") as db:
        run_id, status = db.execute("SELECT id, status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        rows = db.execute("SELECT step, tool, input, outcome FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)).fetchall()
    return run_id, status, [(step, tool, json.loads(given), outcome) for step, tool, given, outcome in rows]


def sent(project) -> list[str]:
    return [call["text"] for call in calls(project) if call["tool"] == "notify"]


@needs_a_terminal
def test_planc_run_on_a_terminal_asks_the_person_one_question_at_a_time(project):
    terminal = Terminal("run", write(project, OWNERS), cwd=project)
    asked = []
    for number in range(1, 4):
        terminal.until("Who owns ", number)  # the next question, once the one before is answered
        shown = terminal.text
        assert shown.count("Who owns ") == number  # never a second question while one is open
        item = shown[shown.rindex("Who owns ") + len("Who owns ") :].split("?")[0]
        asked.append(item)
        terminal.type(f"{item}-team\n")
    code, out, screen = terminal.end()
    assert code == 0, screen
    assert sorted(asked) == ["cache", "db", "web"]
    assert [item["text"] for item in json.loads(out)] == ["web: web-team", "db: db-team", "cache: cache-team"]
    assert sorted(sent(project)) == ["cache: cache-team", "db: db-team", "web: web-team"]
    run_id, status, rows = run_of(project)
    assert status == "ok"
    answers = {given["question"]: outcome for _, tool, given, outcome in rows if tool == "ask"}
    assert answers == {"Who owns web?": "ok", "Who owns db?": "ok", "Who owns cache?": "ok"}

    replayed = invoke("replay", run_id)  # no terminal, no answers: the record answers
    assert replayed.exit_code == 0 and replayed.stdout == out, replayed.output
    assert len(calls(project)) == 3


def test_answers_come_from_a_file_by_step_path_first_then_by_question(project):
    write(project, OWNERS)
    (project / "answers.json").write_text(
        json.dumps(
            {
                "1/do.1[1]": "by-path",
                "Who owns db?": "never: the step path comes first",
                "Who owns web?": "by-question",
                "Who owns cache?": {"team": "infra"},
            }
        ),
        encoding="utf-8",
    )
    result = invoke("run", "p.plan", "--answers", "answers.json")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert sorted(sent(project)) == ['cache: {"team":"infra"}', "db: by-path", "web: by-question"]
    assert run_of(project)[1] == "ok"


def test_without_a_terminal_or_answers_ask_fails_saying_how_to_answer(project):
    result = invoke("run", write(project, 'team = ask(question: "Which team?")\nnotify(channel: "#ops", text: $team)'))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (
        "error: step 1: nobody answered `Which team?`: there is no terminal to ask on: give the answers with "
        "`--answers FILE` (a JSON object from a step path or question to its answer)"
    )
    assert calls(project) == []
    run_id, status, rows = run_of(project)
    assert status == "failed"
    assert rows == [("1", "ask", {"question": "Which team?"}, "ok")]  # what came of it: no answer
    replayed = invoke("replay", run_id)  # fails as the run did, asking nobody
    assert replayed.exit_code == 1 and replayed.stderr.splitlines()[-1] == result.stderr.splitlines()[-1]


def test_an_unanswered_question_takes_the_steps_default_or_fails_naming_the_file(project):
    (project / "answers.json").write_text('{"Which team?": "OPS"}', encoding="utf-8")
    text = (
        'team = ask(question: "Which team?")\n'
        'size = ask(question: "How many?", when_unanswered: "default", default: 3)\n'
        'when = ask(question: "When?")\n'
        'notify(channel: "#ops", text: "{$team} {$size}")\n'
    )
    result = invoke("run", write(project, text), "--answers", "answers.json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (
        "error: step 3: nobody answered `When?`: --answers answers.json answers neither step 3 nor this "
        "question, and there is no terminal to ask on"
    )
    assert calls(project) == []
    (project / "answers.json").write_text('{"Which team?": "OPS", "3": "now"}', encoding="utf-8")
    result = invoke("run", "p.plan", "--answers", "answers.json")
    assert result.exit_code == 0 and json.loads(result.stdout)["text"] == "OPS 3"
    assert sent(project) == ["OPS 3"]


@pytest.mark.parametrize(
    "content, said",
    [
        ("{not json", "--answers answers.json: not JSON: "),
        ('["OPS"]', "--answers answers.json: must be a JSON object from a step path or question to its answer, not list"),
        (None, "--answers answers.json: cannot read it: "),
    ],
)
def test_an_answers_file_that_cannot_be_used_is_exit_2_before_the_run(project, content, said):
    if content is not None:
        (project / "answers.json").write_text(content, encoding="utf-8")
    result = invoke(
        "run", write(project, 'ask(question: "Which team?")\nnotify(channel: "#a", text: "b")'), "--answers", "answers.json"
    )
    assert result.exit_code == 2 and said in result.stderr and "Traceback" not in result.output
    assert calls(project) == [] and not (project / "runs.sqlite").exists()  # nothing recorded, nothing run


@needs_a_terminal
def test_ctrl_c_at_the_question_interrupts_and_resume_asks_it_again(project):
    write(project, 'team = ask(question: "Which team?")\nnotify(channel: "#ops", text: $team)\n')
    terminal = Terminal("run", "p.plan", cwd=project)
    terminal.until("Which team?")
    terminal.process.send_signal(signal.SIGINT)
    code, out, screen = terminal.end()
    assert (code, out) == (130, "") and "interrupted by SIGINT" in screen
    run_id, status, rows = run_of(project)
    assert status == "interrupted" and rows == [("1", "ask", {"question": "Which team?"}, "unknown")]
    assert calls(project) == []

    (project / "answers.json").write_text('{"1": "OPS"}', encoding="utf-8")
    resumed = invoke("resume", run_id, "--answers", "answers.json")  # the open question, asked again
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["text"] == "OPS", resumed.output
    assert sent(project) == ["OPS"]
    assert run_of(project)[1:] == (
        "ok",
        [("1", "ask", {"question": "Which team?"}, "ok"), ("2", "notify", {"channel": "#ops", "text": "OPS"}, "ok")],
    )


def test_questions_are_asked_one_at_a_time_whatever_the_interlocutor(project):
    checked, registry = check(project, OWNERS)
    open_now, most, asked = [], [], []

    async def interlocutor(question: Question):
        open_now.append(question)
        most.append(len(open_now))
        for _ in range(5):  # hand the loop to the other items: they would ask now, were they let
            await asyncio.sleep(0)
        open_now.remove(question)
        asked.append(question.step)
        return Unanswered("not today") if question.text == "Who owns db?" else question.text.split()[-1]

    with pytest.raises(Exception, match="step 1/do.1\\[1\\]: nobody answered `Who owns db\\?`: not today"):
        asyncio.run(run_plan(checked, registry=registry, hooks=Hooks(interlocutor=interlocutor)))
    assert max(most) == 1 and asked[:2] == ["1/do.1[0]", "1/do.1[1]"]
    assert sent(project) == ["web: web?"]


@needs_a_terminal
@pytest.mark.parametrize("typed, read", [(b"alice\n", "alice"), (b"\n", ""), (b"\x04", EOFError)])
def test_the_terminal_line_reads_as_input_does(monkeypatch, typed, read):
    master, slave = os.openpty()
    with open(slave, encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        os.write(master, typed)
        if read is EOFError:
            with pytest.raises(EOFError):
                TerminalLine().readline()
        else:
            assert TerminalLine().readline() == read
    os.close(master)


@needs_a_terminal
@pytest.mark.parametrize("when", ["before the read", "from another thread"])
def test_a_signal_ends_the_wait_for_an_answer_whenever_it_comes(monkeypatch, when):
    """`input()` would miss a signal that comes just before it starts to read, and wait for ever."""
    master, slave = os.openpty()
    with open(slave, encoding="utf-8") as stdin, Interrupts():
        monkeypatch.setattr(sys, "stdin", stdin)
        if when == "before the read":
            os.kill(os.getpid(), signal.SIGINT)
        else:
            threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            TerminalLine().readline()  # nothing is ever typed
    os.close(master)
