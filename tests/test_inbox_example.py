"""The inbox assistant (examples/inbox/): its policy refuses the plan that pays a tampered bill's IBAN
before anything runs, runs the plans whose recipients come from the address book, and lets a person
(the gate) let the flagged payment through, recorded as such."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli import invoke

import planc
from planc.backend.calls.hooks import Abort, Hooks, Proceed
from planc.backend.state.values import RunError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "inbox"


@pytest.fixture
def inbox(tmp_path, monkeypatch):
    """A copy of the example, run from its folder, its outbox and store in the copy."""
    folder = tmp_path / "inbox"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", "outbox.jsonl"))
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PLANC_INBOX_OUTBOX", str(folder / "outbox.jsonl"))
    monkeypatch.setenv("PLANC_STORE", str(folder / "runs.sqlite"))
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in ("inbox", "inbox.tools"):
        __import__("sys").modules.pop(name, None)


def outbox(folder: Path) -> list[dict]:
    sent = folder / "outbox.jsonl"
    return [json.loads(line) for line in sent.read_text().splitlines()] if sent.exists() else []


def test_the_tampered_bill_cannot_choose_where_the_money_goes(inbox):
    check = invoke("check", "pay_bill.plan")
    assert check.exit_code == 1 and "Traceback" not in check.output
    assert "error[E400]" in check.output and "recipients-from-the-user" in check.output
    assert "`recipient` reads `$1.iban`, which `read_bill` returned at step 1 (untrusted)" in check.output
    run = invoke("run", "pay_bill.plan")
    assert run.exit_code == 1 and outbox(inbox) == [] and not (inbox / "runs.sqlite").exists()


@pytest.mark.parametrize(
    "plan, sent",
    [
        (
            "pay_bill_safely.plan",
            [{"payment": {"recipient": "DE34 2000 0000 0000 0000 02", "amount": 87.5, "reference": "electricity December"}}],
        ),
        ("reply_to_bob.plan", [{"email": {"to": "bob@example.com", "subject": "Re: lunch?", "body": "Thursday at noon works."}}]),
    ],
)
def test_the_plans_whose_recipients_the_user_gave_run(inbox, plan, sent):
    assert invoke("check", plan).exit_code == 0
    run = invoke("run", plan)
    assert run.exit_code == 0 and "Traceback" not in run.output, run.output
    assert outbox(inbox) == sent


def test_show_lists_the_flow_into_the_payment(inbox):
    shown = invoke("show", "pay_bill.plan")
    assert shown.exit_code == 1 and "E400" in shown.stderr  # drawn, and its error said
    assert "step 2 `pay`: `recipient` <- untrusted: `$1.iban`, which `read_bill` returned at step 1" in shown.output


@pytest.mark.parametrize("answer, paid", [(Proceed(), True), (Abort("the person said no"), False)])
def test_only_a_person_lets_the_flagged_payment_through_and_the_record_says_so(inbox, answer, paid):
    registry = planc.load_registry(inbox / "planc.toml")
    policy = planc.load_policy(inbox / "policy.cedar")
    text = (inbox / "pay_bill.plan").read_text()
    assert [d.code for d in planc.check(text, registry=registry, policy=policy).diagnostics] == ["E400"]
    checked = planc.check(text, registry=registry, policy=policy, approvals=True)
    assert checked.ok and [d.code for d in checked.diagnostics] == ["W505"]
    asked = []

    async def gate(call):  # the person: asked about every call, says `answer` of the flagged one
        asked.append(call)
        return answer if call.flagged is not None else Proceed()

    store = inbox / "runs.sqlite"
    if paid:
        planc.run(checked, hooks=Hooks(gate=gate), store=store)
    else:
        with pytest.raises(RunError, match="the person said no"):
            planc.run(checked, hooks=Hooks(gate=gate), store=store)
    [flagged] = [call for call in asked if call.flagged is not None]
    assert flagged.tool.name == "pay" and flagged.sources["recipient"] == {"untrusted"}
    assert "recipients-from-the-user" in flagged.flagged
    assert [bool(outbox(inbox))] == [paid]
    with sqlite3.connect(store) as db:
        [(outcome, labels)] = db.execute("SELECT outcome, labels FROM calls WHERE tool = 'pay'").fetchall()
    recorded = json.loads(labels)
    assert recorded["sources"]["recipient"] == ["untrusted"]
    assert "recipients-from-the-user" in recorded["flagged"]
    assert recorded["approved"] == paid and outcome == ("ok" if paid else "not_approved")
    if paid:  # the replay gives the recorded payment without asking anybody
        [run_id] = [row[0] for row in sqlite3.connect(store).execute("SELECT id FROM runs")]
        replay = invoke("replay", run_id)
        assert replay.exit_code == 0, replay.output
        assert len(outbox(inbox)) == 1
        shown = invoke("show-run", run_id)
        assert "[amount: untrusted; recipient: untrusted; let through by a person]" in shown.output
        page = invoke("show-run", run_id, "--format", "html")
        assert page.exit_code == 0
        assert "<li><code>recipient</code>: untrusted</li>" in page.output
        assert "let through by a person: calling `pay` with `recipient`" in page.output


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("answer, code", [(b"n\n", 1), (b"y\n", 0)])
def test_approve_on_a_terminal_shows_the_labels_and_a_yes_lets_the_payment_through(inbox, answer, code):
    from test_run_terminal import _on_a_terminal

    (inbox / "p.plan").write_text((inbox / "pay_bill.plan").read_text())
    returncode, stdout, screen = _on_a_terminal(inbox, answer, once=b"[y/n]")
    assert returncode == code, screen
    assert "Traceback" not in screen
    assert "recipient: untrusted" in screen and "flagged" in screen and "recipients-from-the-user" in screen
    assert len(outbox(inbox)) == (1 if code == 0 else 0)
    with sqlite3.connect(inbox / "runs.sqlite") as db:
        [(status,)] = db.execute("SELECT status FROM runs").fetchall()
        [(labels,)] = db.execute("SELECT labels FROM calls WHERE tool = 'pay'").fetchall()
    assert status == ("ok" if code == 0 else "failed") and json.loads(labels)["approved"] == (code == 0)


@pytest.mark.parametrize("deny", [False, True])
def test_with_nobody_to_ask_the_flagged_payment_waits_for_planc_approve(inbox, deny):
    registry = planc.load_registry(inbox / "planc.toml")
    checked = planc.check(
        (inbox / "pay_bill.plan").read_text(), registry=registry, policy=planc.load_policy(inbox / "policy.cedar"), approvals=True
    )
    with pytest.raises(planc.AwaitingApproval) as waiting:  # no gate, a store: the flagged call waits
        planc.run(checked, store=inbox / "runs.sqlite")
    [call] = waiting.value.calls
    assert call["tool"] == "pay" and call["asks"].startswith("flagged: ") and "recipients-from-the-user" in call["asks"]
    assert outbox(inbox) == []

    answered = invoke("approve", waiting.value.run_id, *(["--deny"] if deny else []))  # a person, later, elsewhere
    assert answered.exit_code == (1 if deny else 0) and "Traceback" not in answered.output, answered.output
    assert len(outbox(inbox)) == (0 if deny else 1)
    with sqlite3.connect(inbox / "runs.sqlite") as db:
        [(status,)] = db.execute("SELECT status FROM runs").fetchall()
        [(outcome, labels)] = db.execute("SELECT outcome, labels FROM calls WHERE tool = 'pay'").fetchall()
    assert (status, outcome) == (("failed", "not_approved") if deny else ("ok", "ok"))
    assert json.loads(labels)["approved"] is not deny and "recipients-from-the-user" in json.loads(labels)["flagged"]
