"""An inbox assistant's tools, over the files of this folder: the mail anyone can send, a bill
anyone can write, and the user's own address book. Sending and paying append to `outbox.jsonl`
(or the file `PLANC_INBOX_OUTBOX` names), so that a run's effects can be seen and counted."""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _data(name: str):
    return json.loads((HERE / "data" / name).read_text(encoding="utf-8"))


def _sent(record: dict) -> dict:
    outbox = Path(os.environ.get("PLANC_INBOX_OUTBOX", HERE / "outbox.jsonl"))
    with outbox.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    return {"done": True, **record}


def read_inbox(limit: int = 10) -> list[dict]:
    """The newest mail, newest first: sender, subject and body, as their senders wrote them."""
    return _data("inbox.json")[:limit]


def read_bill(name: str) -> dict:
    """A bill from the bills folder: who wrote it, the IBAN and amount it asks for, and its text."""
    return _data("bills.json")[name]


def contacts() -> list[dict]:
    """The user's own address book: names, emails and IBANs the user entered."""
    return _data("contacts.json")


def send_email(to: str, subject: str, body: str) -> dict:
    """Send an email."""
    return _sent({"email": {"to": to, "subject": subject, "body": body}})


def pay(recipient: str, amount: float, reference: str) -> dict:
    """Pay `amount` to the IBAN `recipient`."""
    return _sent({"payment": {"recipient": recipient, "amount": amount, "reference": reference}})
