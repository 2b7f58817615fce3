"""The run store: every run, its stored plan, its tool calls and events, in SQLite.

Before a tool is called an intent row is committed; after, its outcome and result. What a run
tells the store, and what a replay or a resume answers from it, is `planc.store.recorders`'.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from planc.store.large_values import Values, keep, keep_event, to_json

DEFAULT_PATH = Path(".planc") / "runs.sqlite"
SCHEMA_VERSION = 4  # 2: runs.options; 3: files; 4: calls.outcome, large_values, events.refs

# How a call ended. An intent row with no outcome yet (its process died during the call) is unknown.
OUTCOMES = {
    "ok": "it returned, and its result is recorded",
    "failed": "it raised, or failed in the tool; the error is recorded",
    "unknown": "whether it had its effect is not known: it timed out, the run was interrupted during it, "
               "or its process died",
    "refused": "it returned (its effect happened), and its result was refused: it cannot be recorded or used",
    "not_approved": "it was not made: the question of --approve was answered no",
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,          -- running, ok, error (exit status error), failed (RunError), interrupted
    plan TEXT NOT NULL,            -- the stored plan (planc.store.stored) it ran
    arguments TEXT NOT NULL,       -- JSON (each JSON column may hold a reference to a large value instead)
    output TEXT,                   -- JSON of the plan's result
    message TEXT,
    options TEXT                   -- JSON: how it ran (config, policy, principal, finish, query); replay reuses it
);
CREATE TABLE IF NOT EXISTS calls (
    run_id TEXT NOT NULL REFERENCES runs(id),
    sequence INTEGER NOT NULL,
    step TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,           -- JSON
    output TEXT,                   -- JSON; NULL until finished, or when it did not end ok
    error TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT,                  -- OUTCOMES; NULL while the call is made (or its process died during it)
    PRIMARY KEY (run_id, sequence)
);
CREATE TABLE IF NOT EXISTS files (    -- what a run read (planc.toml, its lock, the policy), by content
    hash TEXT PRIMARY KEY,         -- sha256 of the text
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(id),
    sequence INTEGER NOT NULL,
    at REAL NOT NULL,
    event TEXT NOT NULL,           -- JSON
    refs TEXT,                     -- JSON: the event's large fields (null in `event`) -> their large_values hash
    PRIMARY KEY (run_id, sequence)
);
CREATE TABLE IF NOT EXISTS large_values (  -- each JSON text longer than a page, once (store/large_values.py)
    hash TEXT PRIMARY KEY,         -- sha256 of the text
    json TEXT NOT NULL
);
"""

# What a store of an older schema lacks, added by `_migrate`: (table, column, its declaration, how to fill it).
ADDED_COLUMNS = (
    ("runs", "options", "TEXT", None),
    ("events", "refs", "TEXT", None),
    ("calls", "outcome", "TEXT",
     # A timeout was recorded as a failure before outcomes: its effect is just as unknown as any other's.
     "CASE WHEN finished_at IS NULL THEN NULL WHEN error IS NULL THEN 'ok' "
     "WHEN error LIKE '%failed: CallTimedOut: %' THEN 'unknown' ELSE 'failed' END"),
)


class RunStoreError(Exception):
    """A run store that cannot be opened, or a run it does not hold."""


def plain_json(value):
    """`value` as it reads back from JSON: what a recorded input is compared with."""
    return json.loads(to_json(value))


