"""SQL tools: one read-only query over an SQLite database, declared as a tool.

    [tools.open_incidents]
    provider = "sql:incidents.sqlite"          # from the folder of planc.toml
    query = "SELECT id, title FROM incidents WHERE team = :team LIMIT :limit"
    params = { team = { type = "string" }, limit = { type = "integer", maximum = 100, default = 20 } }
    returns_at_most = "limit"

The tool's parameters are the query's named parameters; its result is the rows, each a record of
its columns. Read-only is enforced, never declared: the database is opened read-only, `PRAGMA
query_only` is on, and an authorizer lets the statement read and nothing else (no write, no ATTACH,
no pragma, no extension), so a query edited to `DELETE` fails before it touches the file. The query
is prepared when planc.toml is loaded: a syntax error, an unknown table or a parameter that does not
match is a `file:line` error then.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

# What a query may do: read. Everything else (INSERT, UPDATE, DELETE, ATTACH, PRAGMA, CREATE, a
# transaction, ...) is denied by the authorizer while the statement is prepared.
ALLOWED = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE})
DENIED_FUNCTIONS = frozenset({"load_extension", "writefile", "edit"})
# A quoted name, a string, a comment, or a parameter: only the last counts.
TOKENS = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?\*/"
    r"|(?P<name>[:@$][A-Za-z_][A-Za-z0-9_]*)|(?P<positional>\?\d*)",
    re.DOTALL,
)


class SqlError(Exception):
    """A query that cannot be used: it does not parse, reads what is not there, or would do more than read."""


def query_parameters(query: str, tokens: re.Pattern = TOKENS) -> list[str]:
    """The named parameters of `query`, in order, each once (`:team` and `@team` are `team`); `tokens` is
    the dialect's scanner (`TOKENS`, SQLite's; PostgreSQL's is in `postgres_tools`).

    >>> query_parameters("SELECT * FROM t WHERE a = :a AND b = ':x' AND c = @c -- :d\\n AND e = :a")
    ['a', 'c']
    """
    found: dict[str, None] = {}
    for match in tokens.finditer(query):
        if match.group("positional"):
            raise SqlError(
                f"a positional parameter (`{match.group('positional')}`) has no name for a plan to give it: write `:name`"
            )
        if match.group("name"):
            found[match.group("name")[1:]] = None
    return list(found)


def _authorize(action: int, first: str | None, second: str | None, database: str | None, trigger: str | None) -> int:
    if action not in ALLOWED or (action == sqlite3.SQLITE_FUNCTION and (second or "").lower() in DENIED_FUNCTIONS):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def open_read_only(path: Path) -> sqlite3.Connection:
    """A connection to the database at `path` that can only read it."""
    if not path.is_file():
        raise SqlError(f"no database at {path}")
    try:
        connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, check_same_thread=False)
        connection.execute("PRAGMA query_only = ON")
    except sqlite3.Error as error:
        raise SqlError(f"cannot open {path} to read it: {error}") from None
    connection.set_authorizer(_authorize)
    return connection


def prepare(path: Path, query: str) -> list[str]:
    """The columns of `query`'s rows, once it is prepared against the database at `path` without running."""
    connection = open_read_only(path)
    nulls = {name: None for name in query_parameters(query)}
    try:
        connection.execute(f"EXPLAIN {query}", nulls)  # prepared, and every table and column looked up
        return [column[0] for column in connection.execute(f"SELECT * FROM ({query}) LIMIT 0", nulls).description]
    except (sqlite3.Error, sqlite3.Warning) as error:
        raise SqlError(_explain(error)) from None
    finally:
        connection.close()


def run_query(path: Path, query: str, arguments: dict) -> list[dict]:
    """The rows of `query` with `arguments`, each a record of its columns."""
    connection = open_read_only(path)
    try:
        cursor = connection.execute(query, arguments)
        columns = [column[0] for column in cursor.description or ()]
        return [dict(zip(columns, row)) for row in cursor.fetchall()]
    except (sqlite3.Error, sqlite3.Warning) as error:
        raise SqlError(_explain(error)) from None
    finally:
        connection.close()


def _explain(error: Exception) -> str:
    text = str(error)
    if "not authorized" in text:
        return "the query would do more than read (a write, ATTACH, a pragma...): it may only read"
    return text
