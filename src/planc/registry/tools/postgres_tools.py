"""SQL tools over PostgreSQL: one read-only query, declared as a tool, its database named by the environment.

    [tools.open_incidents]
    provider = "postgresql:$INCIDENTS_DSN"     # the DSN is read from $INCIDENTS_DSN, never written here
    query = "SELECT id, title FROM incidents WHERE team = :team LIMIT :limit"
    params = { team = { type = "string" }, limit = { type = "integer", maximum = 100, default = 20 } }

The contract is SQLite's (`sql_tools`): the parameters are the query's `:names`, the result the rows
as records, and the query is prepared when planc.toml is loaded, so a syntax error, an unknown table
or column, a query that would write or a parameter that does not match is a `file:line` error then.
PostgreSQL says more than SQLite when it prepares a statement: the type of every column and every
parameter, which become the tool's JSON Schema (a column that may be NULL says so).

Read-only is enforced at every call, whatever the DSN's role may do: the session starts with
`default_transaction_read_only` on and a `statement_timeout` (the tool's timeout), the query runs
in a transaction begun `READ ONLY` and rolled back, and it is prepared alone before it runs, so
that it is exactly one statement and one that returns rows (no `SET`, `COPY`, `CALL`, `DO`).
PostgreSQL itself then refuses any write, a writable CTE, `SELECT ... FOR UPDATE`, `nextval` and a
function that writes. What it cannot refuse is a function whose effect is outside the transaction
(`dblink_exec`, `pg_terminate_backend`): that is the role's to deny, so give the tool a role that
reads (docs/registry.md).
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import re
import uuid
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from planc.registry.tools.sql_tools import SqlError, query_parameters

if TYPE_CHECKING:
    import psycopg
    from psycopg import pq

# A string (with E'...' escapes), a quoted name, a dollar-quoted string, a comment, a cast (`::`), or a
# parameter: only the last counts. `$1` is PostgreSQL's positional parameter, which has no name.
TOKENS = re.compile(
    r"[eE]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(\$[A-Za-z_]*\$).*?\1"
    r"|--[^\n]*|/\*.*?\*/|::|(?P<name>:[A-Za-z_][A-Za-z0-9_]*)|(?P<positional>\$\d+)",
    re.DOTALL,
)
PROVIDER = re.compile(r"postgresql:\$(?P<variable>[A-Za-z_][A-Za-z0-9_]*)\Z")
CONNECT_TIMEOUT_S = 10
# What a column of each PostgreSQL type holds, as JSON Schema; a type not named here holds anything.
COLUMN_SCHEMAS = {
    **dict.fromkeys(("int2", "int4", "int8", "oid"), {"type": "integer"}),
    **dict.fromkeys(("float4", "float8", "numeric"), {"type": "number"}),
    **dict.fromkeys(
        ("text", "varchar", "bpchar", "name", "char", "citext", "inet", "cidr", "interval", "time", "timetz", "bytea"),
        {"type": "string"},
    ),
    "bool": {"type": "boolean"},
    "uuid": {"type": "string", "format": "uuid"},
    "date": {"type": "string", "format": "date"},
    **dict.fromkeys(("timestamp", "timestamptz"), {"type": "string", "format": "date-time"}),
}
WRITING_NODES = frozenset({"ModifyTable", "LockRows"})  # a write (a writable CTE too), SELECT ... FOR UPDATE


def environment_dsn(named: str) -> str:
    """The DSN `named` ("postgresql:$NAME", a tool's provider or a run store) names: the environment's
    $NAME; a ValueError saying what is wrong when it is not so named, or $NAME is unset."""
    found = PROVIDER.match(named)
    if found is None:
        raise ValueError(
            f'{named!r} must be "postgresql:$NAME": the DSN is read from the environment variable '
            "NAME, never written where planc keeps it"
        )
    value = os.environ.get(found["variable"], "")
    if not value.strip():
        raise ValueError(f"the environment variable {found['variable']} holds no DSN")
    return value


def dsn(provider: str) -> str:
    """The DSN of the tool `provider` names; an SqlError when there is none."""
    try:
        return environment_dsn(provider)
    except ValueError as error:
        raise SqlError(str(error)) from None


def prepare(provider: str, query: str) -> tuple[dict[str, dict], dict[str, dict]]:
    """The query's columns and its parameters, each name with its JSON Schema, once it is prepared (not
    run) in the database `provider` names; an SqlError when it cannot be used."""
    names = query_parameters(query, TOKENS)
    with _connect(provider, None) as connection:
        described = _describe(connection, query, names)
        explained = connection.execute(f"EXPLAIN (FORMAT JSON) {_with_placeholders(query)}", dict.fromkeys(names)).fetchone()
        assert explained is not None  # EXPLAIN returns its one row
        plan = explained[0]
        if _node_types(plan) & WRITING_NODES:
            raise SqlError("the query would do more than read (a write, or a lock on rows): an SQL tool only reads")
        params = {name: _schema(connection, described.param_type(n)) for n, name in enumerate(names)}
        columns = {}
        for n in range(described.nfields):
            column = _schema(connection, described.ftype(n))
            if not _not_null(connection, described.ftable(n), described.ftablecol(n)) and "type" in column:
                column = {**column, "type": [column["type"], "null"]}
            columns[cast(bytes, described.fname(n)).decode()] = column  # a field's name, for n < nfields
        return columns, params


def run_query(
    provider: str, query: str, arguments: dict, timeout_s: float | None = None, schema: str | None = None
) -> list[dict]:
    """The rows of `query` with `arguments`, each a record of its columns, read in a read-only transaction
    (with `schema`, a name made only of letters, first on the search path: a run store's `planc`)."""
    names = query_parameters(query, TOKENS)
    with _connect(provider, timeout_s, schema) as connection:
        _describe(connection, query, names)
        cursor = connection.execute(_with_placeholders(query), {name: arguments.get(name) for name in names})
        columns = [column.name for column in cursor.description or ()]
        return [{column: _plain(value) for column, value in zip(columns, row)} for row in cursor.fetchall()]


class _connect:
    """A session that can only read: read-only by default, a statement timeout, and one transaction begun
    READ ONLY, rolled back when the session ends. Every error of psycopg's is an SqlError."""

    def __init__(self, provider: str, timeout_s: float | None, schema: str | None = None) -> None:
        if schema is not None and not schema.isalpha():
            raise ValueError(f"not a schema's plain name: {schema!r}")
        self.provider, self.timeout_s, self.schema = provider, timeout_s, schema

    def __enter__(self) -> psycopg.Connection:
        try:
            import psycopg
        except ImportError:
            raise SqlError("PostgreSQL SQL tools need psycopg: pip install 'planc[postgresql]'") from None
        self.errors = psycopg.Error
        timeout_ms = int((self.timeout_s or 0) * 1000)
        try:
            self.connection = psycopg.connect(
                dsn(self.provider), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="planc SQL tool"
            )
        except psycopg.Error as error:
            named = PROVIDER.match(self.provider)
            assert named is not None  # `dsn` read the variable's name from it
            raise SqlError(f"cannot connect to the database ${named['variable']} names: {_words(error)}") from None
        try:
            self.connection.execute(f"SET default_transaction_read_only = on; SET statement_timeout = {timeout_ms}")
            if self.schema is not None:
                self.connection.execute(f"SET search_path TO {self.schema}")
            self.connection.execute("BEGIN READ ONLY")
        except psycopg.Error as error:
            self.connection.close()
            raise SqlError(_words(error)) from None
        return self.connection

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        self.connection.close()  # the transaction is rolled back with the session
        if isinstance(error, self.errors):
            raise SqlError(_words(error)) from None


def _describe(connection: psycopg.Connection, query: str, names: list[str]) -> pq.abc.PGresult:
    """`query` prepared alone (one statement: the extended protocol takes no more) and described: an SqlError
    unless it is a statement that returns rows."""
    from psycopg import pq

    text = _numbered(query, names).encode()
    prepared = connection.pgconn.prepare(b"", text)
    if prepared.status != pq.ExecStatus.COMMAND_OK:
        raise SqlError(_result_words(prepared))
    described = connection.pgconn.describe_prepared(b"")
    if described.status != pq.ExecStatus.COMMAND_OK:
        raise SqlError(_result_words(described))
    if described.nfields == 0:
        raise SqlError("the query returns no rows: an SQL tool's query is one SELECT (no SET, COPY, CALL, DO or write)")
    return described


def _numbered(query: str, names: list[str]) -> str:
    """`query` with `$1`, `$2`... for its `:names`, as PostgreSQL prepares it."""
    return TOKENS.sub(lambda m: f"${names.index(m['name'][1:]) + 1}" if m["name"] else m[0], query)


def _with_placeholders(query: str) -> str:
    """`query` with psycopg's `%(name)s` for its `:names`, and every other `%` doubled."""
    pieces, at = [], 0
    for match in TOKENS.finditer(query):
        if match["name"]:
            pieces += [query[at : match.start()].replace("%", "%%"), f"%({match['name'][1:]})s"]
            at = match.end()
    return "".join(pieces) + query[at:].replace("%", "%%")


def _schema(connection: psycopg.Connection, oid: int) -> dict:
    from psycopg import postgres

    found = postgres.types.get(oid) or connection.adapters.types.get(oid)
    if found is None:
        return {}
    item = {} if found.name in ("json", "jsonb") else dict(COLUMN_SCHEMAS.get(found.name, {}))
    return {"type": "array", "items": item} if found.array_oid == oid else item


def _not_null(connection: psycopg.Connection, table: int, column: int) -> bool:
    """Whether the column is a table's column declared NOT NULL (what an expression is, nobody says)."""
    if not table or column <= 0:
        return False
    row = connection.execute(
        "SELECT attnotnull FROM pg_attribute WHERE attrelid = %s AND attnum = %s", (table, column)
    ).fetchone()
    return bool(row and row[0])


def _node_types(plan: object) -> set[str | None]:
    found: set[str | None] = set()
    stack = [plan]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.add(value.get("Node Type"))
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _plain(value: object) -> Any:
    """A column's value as JSON data: numbers, text, booleans, null, lists and records."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, (uuid.UUID, str, int, float, bool, dict)) or value is None:
        return str(value) if isinstance(value, uuid.UUID) else value
    return json.loads(json.dumps(value, default=str))


def _words(error: BaseException) -> str:
    diag = getattr(error, "diag", None)
    primary = diag.message_primary if diag is not None else None
    text = primary or str(error).strip()
    if "read-only transaction" in text:
        return f"the query would do more than read ({text}): an SQL tool only reads"
    return text


def _result_words(result: pq.abc.PGresult) -> str:
    text = (result.error_message or b"").decode(errors="replace").strip().removeprefix("ERROR:").strip()
    if "multiple commands" in text:
        return f"an SQL tool's query is one statement ({text})"
    return text