class RunStore:
    def __init__(self, path: str | Path = DEFAULT_PATH) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(SCHEMA)
            self._migrate()
        except (OSError, sqlite3.Error) as error:
            raise RunStoreError(f"{self.path}: cannot open the run store: {error}") from None

    def _migrate(self) -> None:
        """Bring a store written by an older planc up to this schema: add the columns it lacks
        (`ADDED_COLUMNS`); the tables it lacks SCHEMA made."""
        if self.db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
            return
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            for table, column, declaration, fill in ADDED_COLUMNS:
                if column not in {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                    if fill is not None:
                        self.db.execute(f"UPDATE {table} SET {column} = {fill}")
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction: what is written inside is all there, or none of it."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            yield self.db

    def start_run(self, stored_plan: dict, arguments, options: dict | None = None) -> str:
        """A new run of `stored_plan`, and its id; `options` says how it runs, so that replay and resume
        can do the same."""
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]
        with self.transaction() as db:
            db.execute("INSERT INTO runs (id, started_at, status, plan, arguments, options) "
                       "VALUES (?, ?, 'running', ?, ?, ?)",
                       (run_id, time.time(), to_json(stored_plan), keep(db, dict(arguments or {})),
                        to_json(options or {})))
        return run_id

    def call_started(self, run_id: str, sequence: int, step: str, tool: str, arguments) -> None:
        """The intent row of a call about to be made."""
        with self.transaction() as db:
            db.execute("INSERT INTO calls (run_id, sequence, step, tool, input, started_at) VALUES (?, ?, ?, ?, ?, ?)",
                       (run_id, sequence, step, tool, keep(db, arguments), time.time()))

    def call_ended(self, run_id: str, sequence: int, outcome: str, output=None, error: str | None = None) -> None:
        """How the call of row `sequence` ended: its outcome, and its output (when ok) or error."""
        with self.transaction() as db:
            db.execute("UPDATE calls SET output = ?, error = ?, outcome = ?, finished_at = ? "
                       "WHERE run_id = ? AND sequence = ?",
                       (keep(db, output) if outcome == "ok" else None, error, outcome, time.time(), run_id, sequence))

    def call_declined(self, run_id: str, sequence: int, step: str, tool: str, arguments, message: str) -> None:
        """The row of a call the gate refused: it was not made, and it ended as it started."""
        now = time.time()
        with self.transaction() as db:
            db.execute("INSERT INTO calls (run_id, sequence, step, tool, input, error, started_at, finished_at, "
                       "outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'not_approved')",
                       (run_id, sequence, step, tool, keep(db, arguments), message, now, now))

    def event(self, run_id: str, sequence: int, event: dict) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO events (run_id, sequence, at, event, refs) VALUES (?, ?, ?, ?, ?)",
                       (run_id, sequence, time.time(), *keep_event(db, event)))

    def keep_file(self, text: str) -> str:
        """Keep `text` (a file a run read), once however many runs read it; its hash names it."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO files (hash, text) VALUES (?, ?)", (digest, text))
        return digest

    def file(self, digest: str) -> str:
        row = self.db.execute("SELECT text FROM files WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path}: no file with hash {digest}")
        return row[0]

    def finish_run(self, run_id: str, status: str, output=None, message: str | None = None) -> None:
        with self.transaction() as db:
            db.execute("UPDATE runs SET finished_at = ?, status = ?, output = ?, message = ? WHERE id = ?",
                       (time.time(), status, keep(db, output), message, run_id))

    def last_event(self, run_id: str) -> int:
        """The sequence of `run_id`'s last event (0 for none): a resumed run's events come after it."""
        return self.db.execute("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE run_id = ?",
                               (run_id,)).fetchone()[0]

    def runs(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.message, "
            "(SELECT COUNT(*) FROM calls c WHERE c.run_id = r.id AND c.outcome IS NOT 'not_approved') "
            "FROM runs r ORDER BY r.started_at, r.id").fetchall()
        return [{"id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3], "message": row[4],
                 "calls": row[5]} for row in rows]

    def run(self, run_id: str) -> dict:
        row = self.db.execute("SELECT id, started_at, finished_at, status, plan, arguments, output, message, options "
                              "FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path}: no run `{run_id}`")
        calls = self.db.execute("SELECT sequence, step, tool, input, output, error, started_at, finished_at, outcome "
                                "FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)).fetchall()
        events = self.db.execute("SELECT at, event, refs FROM events WHERE run_id = ? ORDER BY sequence", (run_id,))
        value = Values(self.db)
        return {"id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3],
                "plan": json.loads(row[4]), "arguments": value(row[5]), "output": value(row[6]), "message": row[7],
                "options": json.loads(row[8]) if row[8] is not None else {},
                "calls": [{"sequence": c[0], "step": c[1], "tool": c[2], "input": value(c[3]), "output": value(c[4]),
                           "error": c[5], "started_at": c[6], "finished_at": c[7], "outcome": c[8] or "unknown"}
                          for c in calls],
                "events": [{"at": at, **value.event(event, refs)} for at, event, refs in events]}


__all__ = ["DEFAULT_PATH", "OUTCOMES", "RunStore", "RunStoreError"]
