"""The run store: every run, its stored plan, its tool calls and events, in SQLite.

Before a tool is called an intent row is committed; after, its result. `Replay` feeds a
recorded run's results back to the interpreter instead of calling any tool, and stops
with a divergence error when the plan asks for a call the record does not hold.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import uuid
from pathlib import Path

from planc.backend.hooks import Call, Skip
from planc.backend.values import RunError, ToolFailed

DEFAULT_PATH = Path(".planc") / "runs.sqlite"
SCHEMA_VERSION = 3  # 2: runs.options; 3: files

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,          -- running, ok, error (exit status error), failed (RunError)
    plan TEXT NOT NULL,            -- the stored plan (planc.store.stored) it ran
    arguments TEXT NOT NULL,       -- JSON
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
    output TEXT,                   -- JSON; NULL until finished, or when it failed
    error TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
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
    PRIMARY KEY (run_id, sequence)
);
"""


class RunStoreError(Exception):
    """A run store that cannot be opened, or a run it does not hold."""


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)  # key order kept: replay prints what the run did


def _plain(value):
    """`value` as it reads back from JSON: what a recorded input is compared with."""
    return json.loads(_json(value))


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
        """Bring a store written by an older planc up to this schema: version 1 had no `runs.options`
        (added here), version 2 no `files` (made by SCHEMA)."""
        if self.db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
            return
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if "options" not in columns:
                self.db.execute("ALTER TABLE runs ADD COLUMN options TEXT")
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    def _write(self, sql: str, params=()) -> None:
        with self.db:  # one committed transaction
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(sql, params)

    def start_run(self, stored_plan: dict | None, arguments, options: dict | None = None) -> Recorder:
        """A new run of `stored_plan` (None while a model is writing the plan: `set_plan` records it then);
        `options` says how it runs, so that replay and resume can do the same."""
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]
        self._write("INSERT INTO runs (id, started_at, status, plan, arguments, options) "
                    "VALUES (?, ?, 'running', ?, ?, ?)",
                    (run_id, time.time(), _json(stored_plan), _json(dict(arguments or {})), _json(options or {})))
        return Recorder(self, run_id)

    def set_plan(self, run_id: str, stored_plan: dict) -> None:
        """The plan a run runs, once a model has written it and it checked."""
        self._write("UPDATE runs SET plan = ? WHERE id = ?", (_json(stored_plan), run_id))

    def keep_file(self, text: str) -> str:
        """Keep `text` (a file a run read), once however many runs read it; its hash names it."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self._write("INSERT OR IGNORE INTO files (hash, text) VALUES (?, ?)", (digest, text))
        return digest

    def file(self, digest: str) -> str:
        row = self.db.execute("SELECT text FROM files WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path}: no file with hash {digest}")
        return row[0]

    def finish_run(self, run_id: str, status: str, output=None, message: str | None = None) -> None:
        self._write("UPDATE runs SET finished_at = ?, status = ?, output = ?, message = ? WHERE id = ?",
                    (time.time(), status, _json(output), message, run_id))

    def runs(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.message, "
            "(SELECT COUNT(*) FROM calls c WHERE c.run_id = r.id) FROM runs r ORDER BY r.started_at, r.id").fetchall()
        return [{"id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3], "message": row[4],
                 "calls": row[5]} for row in rows]

    def run(self, run_id: str) -> dict:
        row = self.db.execute("SELECT id, started_at, finished_at, status, plan, arguments, output, message, options "
                              "FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path}: no run `{run_id}`")
        calls = self.db.execute("SELECT sequence, step, tool, input, output, error, started_at, finished_at "
                                "FROM calls WHERE run_id = ? ORDER BY sequence", (run_id,)).fetchall()
        events = self.db.execute("SELECT at, event FROM events WHERE run_id = ? ORDER BY sequence", (run_id,))
        return {"id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3],
                "plan": json.loads(row[4]), "arguments": json.loads(row[5]),
                "output": json.loads(row[6]) if row[6] is not None else None, "message": row[7],
                "options": json.loads(row[8]) if row[8] is not None else {},
                "calls": [{"sequence": c[0], "step": c[1], "tool": c[2], "input": json.loads(c[3]),
                           "output": json.loads(c[4]) if c[4] is not None else None, "error": c[5],
                           "started_at": c[6], "finished_at": c[7]} for c in calls],
                "events": [{"at": at, **json.loads(event)} for at, event in events]}


class Recorder:
    """The interpreter's `recorder` while recording: commits an intent row, then the result."""

    calls_tools = True

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.sequence = 0
        self.events = 0
        self.open: dict[int, int] = {}  # id(call) -> its sequence

    def replayed(self, call: Call, step) -> None:
        return None  # recording: every call is real

    def started(self, call: Call) -> None:
        self.sequence += 1
        self.open[id(call)] = self.sequence
        self.store._write("INSERT INTO calls (run_id, sequence, step, tool, input, started_at) "
                          "VALUES (?, ?, ?, ?, ?, ?)",
                          (self.run_id, self.sequence, call.step, call.tool.name, _json(dict(call.args)), time.time()))

    def finished(self, call: Call, result, error: Exception | None) -> None:
        sequence = self.open.pop(id(call))
        self.store._write("UPDATE calls SET output = ?, error = ?, finished_at = ? WHERE run_id = ? AND sequence = ?",
                          (None if error is not None else _json(result), str(error) if error is not None else None,
                           time.time(), self.run_id, sequence))

    def event(self, event: dict) -> None:
        self.events += 1
        self.store._write("INSERT INTO events (run_id, sequence, at, event) VALUES (?, ?, ?, ?)",
                          (self.run_id, self.events, time.time(), _json(event)))


