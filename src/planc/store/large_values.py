"""Large values kept once: a run store holds each large JSON text a single time, however often it recurs.

A tool's result is in its call's row, in the `tool_finished` and `step_finished` events, and
often in the run's output; a large one written out four times made a store four times its size.
So a JSON text longer than `LARGE_CHARS` goes to the `large_values` table under its sha256, once,
and where it belongs the store keeps a reference instead:

- a column holding JSON (a call's input or output, a run's arguments or output) holds `@` and
  the hash; JSON text never starts with `@`, so a reference is never mistaken for a value;
- an event holds null at each large top-level field, and its `refs` column maps those fields to
  their hashes.

Reading a run loads each large value once and hands the same value to every place that refers
to it. A text that holds a secret's mark stays inline: its hash would depend on the secret, where
the mark alone does, and is replaced whole by whoever compares records with marks set aside.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from planc.registry.provenance.redaction import MARK
from planc.store.faults import RunStoreError
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from planc.store.db import Db

LARGE_CHARS = 4096  # a page: shorter values stay inline, where they are read without another lookup
REFERENCE = "@"


def to_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)  # key order kept: replay prints what the run did


def keep(db: Db, value: object) -> str:
    """What a JSON column holds for `value`: its JSON text, or a reference to it kept in `large_values`."""
    text = to_json(value)
    if not _large(text):
        return text
    return REFERENCE + _kept(db, text)


def keep_event(db: Db, event: dict) -> tuple[str, str | None]:
    """The `event` and `refs` columns of an event: its large top-level fields kept aside, null in their place."""
    refs = {}
    for field, value in event.items():
        if isinstance(value, (str, list, dict)):  # nothing else can be long
            text = to_json(value)
            if _large(text):
                refs[field] = _kept(db, text)
    if not refs:
        return to_json(event), None
    return to_json({field: None if field in refs else value for field, value in event.items()}), json.dumps(refs)


def _large(text: str) -> bool:
    """Whether `text` is kept once, aside: it is longer than a page, and holds no mark."""
    return len(text) > LARGE_CHARS and MARK.search(text) is None


def _kept(db: Db, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    db.execute("INSERT INTO large_values (hash, json) VALUES (?, ?) ON CONFLICT DO NOTHING", (digest, text))
    return digest


class Values:
    """Reads JSON columns back, each large value loaded once (and shared by every place that refers to it)."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.loaded: dict[str, Any] = {}

    def __call__(self, column: str | None) -> Any:
        if column is None:
            return None
        if column.startswith(REFERENCE):
            return self.large(column[len(REFERENCE) :])
        return read_record(column)

    def event(self, column: str, refs: str | None) -> dict:
        event = read_record(column)
        for field, digest in read_record(refs or "{}").items():
            event[field] = self.large(digest)
        return event

    def large(self, digest: str) -> Any:
        if digest not in self.loaded:
            row = self.db.execute("SELECT json FROM large_values WHERE hash = ?", (digest,)).fetchone()
            if row is None:
                raise LookupError(f"the large value {digest} is missing")
            self.loaded[digest] = read_record(row[0])
        return self.loaded[digest]


def read_record(text: str) -> Any:
    """A JSON column of the run store, read back; a RunStoreError when it cannot be (a store changed by hand
    to hold what planc never writes: not JSON, or nested past what planc reads)."""
    try:
        return read_json(text)
    except ValueError as error:
        raise RunStoreError(f"a record of the run store cannot be read: {error}") from None
