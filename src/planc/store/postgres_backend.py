"""The run store's PostgreSQL backend: one history that workers on several machines write.

`store = "postgresql:$NAME"` (or `--store`, $PLANC_STORE) reads the DSN from the environment
variable NAME; it is never written anywhere planc keeps. The tables are the SQLite store's, in a
schema of their own (`planc`), with its version in `planc.schema_version`; what differs is only:

- the store's SQL is SQLite's, with `?` for each value: `execute` turns it into psycopg's `%s`;
- a lease is held by a session-level advisory lock on the run (keyed by its id), taken by the
  process's connection: the server itself knows whether a holder on any machine is still
  connected, and a process killed with SIGKILL, or a machine that stopped, gives the lock back as
  its connection ends. A run's row is locked (`FOR UPDATE`) while a resume looks at its lease, so
  two resumes cannot both see it free;
- the schema is made, or brought up to date, under a transaction-level advisory lock, so that two
  processes starting on an empty database do not make it twice.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planc.registry.tools.postgres_tools import environment_dsn
from planc.store.faults import RunLeased, RunStoreError, refuse_newer

if TYPE_CHECKING:
    import psycopg

    from planc.store.db import Db, Rows

SCHEMA_NAME = "planc"
SET_UP_LOCK = 0x706C616E63  # "planc": the advisory lock the schema is made under
CONNECT_TIMEOUT_S = 10


def is_postgresql(where: str | Path) -> bool:
    return str(where).startswith("postgresql:")


class PostgresBackend:
    row_lock = " FOR UPDATE"

    def __init__(self, where: str, version: int, set_up: Callable) -> None:
        self.where = where
        try:
            dsn = environment_dsn(where)
        except ValueError as error:
            raise RunStoreError(f"{where}: {error}") from None
        try:
            import psycopg
        except ImportError:
            raise RunStoreError(f"{where}: a PostgreSQL run store needs psycopg: pip install 'planc[postgresql]'") from None
        self.errors = psycopg.Error
        try:
            self.connection = psycopg.connect(
                dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="planc run store"
            )
        except psycopg.Error as error:
            raise RunStoreError(f"{where}: cannot open the run store: {_words(error)}") from None
        self.db = _Connection(self.connection)
        try:
            self.db.execute(f"SET search_path TO {SCHEMA_NAME}")
            with self.connection.transaction():
                self.db.execute("SELECT pg_advisory_xact_lock(?)", (SET_UP_LOCK,))
                self.db.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA_NAME}")
                self.db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                refuse_newer(self.version(), version, where)  # before anything is written
                set_up(self)
        except psycopg.Error as error:
            self.connection.close()
            raise RunStoreError(f"{where}: cannot open the run store: {_words(error)}") from None
        except BaseException:
            self.connection.close()
            raise

    @staticmethod
    def json_items(column: str, alias: str) -> str:
        """The items of the JSON list in `column`, as a table `alias` with a column `value`, in SQL."""
        return f"jsonb_array_elements_text(CAST({column} AS jsonb)) AS {alias}(value)"

    @staticmethod
    def json_number(column: str, field: str) -> str:
        """The number at `field` of the JSON text in `column`, in SQL (NULL where there is none)."""
        return f"CAST(CAST({column} AS jsonb) ->> '{field}' AS DOUBLE PRECISION)"

    def create(self, schema: str) -> None:
        self.db.execute(re.sub(r"\bREAL\b", "DOUBLE PRECISION", schema))  # SQLite's REAL holds 8 bytes

    def version(self) -> int:
        row = self.db.execute("SELECT max(version) FROM schema_version").fetchone()
        return row[0] or 0

    def set_version(self, db: Db, version: int) -> None:
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    def columns(self, db: Db, table: str) -> set[str]:
        return {
            row[0]
            for row in db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?",
                (SCHEMA_NAME, table),
            )
        }

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Connection]:
        with self.connection.transaction():
            yield self.db

    def lease_held(self, db: Db, run_id: str, pid: int, started: str | None, token: str) -> bool:
        high, low = _lock_key(run_id)
        return db.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1)",
            (high, low),
        ).fetchone()[0]

    def lease_taken(self, db: Db, run_id: str) -> None:
        """The run's advisory lock, held by this connection until given back or the connection ends."""
        if not db.execute("SELECT pg_try_advisory_lock(?)", (_lock_number(run_id),)).fetchone()[0]:
            raise RunLeased(
                f"run {run_id} is being recorded by another process: one process at a time records "
                "into a run, so it is resumed once that process has ended"
            )

    def lease_given_back(self, run_id: str) -> None:
        with contextlib.suppress(self.errors):  # a connection gone has given every lock back
            self.db.execute("SELECT pg_advisory_unlock(?)", (_lock_number(run_id),))

    def close(self) -> None:
        self.connection.close()


class _Connection:
    """psycopg's connection, taking the store's SQL as SQLite's module does: `?` for each value."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = connection

    def execute(self, sql: str, params: Any = None, /) -> Rows:
        return self.connection.execute(_placeholders(sql) if params is not None else sql, params)

    def executemany(self, sql: str, rows: Iterable[Any], /) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(_placeholders(sql), rows)


@functools.lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """`sql` with psycopg's `%s` for SQLite's `?` (the store's SQL holds no `?` in its text otherwise).

    >>> _placeholders("SELECT a FROM t WHERE b LIKE 'x%' AND c = ?")
    "SELECT a FROM t WHERE b LIKE 'x%%' AND c = %s"
    """
    return sql.replace("%", "%%").replace("?", "%s")


def _lock_number(run_id: str) -> int:
    """The advisory lock of `run_id`: 64 bits of its hash, as PostgreSQL's bigint."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big", signed=True)


def _lock_key(run_id: str) -> tuple[int, int]:
    """The lock's number as pg_locks shows it: its high and its low 32 bits."""
    number = _lock_number(run_id) & 0xFFFFFFFFFFFFFFFF
    return number >> 32, number & 0xFFFFFFFF


def _words(error: Exception) -> str:
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