def _calls_by_step(run: dict) -> dict[str, list[dict]]:
    """The run's recorded calls by step path, in the order they were made."""
    by_step: dict[str, list[dict]] = {}
    for call in run["calls"]:
        by_step.setdefault(call["step"], []).append(call)
    return by_step


def _same_call(held: dict, call: Call, asked, step, run_id, doing: str) -> None:
    """A DivergenceError unless the plan's `call` (input `asked`) is the recorded call `held`."""
    if held["tool"] != call.tool.name:
        raise DivergenceError(f"step {call.step}: {doing} diverged: the plan calls `{call.tool.name}`, and run "
                              f"{run_id} recorded `{held['tool']}` here", _node(step))
    if held["input"] != asked:
        raise DivergenceError(f"step {call.step}: {doing} diverged: `{call.tool.name}` is called with "
                              f"{_difference(held['input'], asked)}", _node(step))


def _node(step):
    """Where an error about a call points: the step's tool name; nothing for a call outside any step (the finish)."""
    return getattr(step, "tool", None)


class Replay:
    """The interpreter's `recorder` while replaying: every call's result comes from the record."""

    calls_tools = False  # every call is answered from the record, or the replay stops

    def __init__(self, run: dict) -> None:
        self.run = run
        self.run_id = run["id"]
        self.by_step = _calls_by_step(run)

    def replayed(self, call: Call, step) -> Skip:
        recorded = self.by_step.get(call.step) or []
        asked = _plain(dict(call.args))
        if self._failed_here(recorded):
            raise RunError(self.run["message"] or f"run {self.run['id']} failed here", _node(step))
        if not recorded:
            raise DivergenceError(f"step {call.step}: replay diverged: the plan calls `{call.tool.name}` with "
                                  f"{_json(asked)}, and run {self.run['id']} recorded no call at this step",
                                  _node(step))
        held = recorded[0]
        _same_call(held, call, asked, step, self.run["id"], "replay")
        recorded.pop(0)
        if held["error"] is not None:
            raise ToolFailed(held["error"], _node(step))
        if held["finished_at"] is None:
            raise DivergenceError(f"step {call.step}: replay cannot go on: run {self.run['id']} recorded the call "
                                  f"of `{call.tool.name}` here, and no result for it", _node(step))
        return Skip(held["output"])

    def _failed_here(self, recorded: list[dict]) -> bool:
        """Whether the recorded run failed at this call, so the replay fails as it did: the run failed,
        and it stopped during this call (an intent row, no result), or before it with no call left."""
        if self.run["status"] != "failed":
            return False
        if recorded:
            return recorded[0]["finished_at"] is None
        return not any(self.by_step.values())

    def started(self, call: Call) -> None:  # never reached: replayed() answers every call or raises
        raise DivergenceError(f"step {call.step}: replay would call `{call.tool.name}`")

    def finished(self, call: Call, result, error) -> None:
        pass

    def event(self, event: dict) -> None:
        pass  # a replay writes nothing


class Resume(Recorder):
    """The interpreter's `recorder` while resuming a run whose process died, recording into the same run.

    A call with a recorded result takes it from the record; a call with an intent row and no result is
    called again only when its tool is idempotent (the same intent row then gets the result), else the
    run stops with "outcome unknown"; a call past the record is called and recorded.
    """

    def __init__(self, store: RunStore, run: dict) -> None:
        super().__init__(store, run["id"])
        self.run = run
        self.sequence = max((call["sequence"] for call in run["calls"]), default=0)
        self.events = store.db.execute("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE run_id = ?",
                                       (run["id"],)).fetchone()[0]
        self.by_step = _calls_by_step(run)
        self.again: dict[int, int] = {}  # id(call) -> the sequence of the intent row it is called again for

    def replayed(self, call: Call, step) -> Skip | None:
        recorded = self.by_step.get(call.step) or []
        if not recorded:
            return None  # past the record: a real call
        held = recorded.pop(0)
        _same_call(held, call, _plain(dict(call.args)), step, self.run_id, "resume")
        if held["finished_at"] is not None:
            if held["error"] is not None:
                raise ToolFailed(held["error"], _node(step))
            return Skip(held["output"])
        effects = call.tool.effects
        if not (getattr(effects, "idempotent", False) or getattr(effects, "read_only", False)):
            raise OutcomeUnknown(f"step {call.step}: outcome unknown: run {self.run_id} recorded the call of "
                                 f"`{call.tool.name}` here and no result, and `{call.tool.name}` is not "
                                 f"idempotent, so it is not called again", _node(step))
        self.again[id(call)] = held["sequence"]
        return None

    def started(self, call: Call) -> None:
        sequence = self.again.pop(id(call), None)
        if sequence is None:
            super().started(call)
        else:
            self.open[id(call)] = sequence


class OutcomeUnknown(RunError):
    """A resumed run reaches a non-idempotent call that was started and has no recorded result."""


class DivergenceError(RunError):
    """A replayed plan asks for a call its record does not hold."""


def _difference(recorded: dict, asked: dict) -> str:
    parts = []
    for name in sorted(set(recorded) | set(asked)):
        if name not in asked:
            parts.append(f"no `{name}` (recorded {_json(recorded[name])})")
        elif name not in recorded:
            parts.append(f"`{name}`: {_json(asked[name])} (not recorded)")
        elif recorded[name] != asked[name]:
            parts.append(f"`{name}`: {_json(asked[name])} where {_json(recorded[name])} was recorded")
    return "; ".join(parts) or f"{_json(asked)} where {_json(recorded)} was recorded"


__all__ = ["DEFAULT_PATH", "DivergenceError", "OutcomeUnknown", "Recorder", "Replay", "Resume", "RunStore", "RunStoreError"]
