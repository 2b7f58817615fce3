"""Attacks on approvals that wait in the run store: a call a person must approve is made once when approved,
never when denied, never by a resume or a replay that nobody answered, and every wrong answer (an
unknown run, a finished run, a call answered already, an unclear call) is one line and a non-zero exit.

The project is test_attacks_store's: spy tools that log each call before doing anything else.
"""

from __future__ import annotations

import json

from cli import invoke
from test_attacks_store import calls, clean, outcomes, project, run_id_of, shown, write_plan  # noqa: F401

import planc


def texts(project) -> list[str]:
    return [call["text"] for call in calls(project)]


def test_a_waiting_call_is_made_once_when_approved_and_never_unanswered(project):
    write_plan(project, 'send(text: "one")\nsend(text: "two")\n')
    ran = invoke("run", "p.plan", "--approve")  # no terminal: the call waits for `planc approve`
    clean(ran)
    run_id = run_id_of(ran)
    assert ran.exit_code == 3 and ran.stdout == "" and texts(project) == []
    assert 'call 1 (step 1): send {"text": "one"}: `send` is effectful' in ran.stderr
    assert shown(run_id)["status"] == "awaiting_approval"
    assert outcomes(shown(run_id)) == [("send", "one", "awaiting_approval")]

    listed = invoke("runs")
    assert (
        f'  waits: call 1 (step 1) send {{"text": "one"}}: `send` is effectful  (planc approve {run_id} '
        f"--call 1 [--deny])" in listed.stdout
    )
    [listed_run] = json.loads(invoke("runs", "--format", "json").stdout)
    assert listed_run["calls"] == 0 and listed_run["awaiting"] == [
        {"sequence": 1, "step": "1", "tool": "send", "input": {"text": "one"}, "asks": "`send` is effectful"}
    ]

    for command in (("resume", run_id), ("replay", run_id)):  # nobody answered: neither makes the call
        unanswered = invoke(*command)
        clean(unanswered)
        assert unanswered.exit_code == 3 and texts(project) == []
    assert shown(run_id)["status"] == "awaiting_approval"

    first = invoke("approve", run_id)  # made, once; the next effectful call waits in turn
    clean(first)
    assert first.exit_code == 3 and texts(project) == ["one"]
    assert outcomes(shown(run_id)) == [("send", "one", "ok"), ("send", "two", "awaiting_approval")]
    made = invoke("approve", run_id, "--call", "1")
    assert made.exit_code == 1 and made.stderr == f"error: call 1 of run {run_id} does not wait for approval: it was made\n"

    denied = invoke("approve", run_id, "--deny")
    clean(denied)
    assert denied.exit_code == 1 and denied.stderr.splitlines()[-1] == (
        "error: step 2: stopped before calling `send`: a person denied it (`planc approve --deny`)"
    )
    assert shown(run_id)["status"] == "failed" and texts(project) == ["one"]
    assert outcomes(shown(run_id)) == [("send", "one", "ok"), ("send", "two", "not_approved")]
    for answer in (("approve", run_id), ("approve", run_id, "--call", "2")):
        late = invoke(*answer)
        clean(late)
        assert late.exit_code == 1 and len(late.stderr.splitlines()) == 1
    assert late.stderr == f"error: call 2 of run {run_id} does not wait for approval: it was denied (or answered no)\n"
    assert invoke("resume", run_id).exit_code == 1 and texts(project) == ["one"]


def test_an_unknown_run_or_call_is_one_line_and_nothing_is_made(project):
    write_plan(project, 'send(text: "one")\n')
    run_id = run_id_of(invoke("run", "p.plan", "--approve"))
    for args, code, said in ((("nope",), 2, "no run `nope`"), ((run_id, "--call", "7"), 1, f"run {run_id} has no call 7")):
        answered = invoke("approve", *args)
        clean(answered)
        assert answered.exit_code == code and len(answered.stderr.splitlines()) == 1 and said in answered.stderr
    assert texts(project) == [] and shown(run_id)["status"] == "awaiting_approval"


def test_each_waiting_item_of_a_map_is_answered_on_its_own_and_made_once(project):
    write_plan(project, 'map(over: ["a", "b", "c"], do: { send(text: item) })\n')
    ran = invoke("run", "p.plan", "--approve")
    run_id = run_id_of(ran)
    assert ran.exit_code == 3 and texts(project) == []
    for made in (["a"], ["a", "b"], ["a", "b", "c"]):  # the first call that waits stops the map: one at a time
        [waiting] = [call for call in shown(run_id)["calls"] if call["outcome"] == "awaiting_approval"]
        answered = invoke("approve", run_id, "--call", str(waiting["sequence"]))
        clean(answered)
        assert texts(project) == made
    assert answered.exit_code == 0 and json.loads(answered.stdout) == [{"sent": "a"}, {"sent": "b"}, {"sent": "c"}]
    assert sorted(texts(project)) == ["a", "b", "c"]  # each once
    assert [outcome for _, _, outcome in outcomes(shown(run_id))] == ["ok", "ok", "ok"]


def test_approve_true_without_a_store_or_a_gate_is_refused_before_anything_runs(project):
    checked = planc.load_project(project).check('send(text: "one")')
    try:
        planc.run(checked, approve=True)
    except ValueError as error:
        assert "needs a store" in str(error)
    else:
        raise AssertionError("approve=True ran with nowhere for a call to wait")
    assert texts(project) == []
