"""What the run store's code reads and writes through: SQLite's connection, or PostgreSQL's behind the same
two calls (`postgres_backend._Connection`), with `?` for each value."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol


class Rows(Protocol):
    """The rows a statement gives (a cursor)."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """A connection of either backend."""

    def execute(self, sql: str, params: Any = ..., /) -> Rows: ...

    def executemany(self, sql: str, rows: Iterable[Any], /) -> object: ...
