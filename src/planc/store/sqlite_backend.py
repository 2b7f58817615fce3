"""The run store's SQLite backend: a file on this machine, the default.

What differs from PostgreSQL's (`postgres_backend.py`) and nothing else: how the file is opened
(WAL, a full fsync per commit; only to read where it cannot be written), how a transaction takes
the store (`BEGIN IMMEDIATE`: one writer at a time, so a run's row needs no lock of its own), where
the schema's version is kept (`PRAGMA user_version`), and how a lease is known to be held: by its
process, which is on this machine (`lease.holds`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from planc.store import faults
from planc.store.faults import RunStoreError, cannot_write, refuse_newer, store_failure
from planc.store.lease import holds

if TYPE_CHECKING:
    from planc.store.db import Db


class SqliteBackend:
    errors = sqlite3.Error
    row_lock = ""  # BEGIN IMMEDIATE has taken the whole store

    def __init__(self, path: Path, read_only: bool, version: int, set_up: Callable) -> None:
        """The store at `path`, made or brought up to `version` by `set_up(self)`; with `read_only`, a store
        that cannot be written is opened to read it."""
        self.path, self.where = path, path
        if read_only and not path.is_file():
            raise RunStoreError(f"{path}: there is no run store here")
        try:
            if not read_only:
                path.parent.mkdir(parents=True, exist_ok=True)
            self.db = self._open(version, set_up)
        except (OSError, sqlite3.Error) as error:
            if not (read_only and cannot_write(error)):
                raise store_failure(path, "open", error) from None
            self.db = self._open_to_read(version)

    def _open(self, version: int, set_up: Callable) -> sqlite3.Connection:
        existed = self.path.exists()
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=faults.BUSY_TIMEOUT_S)
        try:
            if existed:
                refuse_newer(self.version(), version, self.path)  # before anything is written
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            set_up(self)
        except BaseException:
            self.db.close()
            raise
        return self.db

    def _open_to_read(self, version: int) -> sqlite3.Connection:
        """The store opened only to read it: where its folder cannot be written (a read-only filesystem),
        SQLite cannot make the files it reads a WAL store with, and reads it as a file no one changes."""
        uri = self.path.resolve().as_uri()
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                db = sqlite3.connect(uri + query, uri=True, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as error:
                failed = error
                continue
            try:
                found = db.execute("PRAGMA user_version").fetchone()[0]
                db.execute("SELECT 1 FROM runs LIMIT 1").fetchall()
            except sqlite3.Error as error:
                db.close()
                failed = error
                continue
            if found > version:
                db.close()
                refuse_newer(found, version, self.path)
            if found < version:
                db.close()
                raise RunStoreError(
                    f"{self.path}: cannot read the run store: an older planc wrote it, and it cannot "
                    f"be brought up to date here, as it cannot be written"
                )
            return db
        raise store_failure(self.path, "open", failed)

    @staticmethod
    def json_items(column: str, alias: str) -> str:
        """The items of the JSON list in `column`, as a table `alias` with a column `value`, in SQL."""
        return f"json_each({column}) {alias}"

    @staticmethod
    def json_number(column: str, field: str) -> str:
        """The number at `field` of the JSON text in `column`, in SQL (NULL where there is none)."""
        return f"json_extract({column}, '$.{field}')"

    def create(self, schema: str) -> None:
        self.db.executescript(schema)

    def version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def set_version(self, db: Db, version: int) -> None:
        db.execute(f"PRAGMA user_version = {int(version)}")

    def columns(self, db: Db, table: str) -> set[str]:
        return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                yield self.db
        except sqlite3.Error:
            if self.db.in_transaction:  # a commit that failed leaves it open
                with contextlib.suppress(sqlite3.Error):
                    self.db.rollback()
            raise

    def lease_held(self, db: Db, run_id: str, pid: int, started: str | None, token: str) -> bool:
        return holds(pid, started, token)

    def lease_taken(self, db: Db, run_id: str) -> None:
        """Nothing more than the lease's row: its process is this one."""

    def lease_given_back(self, run_id: str) -> None:
        """Nothing more than the lease's row."""

    def close(self) -> None:
        self.db.close()
