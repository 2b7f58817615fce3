"""`planc stats`: what the runs of a run store say together, read from its views (`views.py`).

Every question is one query over the views, in SQL both backends take, on a connection that can only
read (the SQL tools' read-only connection: SQLite's `open_read_only`, PostgreSQL's read-only
transaction): the tools each step position calls, the failures and refusals by tool and by diagnostic
code, the check's estimates against what the steps did, the codes `planc plan` repaired, and how long
runs took. `--sql` runs one query of the user's on the same connection. Nothing here feeds a plan's
check or run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from planc.registry.tools.sql_tools import SqlError, run_query

PERCENTILES = (50, 90, 99)


def percentile(values: list[float], rank: int) -> float | None:
    """The nearest-rank `rank`th percentile of `values` (None for none).

    >>> percentile([5, 1, 4, 2, 3], 50), percentile([5, 1, 4, 2, 3], 90), percentile([], 50)
    (3, 5, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


# A query of the store: its SQL and `:name` arguments -> its rows.
Query = Callable[[str, dict], list[dict]]


def reader(where: Path) -> Query:
    """The rows of a query with its `:name` arguments, read from the store at `where` (an SQLite file, or
    "postgresql:$NAME": its `planc` schema) on a connection that can only read; an SqlError otherwise."""
    if str(where).startswith("postgresql:"):
        from planc.registry.tools import postgres_tools
        from planc.store.postgres_backend import SCHEMA_NAME

        return lambda sql, arguments: postgres_tools.run_query(str(where), sql, arguments, schema=SCHEMA_NAME)
    return lambda sql, arguments: run_query(where, sql, arguments)


def stats(where: Path, since: float | None = None, tool: str | None = None) -> dict:
    """What the runs of the store at `where` started at or after `since` (seconds since the epoch) say, as JSON
    data; with `tool`, about that tool's steps and calls only (and the runs whose plans call it)."""
    after = {"since": since if since is not None else -math.inf}
    only = {**after, "tool": tool}
    # typed, so that PostgreSQL knows what the parameter is where it is only tested for NULL
    by_tool = "(CAST(:tool AS TEXT) IS NULL OR tool = :tool)"
    query = reader(where)

    runs = query(
        "SELECT status, ms FROM run_times WHERE started_at >= :since AND (CAST(:tool AS TEXT) IS NULL OR "
        "run_id IN (SELECT run_id FROM steps WHERE tool = :tool))",
        only,
    )
    statuses: dict[str, int] = {}
    for run in runs:
        statuses[run["status"]] = statuses.get(run["status"], 0) + 1
    times = [run["ms"] for run in runs if run["ms"] is not None]
    positions: dict[str, dict[str, int]] = {}
    for row in query(
        "SELECT s.position, s.tool, COUNT(*) AS n FROM steps s JOIN runs r ON r.id = s.run_id "
        "WHERE s.depth = 0 AND r.started_at >= :since AND (CAST(:tool AS TEXT) IS NULL OR "
        "s.tool = :tool) "
        "GROUP BY s.position, s.tool ORDER BY s.position, n DESC, s.tool",
        only,
    ):
        positions.setdefault(str(row["position"]), {})[row["tool"]] = row["n"]
    return {
        "runs": {
            "count": len(runs),
            "by_status": dict(sorted(statuses.items())),
            "ms": {**{f"p{rank}": _ms(percentile(times, rank)) for rank in PERCENTILES}, "max": _ms(max(times, default=None))},
        },
        "positions": positions,
        "failures": _failures(query, only, by_tool),
        "costs": _costs(query, only, by_tool),
        "repairs": {
            row["code"]: {"rounds": row["rounds"], "repaired": row["repaired"], "fixed": row["fixed"]}
            for row in query(
                "SELECT code, COUNT(*) AS rounds, SUM(repaired) AS repaired, SUM(fixed * "
                "repaired) AS fixed FROM round_codes WHERE run_started_at >= :since "
                "GROUP BY code ORDER BY rounds DESC, code",
                after,
            )
        }
        if tool is None
        else {},
    }


def _ms(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None


def _failures(query: Query, only: dict, by_tool: str) -> dict:
    """Calls that did not end ok, by tool and outcome; the steps failed runs failed at, by tool; the
    runs a refusal with a diagnostic code ended, by code."""
    calls: dict[str, dict[str, int]] = {}
    for row in query(
        "SELECT tool, outcome, COUNT(*) AS n FROM call_times WHERE outcome != 'ok' AND "
        f"run_started_at >= :since AND {by_tool} GROUP BY tool, outcome ORDER BY tool, outcome",
        only,
    ):
        calls.setdefault(row["tool"], {})[row["outcome"]] = row["n"]
    steps = {
        row["tool"]: row["n"]
        for row in query(
            f"SELECT tool, COUNT(*) AS n FROM step_failures WHERE run_started_at >= :since AND {by_tool} "
            "GROUP BY tool ORDER BY n DESC, tool",
            only,
        )
    }
    codes = {
        row["code"]: row["n"]
        for row in query(
            f"SELECT code, COUNT(*) AS n FROM step_failures WHERE code IS NOT NULL AND run_started_at >= :since AND "
            f"{by_tool} GROUP BY code ORDER BY n DESC, code",
            only,
        )
    }
    return {"calls_by_tool": calls, "runs_by_tool": steps, "runs_by_code": codes}


def _costs(query: Query, only: dict, by_tool: str) -> dict:
    """For each tool, over the top-level steps that call it in runs recorded with the check's estimates: the
    estimates added up against what the steps did (calls made, their declared dollars; a most of None has
    no bound), and their time per step run against the estimate."""
    rows = query(
        "SELECT tool, COUNT(*) AS steps, SUM(calls_low) AS calls_low, "
        "CASE WHEN COUNT(calls_high) = COUNT(*) THEN SUM(calls_high) END AS calls_high, "
        "SUM(calls) AS calls, SUM(usd_low) AS usd_low, "
        "CASE WHEN COUNT(usd_high) = COUNT(*) THEN SUM(usd_high) END AS usd_high, SUM(usd) AS usd, "
        "AVG(ms_low) AS ms_low, CASE WHEN COUNT(ms_high) = COUNT(*) THEN AVG(ms_high) END AS ms_high "
        "FROM step_costs WHERE calls_low IS NOT NULL AND run_started_at >= :since "
        f"AND {by_tool} GROUP BY tool ORDER BY tool",
        only,
    )
    times: dict[str, list[float]] = {}
    for row in query(
        "SELECT tool, ms FROM step_costs WHERE calls_low IS NOT NULL AND ms IS NOT NULL AND "
        "run_started_at >= :since AND "
        f"{by_tool}",
        only,
    ):
        times.setdefault(row["tool"], []).append(row["ms"])
    costs = {}
    for row in rows:
        spent = times.get(row["tool"], [])
        costs[row["tool"]] = {
            "steps": row["steps"],
            "calls": {"estimated": [_number(row["calls_low"]), _number(row["calls_high"])], "made": row["calls"]},
            "usd": {"estimated": [_number(row["usd_low"], 4), _number(row["usd_high"], 4)], "spent": round(row["usd"], 4)},
            "ms": {
                "estimated": [_ms(row["ms_low"]), _ms(row["ms_high"])],
                "p50": _ms(percentile(spent, 50)),
                "p90": _ms(percentile(spent, 90)),
            },
        }
    return costs


def _number(value: float | None, digits: int = 0) -> float | None:
    """A sum of estimates: rounded; None (no estimate recorded) stays None."""
    if value is None:
        return None
    return round(value, digits) if digits else round(value)


def query_store(where: Path, sql: str) -> list[dict]:
    """The rows of `sql`, one statement that only reads, over the store at `where` (`planc stats --sql`)."""
    return reader(where)(sql, {})


__all__ = ["SqlError", "percentile", "query_store", "reader", "stats"]
