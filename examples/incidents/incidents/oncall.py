"""Build `oncall.sqlite`: who is on call for each service, the database of the `on_call` SQL tool.

The file is small and kept in git, so that planc.toml's SQL tool is checked (its query prepared
against it) on a fresh clone. Rebuild it with `python -m incidents.oncall` from the example's folder.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

PATH = Path(__file__).resolve().parent.parent / "oncall.sqlite"

PEOPLE = ["ada", "grace", "linus", "barbara", "ken", "margaret"]
SERVICES = [
    "api-gateway",
    "auth",
    "billing",
    "cdn",
    "checkout",
    "dns",
    "inventory",
    "kafka",
    "mobile-api",
    "notifications",
    "object-storage",
    "orders",
    "payments",
    "postgres-main",
    "redis-cache",
    "reporting",
    "search",
    "web-frontend",
]


def build(path: Path = PATH) -> None:
    """Write the rota: every service has a first (tier 1) and a second (tier 2) person on call."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode = DELETE")  # one file, readable read-only with no -wal or -shm
        db.execute(
            "CREATE TABLE rota (service TEXT NOT NULL, tier INTEGER NOT NULL, person TEXT NOT NULL, "
            "handle TEXT NOT NULL, PRIMARY KEY (service, tier))"
        )
        db.executemany(
            "INSERT INTO rota VALUES (?, ?, ?, ?)",
            [
                (service, tier, person, f"@{person}")
                for n, service in enumerate(SERVICES)
                for tier, person in ((1, PEOPLE[n % len(PEOPLE)]), (2, PEOPLE[(n + 1) % len(PEOPLE)]))
            ],
        )
    db.close()


if __name__ == "__main__":
    build()
    print(f"wrote {PATH}")
