"""The run store: every run, its stored plan, its tool calls and events, and the batches runs belong to.

It is an SQLite file (`sqlite_backend.py`), or PostgreSQL's tables where `store = "postgresql:$NAME"`
(`postgres_backend.py`, for workers on several machines writing one history). The schema, every
query and every promise are this module's, once, in SQL both understand; a backend says only how it
is opened, how a transaction takes it, where the schema's version is kept and how a lease is held.

Before a tool is called an intent row is committed; after, its outcome and result. What a run
tells the store, and what a replay or a resume answers from it, is `planc.backend.run.recorders`'.

Every failure of the store (another process holding it, a full disk, a read-only or damaged
file, a server that cannot be reached) is a RunStoreError naming the store (`faults.py`), never the
database's exception. A command that only reads (`planc runs`, `show-run`, `replay`) opens the
store with `read_only`: it reads an SQLite store it cannot write, a read-only file or one on a
read-only filesystem.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planc import clock
from planc.registry.settings.declarations import STORE_PATH
from planc.registry.tools.learned_shapes import LearnedShape, first_shape
from planc.store.faults import RunLeased, RunStoreError, store_failure
from planc.store.large_values import Values, keep, keep_event, read_record, to_json
from planc.store.lease import Holder
from planc.store.plan_steps import recorded_step_rows
from planc.store.postgres_backend import PostgresBackend, is_postgresql
from planc.store.sqlite_backend import SqliteBackend
from planc.store.views import make_views

if TYPE_CHECKING:
    from planc.store.db import Db

# 2: runs.options; 3: files; 4: calls.outcome, large_values, events.refs, leases; 5: calls.idempotency_key;
# 6: batches, runs.batch and runs.batch_line; 7: calls.labels; 8: shapes;
# 9: steps, rounds and the views (store/views.py); 10: the outcomes `awaiting_approval` and `approved` and the
# status `awaiting_approval` (no new column: the version alone keeps an older planc, which would take a waiting
# call for one whose outcome is unknown and might make it unapproved, from resuming such a run)
# 11: the views in the SQL both backends take, and made in PostgreSQL stores too (`planc stats` reads both)
SCHEMA_VERSION = 11
# What run `r` spent, in dollars: the `usd` of its events (each inference of a priced model, by the usage its
# reply reported; each call of a tool with a declared cost), as `spending.py` counted them; a resumed run's
# events carry it only for what the resume itself made, so nothing is counted twice.
SPENT = "(SELECT COALESCE(SUM({usd}), 0) FROM events e WHERE e.run_id = r.id)"

# How a call ended. An intent row with no outcome yet (its process died during the call) is unknown.
OUTCOMES = {
    "ok": "it returned, and its result is recorded",
    "failed": "it raised, or failed in the tool; the error is recorded",
    "unknown": "whether it had its effect is not known: it timed out, the run was interrupted during it, or its process died",
    "refused": "it returned (its effect happened), and its result was refused: it cannot be recorded or used",
    "not_approved": "it was not made: a person answered no (the question of --approve, or `planc approve --deny`)",
    "awaiting_approval": "it is not made yet: it waits for a person's answer (`planc approve`); `error` says what it asks",
    "approved": "a person approved it (`planc approve`), and the run that makes it has not started it yet",
}
NOT_MADE = ("not_approved", "awaiting_approval", "approved")  # the outcomes of a call that was not made (yet)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,          -- running, ok, error (exit status error), failed (RunError), interrupted,
                                   -- awaiting_approval (a call waits for `planc approve`)
    plan TEXT NOT NULL,            -- JSON: the stored plan (planc.store.stored) it ran
    arguments TEXT NOT NULL,       -- JSON (each JSON column may hold a reference to a large value instead)
    output TEXT,                   -- JSON of the plan's result
    message TEXT,
    options TEXT,                  -- JSON: how it ran (config, policy, principal, finish, query, executor)
    batch TEXT,
    batch_line INTEGER             -- `planc batch`: the batch (`batches.id`) and the line it runs; NULL for none
);
CREATE TABLE IF NOT EXISTS batches (  -- `planc batch`: one plan, a run per line of arguments
    id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    finished_at REAL,              -- when every line had run (or was refused); NULL until then
    plan TEXT NOT NULL,            -- JSON: the stored plan every line runs
    lines TEXT NOT NULL,           -- JSON: [[line number, its arguments]], every line of the file but blank ones
    refused TEXT NOT NULL,         -- JSON: {line number: why the check refused it}; such a line never runs
    options TEXT NOT NULL          -- JSON: how its runs run (config, policy, principal, executor, parallel)
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
    idempotency_key TEXT,          -- the call's (backend/calls/idempotency.py); NULL for a model's, or before schema 5
    labels TEXT,                   -- JSON: {"sources": {argument: [labels]}, "control": [labels]; for a call the policy
                                   -- flagged, "flagged": why, "approved": whether a person let it through}
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
CREATE TABLE IF NOT EXISTS shapes (  -- what each trusted tool's results look like (registry/tools/learned_shapes.py)
    tool TEXT PRIMARY KEY,
    schema TEXT NOT NULL,          -- JSON Schema: types, field names, lengths; never a value
    calls INTEGER NOT NULL,        -- how many successful calls it was learned from
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (   -- every step of the plan each run ran, nested ones too (store/plan_steps.py)
    run_id TEXT NOT NULL REFERENCES runs(id),
    path TEXT NOT NULL,            -- its step path: `2`, `3/do.1`
    position INTEGER NOT NULL,     -- its number among its siblings: 1 for `1` and for `3/do.1`
    depth INTEGER NOT NULL,        -- how many blocks it is in: 0 for a top-level step
    tool TEXT NOT NULL,            -- what it calls: a tool, a declared plan or a built-in step
    arguments TEXT NOT NULL,       -- JSON: {argument: its kind (plan_steps.ARGUMENT_KINDS)}; never a value
    piped INTEGER NOT NULL,        -- 1 when the step before it in its pipeline is its input
    usd_each REAL NOT NULL,        -- what one call of its tool is declared to cost
    calls_low REAL, calls_high REAL,  -- what the check estimated one run of the step costs: calls,
    usd_low REAL, usd_high REAL,      -- dollars and milliseconds (its critical path), least and most;
    ms_low REAL, ms_high REAL,        -- a NULL most has no bound; all NULL for a run recorded before schema 9
    started_at REAL,               -- when it first started and last ended (its events' times; a step in a
    finished_at REAL,              -- block: NULL, as it runs once per item); NULL when it never did
    failed INTEGER,                -- the number of the event that said it failed (the run's first such);
    error_type TEXT,               -- what failed (ToolFailed, RunError, ...), and the diagnostic code of a
    code TEXT,                     -- refusal that has one (E400, E401); NULL when it did not fail
    PRIMARY KEY (run_id, path)
);
CREATE TABLE IF NOT EXISTS rounds (  -- `planc plan`: each answer of the model, as checked
    run_id TEXT NOT NULL REFERENCES runs(id),
    round INTEGER NOT NULL,        -- 1 for the first answer, then one per repair
    ok INTEGER NOT NULL,           -- 1 when its plan checked
    codes TEXT NOT NULL,           -- JSON: the code of each of its error diagnostics, in order
    PRIMARY KEY (run_id, round)
);
CREATE TABLE IF NOT EXISTS leases (  -- the process recording into a run now (store/lease.py)
    run_id TEXT PRIMARY KEY REFERENCES runs(id),
    pid INTEGER NOT NULL,
    pid_started TEXT,              -- when that process started, where the system says: pids are reused
    token TEXT NOT NULL,           -- the lease's own: one process tells its leases apart
    taken_at REAL NOT NULL
);
"""

