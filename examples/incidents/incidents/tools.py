"""The example's tools: plain functions over the incidents database, as `planc.toml` declares them.

`planc.toml` declares every tool in full (parameters, defaults, `returns`, effects), so checking
a plan never imports this module; `tests/test_incidents_example.py` holds the two together
(signatures match the declarations, results validate against `returns`).

Every call opens its own connection, so the interpreter may run them in threads at once. The
read-only tools never write; `notify`, `email` and `close_incident` each write one row to the
`outbox` table (and `close_incident` updates the incident) in one transaction, and return
what they wrote.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone

from incidents.data import connect

SEARCH_COLUMNS = "i.id, i.title, i.severity, i.status, i.service, i.opened_at, i.tags"
MAX_LIMIT = 500  # planc.toml: limit <= 500


class UnknownIncident(LookupError):
    """No incident has the id asked for."""


def search(query: str, limit: int = 20) -> list[dict]:
    """Full-text search (FTS5) over titles and bodies, best matches first (bm25, titles weigh more).

    The query is FTS5 syntax (`disk full`, `outage OR degraded`, `"replica lag"`, `cert*`); one
    FTS5 cannot parse (`disk-full`, `service:api`, an unbalanced quote) is searched as a phrase.
    Each result: `{id, title, severity, status, service, opened_at, tags, snippet, score}`.
    """
    limit = _limit(limit)
    sql = (
        f"SELECT {SEARCH_COLUMNS}, snippet(incidents_fts, 1, '', '', '...', 16) AS snippet, "
        "bm25(incidents_fts, 4.0, 1.0) AS rank "
        "FROM incidents_fts JOIN incidents AS i ON i.n = incidents_fts.rowid "
        "WHERE incidents_fts MATCH ? ORDER BY rank, i.n LIMIT ?"
    )
    with _connection() as connection:
        rows = _match(connection, sql, query, (limit,))
    return [
        {
            "id": row["id"],
            "title": row["title"],
            "severity": row["severity"],
            "status": row["status"],
            "service": row["service"],
            "opened_at": row["opened_at"],
            "tags": json.loads(row["tags"]),
            "snippet": row["snippet"],
            "score": round(-row["rank"], 4),
        }
        for row in rows
    ]


def get_incident(id: str) -> dict:  # noqa: A002 - the parameter's name is `id` in planc.toml
    """One incident by id (`INC-1042`), with its timeline as lines `AT KIND: TEXT`."""
    with _connection() as connection:
        return _incident(connection, id)


def count(query: str) -> int:
    """How many incidents match `query` (the same syntax and fallback as `search`)."""
    sql = "SELECT count(*) AS n FROM incidents_fts WHERE incidents_fts MATCH ?"
    with _connection() as connection:
        rows = _match(connection, sql, query, ())
    return rows[0]["n"] if rows else 0


def summarize(items: list, style: str = "bullets", title: str | None = None) -> dict:
    """An extractive summary: per item its id, severity, status, title and the first sentence of its text.

    Items are incidents (from `search` or `get_incident`), other objects (their `title`/`name`
    and `body`/`text`/`snippet`/`summary`) or strings. `style` "bullets" gives one line per item,
    "prose" one paragraph. Returns `{title, text, count}`.
    """
    if style not in ("bullets", "prose"):
        raise ValueError(f'summarize: style must be "bullets" or "prose", not {style!r}')
    if not isinstance(items, list):
        raise TypeError(f"summarize: items must be a list, not {type(items).__name__}")
    lines = [_line(item) for item in items]
    if not lines:
        text = "No incidents."
    elif style == "bullets":
        text = "\n".join(f"- {line}" for line in lines)
    else:
        text = " ".join(line if line.endswith((".", "!", "?")) else line + "." for line in lines)
    noun = "incident" if len(items) == 1 else "incidents"
    return {"title": title if title is not None else f"{len(items)} {noun}", "text": text, "count": len(items)}


def notify(channel: str, text: str) -> dict:
    """Post `text` to `channel` (`#incidents`): one `outbox` row of kind "notify", which is returned."""
    if not isinstance(channel, str) or not channel.startswith("#"):
        raise ValueError(f"notify: a channel starts with '#', not {channel!r}")
    with _connection() as connection, connection:
        return _send(connection, "notify", channel, None, text)


def email(to: str, subject: str, body: str) -> dict:
    """Send an email: one `outbox` row of kind "email" (`recipient` = to, `text` = body), which is returned."""
    if not isinstance(to, str) or not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", to):
        raise ValueError(f"email: {to!r} is not an email address")
    with _connection() as connection, connection:
        return _send(connection, "email", to, subject, body)


def close_incident(id: str, note: str | None = None) -> dict:  # noqa: A002
    """Mark an incident resolved, with `note` in its timeline, and record it in the `outbox` (kind "close").

    Returns the incident as `get_incident` does, plus `previous_status`, `changed` and `outbox`
    (the row written). Closing a resolved incident again changes nothing and writes nothing
    (`changed: false`, `outbox: null`): the tool is idempotent, as declared.
    """
    with _connection() as connection, connection:
        connection.execute("BEGIN IMMEDIATE")  # read and write as one: two closes of one incident write once
        before = _incident(connection, id)
        if before["status"] == "resolved":
            return {**before, "previous_status": "resolved", "changed": False, "outbox": None}
        now = _now()
        text = note or "closed"
        connection.execute("UPDATE incidents SET status = 'resolved', closed_at = ? WHERE id = ?", (now, before["id"]))
        connection.execute(
            "INSERT INTO timeline VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM timeline WHERE incident_id = ?), ?, ?, ?)",
            (before["id"], before["id"], now, "resolved", text),
        )
        sent = _send(connection, "close", before["id"], f"Closed {before['id']}: {before['title']}", text)
        return {**_incident(connection, before["id"]), "previous_status": before["status"], "changed": True, "outbox": sent}


# --- helpers ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _connection() -> Iterator[sqlite3.Connection]:
    connection = connect()
    try:
        yield connection
    finally:
        connection.close()


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"search: limit must be an integer from 1 to {MAX_LIMIT}, not {limit!r}")
    return limit


# The messages SQLite gives for an FTS5 query it cannot parse (and only those: a locked
# database is an error, not a reason to search for something else).
_QUERY_ERRORS = ("fts5: syntax error", "no such column", "unterminated string", "unknown special query")


def _match(connection: sqlite3.Connection, sql: str, query: str, extra: tuple) -> list[sqlite3.Row]:
    """Run `sql` with `query` for its MATCH; a query FTS5 rejects is retried as one quoted phrase."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, not {type(query).__name__}")
    if not query.strip():
        return []
    try:
        return connection.execute(sql, (query, *extra)).fetchall()
    except sqlite3.OperationalError as error:
        if not str(error).startswith(_QUERY_ERRORS):
            raise
    phrase = '"' + query.replace('"', '""') + '"'
    return connection.execute(sql, (phrase, *extra)).fetchall()


