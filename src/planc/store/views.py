"""The run store's views: what many runs say, as tables a query reads (`planc stats`, `planc stats --sql`).

Each view reads the tables only; none is ever written, and none feeds a plan's check or run. They are
written in the SQL both backends take, but for the one thing they spell differently, the items of a JSON
list (`json_each` in SQLite, `jsonb_array_elements_text` in PostgreSQL: each backend's `json_items`). `VIEW_DOCS` says what each row of each view is; docs/store.md lists them from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planc.store.db import Db

# Each view's query, by name. A view changes only with the schema's version: a store gets them when it is
# brought up to this schema (`run_store._set_up`), dropped and made again.
VIEWS = {
    "run_times": """
SELECT r.id AS run_id, r.status, r.started_at, r.finished_at,
       (r.finished_at - r.started_at) * 1000 AS ms,
       (SELECT s.code FROM steps s WHERE s.run_id = r.id AND s.failed IS NOT NULL ORDER BY s.failed LIMIT 1) AS code,
       r.message
FROM runs r""",
    "call_times": """
SELECT c.run_id, c.sequence, c.step, c.tool, COALESCE(c.outcome, 'unknown') AS outcome,
       (c.finished_at - c.started_at) * 1000 AS ms, r.started_at AS run_started_at
FROM calls c JOIN runs r ON r.id = c.run_id""",
    "step_failures": """
SELECT s.run_id, s.path AS step, s.tool, s.error_type, s.code, r.started_at AS run_started_at
FROM steps s JOIN runs r ON r.id = s.run_id
WHERE s.failed = (SELECT MIN(f.failed) FROM steps f WHERE f.run_id = s.run_id)""",
    "step_times": """
SELECT s.run_id, s.path, (s.finished_at - s.started_at) * 1000 AS ms, r.started_at AS run_started_at
FROM steps s JOIN runs r ON r.id = s.run_id
WHERE s.depth = 0 AND s.finished_at IS NOT NULL""",
    "step_costs": """
SELECT s.run_id, s.path, s.tool, s.calls_low, s.calls_high, s.usd_low, s.usd_high, s.ms_low, s.ms_high,
       COUNT(c.sequence) AS calls,
       COALESCE(SUM((SELECT MAX(t.usd_each) FROM steps t WHERE t.run_id = c.run_id AND t.tool = c.tool)), 0) AS usd,
       (s.finished_at - s.started_at) * 1000 AS ms, r.started_at AS run_started_at
FROM steps s JOIN runs r ON r.id = s.run_id
LEFT JOIN calls c ON c.run_id = s.run_id AND (c.outcome IS NULL OR c.outcome <> 'not_approved')
     AND (c.step = s.path OR c.step LIKE s.path || '/%' OR c.step LIKE s.path || '[%')
WHERE s.depth = 0
GROUP BY s.run_id, s.path, r.started_at""",
    "round_codes": """
SELECT o.run_id, o.round, j.value AS code,
       CASE WHEN EXISTS (SELECT 1 FROM rounds n WHERE n.run_id = o.run_id AND n.round = o.round + 1)
            THEN 1 ELSE 0 END AS repaired,
       CASE WHEN EXISTS (SELECT 1 FROM rounds n, {items_of_n} WHERE n.run_id = o.run_id
                         AND n.round = o.round + 1 AND k.value = j.value) THEN 0 ELSE 1 END AS fixed,
       r.started_at AS run_started_at
FROM rounds o JOIN runs r ON r.id = o.run_id, {items_of_o}""",
}


def make_views(db: Db, json_items: Callable[[str, str], str]) -> None:
    """Drop the views of `db` and make them again, as this schema has them (inside the caller's transaction);
    `json_items(column, alias)` is the backend's table of the items of the JSON list in `column`."""
    lists = {"items_of_n": json_items("n.codes", "k"), "items_of_o": json_items("o.codes", "j")}
    for name, query in VIEWS.items():
        db.execute(f"DROP VIEW IF EXISTS {name}")
        db.execute(f"CREATE VIEW {name} AS {query.strip().format(**lists)}")


# What a row of each view is, and its columns: docs/store.md is checked against it.
VIEW_DOCS = {
    "run_times": "a run: `status`, `started_at`, `finished_at`, `ms` (how long it took; NULL while it runs), "
    "`code` (the diagnostic code of a refusal that failed it: E400, E401) and `message`",
    "call_times": "a tool call: its `step` path, `tool`, `outcome` and `ms`, and when its run started (`run_started_at`)",
    "step_failures": "the step a failed run failed first (the innermost; a block's step for a step of one of "
    "its items): `step`, `tool`, `error_type`, `code`",
    "step_times": "a top-level step that ended in a run: its `path` and how long it took (`ms`), from its first "
    "start to its last end",
    "step_costs": "a top-level step of a run: its `tool`, the check's estimate of one run of it (`calls_low`, "
    "`calls_high`, `usd_low`, `usd_high`, `ms_low`, `ms_high`; a NULL most has no bound) and "
    "what it did: the `calls` made in it, their declared `usd`, and its `ms`",
    "round_codes": "an error code in a round of `planc plan`: whether the round was answered by another "
    "(`repaired`) and whether that answer no longer had the code (`fixed`)",
}