# What a store of an older schema lacks, added by `_migrate`: (table, column, its declaration, how to fill it).
ADDED_COLUMNS = (
    ("runs", "options", "TEXT", None),
    ("runs", "batch", "TEXT", None),
    ("runs", "batch_line", "INTEGER", None),
    ("events", "refs", "TEXT", None),
    (
        "calls",
        "outcome",
        "TEXT",
        # A timeout was recorded as a failure before outcomes: its effect is just as unknown as any other's.
        "CASE WHEN finished_at IS NULL THEN NULL WHEN error IS NULL THEN 'ok' "
        "WHEN error LIKE '%failed: CallTimedOut: %' THEN 'unknown' ELSE 'failed' END",
    ),
    ("calls", "idempotency_key", "TEXT", None),  # a call made before keys had none, and was given none
    ("calls", "labels", "TEXT", None),  # a call made before labels: nothing is known of where its values came from
)


def plain_json(value: object) -> Any:
    """`value` as it reads back from JSON: what a recorded input is compared with."""
    return json.loads(to_json(value))


class RunStore:
    def __init__(self, path: str | Path = STORE_PATH, *, read_only: bool = False) -> None:
        """The run store at `path`: an SQLite file, or "postgresql:$NAME" (the DSN in $NAME); made, or
        brought up to this schema. `read_only`: a command that only reads, which reads an SQLite store it
        cannot write."""
        self.leases: dict[str, Holder] = {}  # run id -> the lease this store took on it
        self.backend: PostgresBackend | SqliteBackend
        if is_postgresql(path):
            self.backend = PostgresBackend(str(path), SCHEMA_VERSION, _set_up)
        else:
            self.backend = SqliteBackend(Path(path), read_only, SCHEMA_VERSION, _set_up)
        self.path = Path(self.backend.where)  # what its messages name: the file, or postgresql:$NAME
        self.db = self.backend.db

    def close(self) -> None:
        for holder in self.leases.values():
            holder.give_back()
        self.backend.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator:
        """One committed transaction: what is written inside is all there, or none of it; a RunStoreError
        when it cannot be written."""
        try:
            with self.backend.transaction() as db:
                yield db
        except self.backend.errors as error:
            raise store_failure(self.path, "write to", error) from None

    @contextlib.contextmanager
    def reading(self) -> Iterator:
        """Reads, a RunStoreError when the store cannot be read."""
        try:
            yield self.db
        except self.backend.errors as error:
            raise store_failure(self.path, "read", error) from None
        except LookupError as error:  # a reference to a value the store does not hold
            raise RunStoreError(f"{self.path}: cannot read the run store: it is damaged ({error})") from None

    def start_run(
        self,
        stored_plan: dict | None,
        arguments: Mapping,
        options: dict | None = None,
        batch: tuple[str, int] | None = None,
        steps: list[tuple] | None = None,
    ) -> str:
        """A new run of `stored_plan` (None while a model is writing the plan: `set_plan` records it then),
        and its id; `options` says how it runs, so that replay and resume can do the same; `batch`, the
        batch and line it runs (`start_batch`); `steps`, the plan's rows (`plan_steps.checked_step_rows`),
        else they are read from its text, without the check's estimates."""
        run_id = clock.new_run_id()
        holder = Holder()
        batch_id, line = batch or (None, None)
        with self.transaction() as db:
            db.execute(
                "INSERT INTO runs (id, started_at, status, plan, arguments, options, batch, batch_line) "
                "VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
                (
                    run_id,
                    clock.now(),
                    keep(db, stored_plan),
                    keep(db, dict(arguments or {})),
                    to_json(options or {}),
                    batch_id,
                    line,
                ),
            )
            if stored_plan is not None:
                _keep_steps(db, run_id, stored_plan, steps)
            self._lease(db, run_id, holder)
        return run_id

    def start_batch(
        self, stored_plan: dict, lines: list[tuple[int, Mapping | None]], refused: dict[int, str], options: dict
    ) -> str:
        """A new batch of runs of `stored_plan`, one per line of arguments, and its id: `lines` holds each
        line's number and arguments, `refused` why the check refused a line (it never runs)."""
        batch_id = clock.new_run_id()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO batches (id, started_at, plan, lines, refused, options) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    batch_id,
                    clock.now(),
                    keep(db, stored_plan),
                    keep(db, [list(line) for line in lines]),
                    keep(db, {str(number): why for number, why in refused.items()}),
                    to_json(options),
                ),
            )
        return batch_id

    def refuse_lines(self, batch_id: str, refused: dict[int, str]) -> None:
        """More lines of the batch that the check refuses (checked again when the batch is resumed)."""
        with self.transaction() as db:
            row = db.execute("SELECT refused FROM batches WHERE id = ?", (batch_id,)).fetchone()
            kept = {**Values(db)(row[0]), **{str(number): why for number, why in refused.items()}}
            db.execute("UPDATE batches SET refused = ? WHERE id = ?", (keep(db, kept), batch_id))

    def finish_batch(self, batch_id: str) -> None:
        """Every line of the batch has run, or was refused."""
        with self.transaction() as db:
            db.execute("UPDATE batches SET finished_at = ? WHERE id = ?", (clock.now(), batch_id))

    def batch(self, batch_id: str) -> dict:
        """The batch `batch_id`: its plan, lines, refusals and options, and its runs by line (id and status,
        as `_as_seen`), the latest run of a line when it has several."""
        with self.reading() as db:
            row = db.execute(
                "SELECT id, started_at, finished_at, plan, lines, refused, options FROM batches WHERE id = ?", (batch_id,)
            ).fetchone()
            if row is None:
                raise RunStoreError(f"{self.path}: no batch `{batch_id}`")
            value = Values(db)
            runs = {}
            for run_id, status, line in db.execute(
                "SELECT id, status, batch_line FROM runs WHERE batch = ? ORDER BY started_at, id", (batch_id,)
            ):
                runs[line] = self._as_seen(db, {"id": run_id, "status": status})
            return {
                "id": row[0],
                "started_at": row[1],
                "finished_at": row[2],
                "plan": value(row[3]),
                "lines": [tuple(line) for line in value(row[4])],
                "refused": {int(number): why for number, why in value(row[5]).items()},
                "options": read_record(row[6]),
                "runs": runs,
            }

    def batch_spent(self, batch_id: str) -> float:
        """What the batch's runs spent, in dollars (`SPENT`)."""
        with self.reading() as db:
            return db.execute(f"SELECT COALESCE(SUM({self._spent}), 0) FROM runs r WHERE r.batch = ?", (batch_id,)).fetchone()[0]

    def batch_calls(self, batch_id: str) -> list[str]:
        """The tool of every call the batch's runs made (a call the gate refused was not made)."""
        with self.reading() as db:
            return [
                row[0]
                for row in db.execute(
                    f"SELECT c.tool FROM calls c JOIN runs r ON c.run_id = r.id WHERE r.batch = ? AND {_MADE}", (batch_id,)
                )
            ]

    @property
    def _spent(self) -> str:
        """What run `r` spent (`SPENT`), in this backend's SQL."""
        return SPENT.format(usd=self.backend.json_number("e.event", "usd"))

    def take_lease(self, run_id: str) -> None:
        """Take `run_id` to record into it (a resume): refused (RunLeased) while a live process holds it, and
        for a run that has finished; it is `running` again until it finishes."""
        holder = Holder()
        with self.transaction() as db:
            row = db.execute(f"SELECT status FROM runs WHERE id = ?{self.backend.row_lock}", (run_id,)).fetchone()
            if row is None:
                raise RunStoreError(f"{self.path}: no run `{run_id}`")
            if row[0] in ("ok", "error"):
                raise RunLeased(f"run {run_id} already finished ({row[0]}): nothing to resume")
            lease = db.execute("SELECT pid, pid_started, token, taken_at FROM leases WHERE run_id = ?", (run_id,)).fetchone()
            if lease is not None and self.backend.lease_held(db, run_id, *lease[:3]):
                raise RunLeased(
                    f"run {run_id} is being recorded by process {lease[0]} (since "
                    f"{time.strftime('%H:%M:%S', time.localtime(lease[3]))}): one process at a time "
                    f"records into a run, so it is resumed once that process has ended"
                )
            db.execute("UPDATE runs SET status = 'running', finished_at = NULL, message = NULL WHERE id = ?", (run_id,))
            self._lease(db, run_id, holder)

    def _lease(self, db: Db, run_id: str, holder: Holder) -> None:
        db.execute(
            "INSERT INTO leases (run_id, pid, pid_started, token, taken_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET pid = excluded.pid, pid_started = excluded.pid_started, "
            "token = excluded.token, taken_at = excluded.taken_at",
            (run_id, holder.pid, holder.started, holder.token, clock.now()),
        )
        self.backend.lease_taken(db, run_id)
        holder.take()  # the transaction commits, or the exception leaves the holder unused
        self.leases[run_id] = holder

    def give_back(self, run_id: str) -> None:
        """Give back the lease on `run_id` without finishing the run (a resume that did not start)."""
        holder = self.leases.pop(run_id, None)
        if holder is not None:
            holder.give_back()
            self.backend.lease_given_back(run_id)
            with contextlib.suppress(RunStoreError):  # a lease whose holder has gone is broken anyway
                with self.transaction() as db:
                    db.execute("DELETE FROM leases WHERE run_id = ? AND token = ?", (run_id, holder.token))

    def call_started(
        self,
        run_id: str,
        sequence: int,
        step: str,
        tool: str,
        arguments: Mapping,
        key: str | None = None,
        labels: dict | None = None,
    ) -> None:
        """The intent row of a call about to be made, with its idempotency key and its arguments' labels."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO calls (run_id, sequence, step, tool, input, started_at, idempotency_key, labels) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, sequence, step, tool, keep(db, arguments), clock.now(), key, _labels_json(labels)),
            )

    def call_ended(
        self, run_id: str, sequence: int, outcome: str, output: object = None, error: str | None = None, learn: str | None = None
    ) -> None:
        """How the call of row `sequence` ended: its outcome, and its output (when ok) or error. With `learn` (a
        tool's name), an ok output widens the shape learned of that tool's results, in the same transaction."""
        with self.transaction() as db:
            db.execute(
                "UPDATE calls SET output = ?, error = ?, outcome = ?, finished_at = ? WHERE run_id = ? AND sequence = ?",
                (keep(db, output) if outcome == "ok" else None, error, outcome, clock.now(), run_id, sequence),
            )
            if learn is not None and outcome == "ok":
                _learn(db, learn, output)

    def learned_shapes(self) -> dict[str, LearnedShape]:
        """The shape learned of each tool's results, by tool name."""
        with self.reading() as db:
            return {
                tool: LearnedShape(tool, json.loads(schema), calls)
                for tool, schema, calls in db.execute("SELECT tool, schema, calls FROM shapes ORDER BY tool")
            }

    def call_made(self, run_id: str, sequence: int, key: str | None, labels: dict | None) -> None:
        """The call of row `sequence`, which a person approved, is being made now: an intent row again (its
        outcome unknown until it ends), with the idempotency key it is made with."""
        with self.transaction() as db:
            db.execute(
                "UPDATE calls SET outcome = NULL, error = NULL, started_at = ?, finished_at = NULL, "
                "idempotency_key = ?, labels = ? WHERE run_id = ? AND sequence = ?",
                (clock.now(), key, _labels_json(labels), run_id, sequence),
            )

    def call_declined(
        self, run_id: str, sequence: int, step: str, tool: str, arguments: Mapping, message: str, labels: dict | None = None
    ) -> None:
        """The row of a call the gate refused: it was not made, and it ended as it started. It takes the place
        of row `sequence` when there is one (a call that waited for approval, answered no on a terminal)."""
        now = clock.now()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO calls (run_id, sequence, step, tool, input, output, error, started_at, finished_at, "
                f"outcome, idempotency_key, labels) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, 'not_approved', NULL, ?) "
                f"{_REPLACING_CALL}",
                (run_id, sequence, step, tool, keep(db, arguments), message, now, now, _labels_json(labels)),
            )

    def event(self, run_id: str, sequence: int, at: float, event: dict) -> None:
        """The run's event number `sequence`, which happened at `at` (seconds since the epoch)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO events (run_id, sequence, at, event, refs) VALUES (?, ?, ?, ?, ?)",
                (run_id, sequence, at, *keep_event(db, event)),
            )
            _step_event(db, run_id, sequence, at, event)

    def set_plan(self, run_id: str, stored_plan: dict, steps: list[tuple] | None = None) -> None:
        """The plan a run runs, once a model has written it and it checked; `steps` as `start_run` takes them."""
        with self.transaction() as db:
            db.execute("UPDATE runs SET plan = ? WHERE id = ?", (keep(db, stored_plan), run_id))
            _keep_steps(db, run_id, stored_plan, steps)

    def keep_rounds(self, run_id: str, rounds: list[tuple[bool, list[str]]]) -> None:
        """How each answer of a `planc plan` run's model checked: whether it did, and its errors' codes."""
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO rounds (run_id, round, ok, codes) VALUES (?, ?, ?, ?)",
                [(run_id, number, ok, json.dumps(codes)) for number, (ok, codes) in enumerate(rounds, start=1)],
            )

    def keep_file(self, text: str) -> str:
        """Keep `text` (a file a run read), once however many runs read it; its hash names it."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self.transaction() as db:
            db.execute("INSERT INTO files (hash, text) VALUES (?, ?) ON CONFLICT DO NOTHING", (digest, text))
        return digest

    def file(self, digest: str) -> str:
        with self.reading() as db:
            row = db.execute("SELECT text FROM files WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path}: no file with hash {digest}")
        return row[0]

    def finish_run(self, run_id: str, status: str, output: object = None, message: str | None = None) -> None:
        """How the run ended; its lease is given back with it."""
        holder = self.leases.pop(run_id, None)
        try:
            with self.transaction() as db:
                db.execute(
                    "UPDATE runs SET finished_at = ?, status = ?, output = ?, message = ? WHERE id = ?",
                    (clock.now(), status, keep(db, output), message, run_id),
                )
                if holder is not None:
                    db.execute("DELETE FROM leases WHERE run_id = ? AND token = ?", (run_id, holder.token))
        finally:
            if holder is not None:
                holder.give_back()  # this process is done with the run: a lease left in the store is broken
                self.backend.lease_given_back(run_id)

    def last_event(self, run_id: str) -> int:
        """The sequence of `run_id`'s last event (0 for none): a resumed run's events come after it."""
        with self.reading() as db:
            return db.execute("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE run_id = ?", (run_id,)).fetchone()[0]

    def runs(self, principal: str | None = None) -> list[dict]:
        """Every run, oldest first; with `principal`, only those recorded for that principal."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT r.id, r.started_at, r.finished_at, r.status, r.message, "
                f"(SELECT COUNT(*) FROM calls c WHERE c.run_id = r.id AND {_MADE}), "
                f"r.batch, r.batch_line, {self._spent}, r.options FROM runs r ORDER BY r.started_at, r.id"
            ).fetchall()
            if principal is not None:
                rows = [row for row in rows if row[9] is not None and read_record(row[9]).get("principal") == principal]
            return [
                self._as_seen(
                    db,
                    {
                        "id": row[0],
                        "started_at": row[1],
                        "finished_at": row[2],
                        "status": row[3],
                        "message": row[4],
                        "calls": row[5],
                        "batch": row[6],
                        "batch_line": row[7],
                        "spent_usd": row[8],
                        **({"awaiting": self._awaiting(db, row[0])} if row[3] == "awaiting_approval" else {}),
                    },
                )
                for row in rows
            ]

    def call_awaiting(
        self,
        run_id: str,
        sequence: int,
        step: str,
        tool: str,
        arguments: Mapping,
        asks: str,
        key: str | None = None,
        labels: dict | None = None,
    ) -> None:
        """The row of a call that waits for a person's answer (`asks` says what it asks); it is not made. It
        takes the place of row `sequence` when there is one (a call a resume would make again)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO calls (run_id, sequence, step, tool, input, output, error, started_at, finished_at, "
                "outcome, idempotency_key, labels) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, NULL, 'awaiting_approval', "
                f"?, ?) {_REPLACING_CALL}",
                (run_id, sequence, step, tool, keep(db, arguments), asks, clock.now(), key, _labels_json(labels)),
            )

    def awaiting(self, run_id: str) -> list[dict]:
        """The calls of `run_id` that wait for a person's answer: sequence, step, tool, input and what each asks."""
        with self.reading() as db:
            return self._awaiting(db, run_id)

    def _awaiting(self, db: Db, run_id: str) -> list[dict]:
        value = Values(db)
        return [
            {"sequence": row[0], "step": row[1], "tool": row[2], "input": value(row[3]), "asks": row[4]}
            for row in db.execute(
                "SELECT sequence, step, tool, input, error FROM calls WHERE run_id = ? AND "
                "outcome = 'awaiting_approval' ORDER BY sequence",
                (run_id,),
            )
        ]

    def answer(self, run_id: str, sequence: int | None, approved: bool, denied: str) -> dict:
        """A person's answer to the call `sequence` of `run_id` (None: the one call that waits), and the run's
        lease taken to continue it, in one transaction: of two processes that answer at once, one does and the
        other is told it was answered (NotWaiting); `denied`, the message a denied call stops the run with
        (`{step}` and `{tool}` filled in).
        The run as it is now."""
        holder = Holder()
        with self.transaction() as db:
            row = db.execute(f"SELECT status FROM runs WHERE id = ?{self.backend.row_lock}", (run_id,)).fetchone()
            if row is None:
                raise RunStoreError(f"{self.path}: no run `{run_id}`")
            waiting = self._awaiting(db, run_id)
            chosen = [call for call in waiting if sequence is None or call["sequence"] == sequence]
            if row[0] != "awaiting_approval" or not chosen:
                raise NotWaiting(self._not_waiting(db, run_id, row[0], sequence))
            if len(chosen) > 1:
                listed = ", ".join(f"{call['sequence']} (step {call['step']}, `{call['tool']}`)" for call in chosen)
                raise NotWaiting(f"run {run_id} has {len(chosen)} calls waiting for approval: {listed}; say which with --call N")
            answered = db.execute(
                "UPDATE calls SET outcome = ?, error = ?, finished_at = ? WHERE run_id = ? AND sequence = ? "
                "AND outcome = 'awaiting_approval'",
                (
                    "approved" if approved else "not_approved",
                    None if approved else denied.format(**chosen[0]),
                    None if approved else clock.now(),
                    run_id,
                    chosen[0]["sequence"],
                ),
            )
            if answered.rowcount != 1:  # never, inside this transaction; said rather than assumed
                raise NotWaiting(f"call {chosen[0]['sequence']} of run {run_id} was answered already")
            db.execute("UPDATE runs SET status = 'running', finished_at = NULL, message = NULL WHERE id = ?", (run_id,))
            self._lease(db, run_id, holder)
        return self.run(run_id)

    def _not_waiting(self, db: Db, run_id: str, status: str, sequence: int | None) -> str:
        """Why there is nothing to answer in `run_id` (its `status`), or at its call `sequence`."""
        if sequence is not None:
            row = db.execute("SELECT outcome FROM calls WHERE run_id = ? AND sequence = ?", (run_id, sequence)).fetchone()
            if row is None:
                return f"run {run_id} has no call {sequence}"
            if row[0] != "awaiting_approval":
                answered = {"approved": "it was approved already", "not_approved": "it was denied (or answered no)"}
                return f"call {sequence} of run {run_id} does not wait for approval: {answered.get(row[0], 'it was made')}"
        if status == "running":
            status = self._as_seen(db, {"id": run_id, "status": status})["status"]
        said = {
            "running": "it is running",
            "awaiting_approval": "no call of it waits",
            "ok": "it finished (ok)",
            "error": "it finished (an exit with status error)",
            "failed": "it failed",
            "interrupted": "it was interrupted (`planc resume` continues it)",
        }.get(status, status)
        return f"run {run_id} does not wait for approval: {said}"

    def find(self, name: str, table: str = "runs", principal: str | None = None) -> str:
        """The id of the run (or, with `table="batches"`, the batch) `name` names: its id, a prefix of one id
        only, or `last` (the latest started). With `principal`, only the runs recorded for that principal are
        looked at: another's are as if they were not there."""
        kind = {"runs": "run", "batches": "batch"}[table]
        mine = (
            (lambda options: True)
            if principal is None
            else (lambda options: options is not None and read_record(options).get("principal") == principal)
        )
        with self.reading() as db:
            if name == "last":
                rows = db.execute(f"SELECT id, options FROM {table} ORDER BY started_at DESC, id DESC")
                row = next((row for row in rows if mine(row[1])), None)
                if row is None:
                    raise RunStoreError(f"{self.path}: no {kind} yet, so no `last` {kind}")
                return row[0]
            found = [
                row[0]
                for row in db.execute(
                    f"SELECT id, options FROM {table} WHERE substr(id, 1, ?) = ? ORDER BY id", (len(name), name)
                )
                if mine(row[1])
            ]
        if name in found:
            return name
        if not found:
            raise RunStoreError(f"{self.path}: no {kind} `{name}`")
        if len(found) > 1:
            shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
            raise RunStoreError(f"{self.path}: `{name}` is the start of {len(found)} {table} ({shown}): give more of it")
        return found[0]

    def _as_seen(self, db: Db, run: dict) -> dict:
        """`run` as it is: a run still `running` whose process is gone (no live process holds it) was
        interrupted, and can be resumed."""
        if run["status"] != "running":
            return run
        lease = db.execute("SELECT pid, pid_started, token FROM leases WHERE run_id = ?", (run["id"],)).fetchone()
        if lease is not None and self.backend.lease_held(db, run["id"], *lease):
            return run
        return {**run, "status": "interrupted", "message": f"its process is gone: `planc resume {run['id']}` continues it"}

    def run(self, run_id: str) -> dict:
        with self.reading():
            return self._run(run_id)

    def _run(self, run_id: str) -> dict:
        row = self.db.execute(
            "SELECT id, started_at, finished_at, status, plan, arguments, output, message, options, "
            f"batch, batch_line, {self._spent} FROM runs r WHERE id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path}: no run `{run_id}`")
        calls = self.db.execute(
            "SELECT sequence, step, tool, input, output, error, started_at, finished_at, outcome, "
            "idempotency_key, labels FROM calls WHERE run_id = ? ORDER BY sequence",
            (run_id,),
        ).fetchall()
        events = self.db.execute("SELECT at, event, refs FROM events WHERE run_id = ? ORDER BY sequence", (run_id,))
        value = Values(self.db)
        return self._as_seen(
            self.db,
            {
                "id": row[0],
                "started_at": row[1],
                "finished_at": row[2],
                "status": row[3],
                "plan": value(row[4]),
                "arguments": value(row[5]),
                "output": value(row[6]),
                "message": row[7],
                "options": read_record(row[8]) if row[8] is not None else {},
                "batch": row[9],
                "batch_line": row[10],
                "spent_usd": row[11],
                "calls": [
                    {
                        "sequence": c[0],
                        "step": c[1],
                        "tool": c[2],
                        "input": value(c[3]),
                        "output": value(c[4]),
                        "error": c[5],
                        "started_at": c[6],
                        "finished_at": c[7],
                        "outcome": c[8] or "unknown",
                        "idempotency_key": c[9],
                        "labels": json.loads(c[10]) if c[10] is not None else None,
                    }
                    for c in calls
                ],
                "events": [{"at": at, **value.event(event, refs)} for at, event, refs in events],
            },
        )


def _learn(db: Db, tool: str, output: object) -> None:
    row = db.execute("SELECT schema, calls FROM shapes WHERE tool = ?", (tool,)).fetchone()
    shape = first_shape(tool, output) if row is None else LearnedShape(tool, json.loads(row[0]), row[1]).learning(output)
    db.execute(
        "INSERT INTO shapes (tool, schema, calls, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (tool) DO UPDATE "
        "SET schema = excluded.schema, calls = excluded.calls, updated_at = excluded.updated_at",
        (tool, json.dumps(shape.schema), shape.calls, clock.now()),
    )


def learned_shapes(path: str | Path) -> dict[str, LearnedShape]:
    """The shapes learned in the run store at `path`; none when there is no store there (nothing is made)."""
    if not Path(path).is_file():
        return {}
    store = RunStore(path, read_only=True)
    try:
        return store.learned_shapes()
    finally:
        store.close()


def _keep_steps(db: Db, run_id: str, stored_plan: dict, steps: list[tuple] | None) -> None:
    rows = steps if steps is not None else recorded_step_rows(stored_plan)
    db.executemany(
        "INSERT INTO steps (run_id, path, position, depth, tool, arguments, piped, usd_each, "
        "calls_low, calls_high, usd_low, usd_high, ms_low, ms_high) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, path) DO UPDATE SET "
        + ", ".join(f"{column} = excluded.{column}" for column in _STEP_COLUMNS),
        [(run_id, *row) for row in rows],
    )


def _step_event(db: Db, run_id: str, sequence: int, at: float, event: dict) -> None:
    """What a step's event tells its row in `steps`: when it started and ended, and how it failed. The steps of
    a declared plan (a `stack`) are not the run's plan's; an item's run of a block's step (`3/do.1[4]`) tells
    only that it failed, on the block step's row."""
    kind = event.get("event")
    if kind not in ("step_started", "step_finished", "step_failed") or event.get("stack"):
        return
    path = event["step"]
    if "[" not in path:
        if kind == "step_started":
            db.execute("UPDATE steps SET started_at = COALESCE(started_at, ?) WHERE run_id = ? AND path = ?", (at, run_id, path))
        else:
            db.execute("UPDATE steps SET finished_at = ? WHERE run_id = ? AND path = ?", (at, run_id, path))
    if kind == "step_failed":
        db.execute(
            "UPDATE steps SET failed = ?, error_type = ?, code = ? WHERE run_id = ? AND path = ? AND failed IS NULL",
            (sequence, event.get("error_type"), event.get("code"), run_id, re.sub(r"\[\d+\]", "", path)),
        )


# A call row that was made, or is being made (an intent row): none waits for, or was refused, an approval.
_MADE = f"(c.outcome IS NULL OR c.outcome NOT IN ({', '.join(repr(outcome) for outcome in NOT_MADE)}))"


# A call's row that takes the place of row `sequence` when there is one (as SQLite's INSERT OR REPLACE would,
# in the SQL both backends take): every column of the new row, none of the old.
_REPLACING_CALL = "ON CONFLICT (run_id, sequence) DO UPDATE SET " + ", ".join(
    f"{column} = excluded.{column}"
    for column in (
        "step",
        "tool",
        "input",
        "output",
        "error",
        "started_at",
        "finished_at",
        "outcome",
        "idempotency_key",
        "labels",
    )
)
_STEP_COLUMNS = (
    "position",
    "depth",
    "tool",
    "arguments",
    "piped",
    "usd_each",
    "calls_low",
    "calls_high",
    "usd_low",
    "usd_high",
    "ms_low",
    "ms_high",
)


class NotWaiting(RunStoreError):
    """There is no waiting call to answer: no run waits, the call was answered already, or which is unclear."""


def _labels_json(labels: dict | None) -> str | None:
    return json.dumps(labels, sort_keys=True) if labels is not None else None


def _set_up(backend: SqliteBackend | PostgresBackend) -> None:
    """The schema made in `backend`'s store, or a store written by an older planc brought up to it: the
    columns it lacks added (`ADDED_COLUMNS`); the tables it lacks SCHEMA made; the steps of the runs it holds
    (schema 9); and this schema's views."""
    backend.create(SCHEMA)
    version = backend.version()
    if version >= SCHEMA_VERSION:
        return
    with backend.transaction() as db:
        for table, column, declaration, fill in ADDED_COLUMNS:
            if column not in backend.columns(db, table):
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                if fill is not None:
                    db.execute(f"UPDATE {table} SET {column} = {fill}")
        if version < 9:  # the steps of the runs recorded before they were kept: from each run's plan text
            for run_id, plan in db.execute("SELECT id, plan FROM runs WHERE plan <> 'null'").fetchall():
                _keep_steps(db, run_id, Values(db)(plan), None)
        make_views(db, backend.json_items)
        backend.set_version(db, SCHEMA_VERSION)


__all__ = ["OUTCOMES", "NotWaiting", "RunLeased", "RunStore", "RunStoreError"]