def _incident(connection: sqlite3.Connection, id: str) -> dict:  # noqa: A002
    key = id.strip().upper() if isinstance(id, str) else id
    row = connection.execute("SELECT * FROM incidents WHERE id = ?", (key,)).fetchone()
    if row is None:
        first, last = connection.execute("SELECT min(id), max(id) FROM incidents").fetchone()
        raise UnknownIncident(f"no incident with id {id!r} (ids run from {first} to {last})")
    timeline = connection.execute(
        "SELECT at, kind, text FROM timeline WHERE incident_id = ? ORDER BY seq", (row["id"],)
    ).fetchall()
    return {
        "id": row["id"],
        "title": row["title"],
        "body": row["body"],
        "service": row["service"],
        "severity": row["severity"],
        "status": row["status"],
        "opened_at": row["opened_at"],
        "closed_at": row["closed_at"],
        "tags": json.loads(row["tags"]),
        "timeline": [f"{entry['at']} {entry['kind']}: {entry['text']}" for entry in timeline],
    }


def _send(connection: sqlite3.Connection, kind: str, recipient: str, subject: str | None, text: str) -> dict:
    if not isinstance(text, str):
        raise TypeError(f"{kind}: the text must be a string, not {type(text).__name__}")
    created = _now()
    cursor = connection.execute(
        "INSERT INTO outbox (kind, recipient, subject, text, created_at) VALUES (?, ?, ?, ?, ?)",
        (kind, recipient, subject, text, created),
    )
    return {"id": cursor.lastrowid, "kind": kind, "recipient": recipient, "subject": subject, "text": text, "created_at": created}


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.DOTALL)


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    found = _SENTENCE.match(text)
    return found.group(1) if found else text


def _line(item) -> str:
    """One item of a summary: `INC-1042 (sev 3, open, payments): Title. First sentence.`"""
    if isinstance(item, str):
        return _first_sentence(item)
    if not isinstance(item, dict):
        return json.dumps(item, ensure_ascii=False)
    head = item.get("title") or item.get("name") or ""
    text = next(
        (item[key] for key in ("body", "text", "summary", "snippet") if isinstance(item.get(key), str) and item[key].strip()), ""
    )
    sentence = _first_sentence(text) if text else ""
    facts = [f"sev {item['severity']}" if "severity" in item else None, item.get("status"), item.get("service")]
    facts = ", ".join(str(fact) for fact in facts if fact)
    label = " ".join(part for part in (str(item["id"]) if "id" in item else "", f"({facts})" if facts else "") if part)
    parts = [part for part in (head.rstrip(".") + "." if head else "", sentence) if part]
    body = " ".join(parts) or json.dumps(item, ensure_ascii=False, sort_keys=True)
    return f"{label}: {body}" if label else body
