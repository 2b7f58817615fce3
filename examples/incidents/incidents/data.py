"""The example's data: a seeded generator of incidents and the SQLite database that holds them.

Everything here is deterministic and uses the standard library only: the same seed gives the
same incidents, byte for byte, on every machine. Nothing is downloaded.

    >>> [incident["id"] for incident in generate(count=3)]
    ['INC-1001', 'INC-1002', 'INC-1003']
    >>> generate(count=5) == generate(count=5)
    True

The database (`database()`) is `examples/incidents/incidents.sqlite`, or the file named by the
environment variable `PLANC_INCIDENTS_DB`. It is built on first use, into a temporary file that
is then linked into place, so processes or threads that race to create it all end up with the
same complete database. Delete the file to start again; `python -m incidents.data` (from
`examples/incidents/`) rebuilds it explicitly.

Tables:
- `incidents(n, id, title, body, service, severity, status, opened_at, closed_at, tags)`:
  `severity` 1 (minor) to 4 (critical), `status` open / mitigated / resolved, `tags` a JSON list;
- `timeline(incident_id, seq, at, kind, text)`: detected, acknowledged, mitigated, resolved, ...;
- `incidents_fts`: FTS5 over `title` and `body` (porter stemming; rowid = `incidents.n`);
- `outbox(id, kind, recipient, subject, text, created_at)`: what the effectful tools "sent";
- `meta(key, value)`: the generator version, seed and count the database was built with.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

ENV = "PLANC_INCIDENTS_DB"
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "incidents.sqlite"
SEED = 1042
COUNT = 300
VERSION = "1"  # bump when the schema or the generator changes: an older database is rebuilt

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
NOW = datetime(2024, 7, 1, tzinfo=timezone.utc)  # the dataset's "today": recent incidents are still open

SERVICES = [
    "api-gateway",
    "auth",
    "billing",
    "checkout",
    "payments",
    "search",
    "notifications",
    "orders",
    "inventory",
    "web-frontend",
    "mobile-api",
    "postgres-main",
    "redis-cache",
    "kafka",
    "cdn",
    "dns",
    "object-storage",
    "reporting",
]
REGIONS = ["eu-west-1", "us-east-1", "us-west-2", "ap-southeast-2"]
ONCALL = ["alice", "bikram", "chen", "dana", "emeka", "farah", "goran", "hana", "ivan", "julia"]
DOMAINS = [
    "api.example.com",
    "checkout.example.com",
    "auth.example.com",
    "cdn.example.com",
    "mobile.example.com",
    "status.example.com",
]
QUEUES = ["orders", "email-dispatch", "payment-events", "search-indexing", "webhooks"]
JOBS = ["billing-export", "search-reindex", "warehouse-sync", "invoice-run", "backup-verify"]
REPORTS = ["finance report", "daily revenue dashboard", "inventory snapshot", "churn report"]
PROVIDERS = ["the card processor", "the SMS provider", "the email provider", "the geocoding API", "the fraud-scoring vendor"]
ACTIONS = ["log in", "check out", "place orders", "search the catalogue", "download invoices", "reset their password"]
FEATURES = ["login", "checkout", "password reset", "search suggestions", "order history", "invoice download"]
DEPENDENCIES = ["postgres-main", "redis-cache", "kafka", "auth", "object-storage", "search"]
TABLES = ["orders", "payments", "sessions", "line_items", "customers"]
METRICS = ["5xx rate", "p99 latency", "disk usage", "consumer lag", "error budget burn", "health checks"]
DETECTIONS = [
    "alert on {metric} for {service}",
    "synthetic check for {service} failed in {region}",
    "customer reports through support",
    "on-call noticed {metric} during a deploy",
    "status page monitor for {domain} went red",
]

# One entry per kind of incident: how often it happens, how severe it tends to be (weights for
# severity 1..4), which services it hits, and the sentences it is written from.
CATEGORIES = [
    {
        "name": "outage",
        "weight": 14,
        "severity": [0, 2, 4, 4],
        "services": SERVICES,
        "tags": ["outage", "availability"],
        "titles": [
            "{service} outage in {region}",
            "Full outage: {service} returning 503",
            "{service} unavailable for all customers",
            "Partial outage of {service} in {region}",
        ],
        "openers": [
            "{service} returned HTTP 503 for {pct}% of requests in {region} for {duration} minutes.",
            "Every health check for {service} in {region} failed and the load balancer drained all instances.",
            "A partial outage left {service} unreachable from {region} for {duration} minutes.",
        ],
        "causes": [
            "a bad configuration push to the load balancer",
            "an expired database credential",
            "a schema migration that locked the {table} table",
            "a network partition between zones",
            "{dependency} no longer answering",
        ],
        "details": [
            "Customers could not {action} during the outage.",
            "The status page was updated {late} minutes after the first alert.",
            "Retries from clients doubled the load while {service} was recovering.",
        ],
        "mitigations": [
            "rolled back the configuration",
            "failed traffic over to another region",
            "restarted the affected instances",
            "rotated the credential",
        ],
    },
    {
        "name": "latency",
        "weight": 16,
        "severity": [1, 4, 3, 1],
        "services": SERVICES,
        "tags": ["latency", "degraded", "performance"],
        "titles": [
            "Degraded performance on {service}",
            "{service} p99 latency above {ms} ms",
            "Slow responses from {service} in {region}",
            "Degraded {service}: elevated timeouts",
        ],
        "openers": [
            "The p99 latency of {service} rose from {base_ms} ms to {ms} ms in {region}.",
            "{service} was degraded, with {pct}% of requests timing out after 30 s.",
            "Pages backed by {service} took over {secs} seconds to load in {region}.",
        ],
        "causes": [
            "a cache stampede after redis-cache was flushed",
            "a slow query introduced in release {version}",
            "noisy neighbours on the shared node pool",
            "garbage-collection pauses after a heap size change",
            "connection pool exhaustion towards {dependency}",
        ],
        "details": [
            "Error budgets for the month were exhausted in {hours} hours.",
            "Autoscaling added instances but latency stayed degraded.",
            "Mobile clients showed spinners and some gave up before {action}.",
        ],
        "mitigations": [
            "added capacity to the node pool",
            "disabled the slow code path with a feature flag",
            "warmed the cache from a snapshot",
            "raised the connection pool limit",
        ],
    },
    {
        "name": "disk",
        "weight": 9,
        "severity": [1, 3, 3, 1],
        "services": ["postgres-main", "kafka", "search", "reporting", "object-storage"],
        "tags": ["disk", "storage", "capacity"],
        "titles": ["Disk full on {host}", "{host}: data volume at 100%", "Disk usage alert: {host} out of space"],
        "openers": [
            "The data volume on {host} was full and {service} stopped accepting writes.",
            "Disk usage on {host} grew from {base_pct}% to 100% in {hours} hours.",
            "{service} on {host} ran out of disk space and went read-only.",
        ],
        "causes": [
            "log rotation that had been disabled during a migration",
            "an unbounded debug log left on after an investigation",
            "WAL files retained by a stale replication slot",
            "core dumps from a crash loop",
            "a backfill job writing temporary files without cleaning up",
        ],
        "details": [
            "Writes queued in clients and were replayed once space was freed.",
            "The disk usage alert had been silenced since a previous incident.",
            "Capacity planning had forecast the disk full in {days} more days.",
        ],
        "mitigations": [
            "deleted old logs and extended the volume by {gb} GB",
            "dropped the stale replication slot",
            "moved temporary files to a scratch volume",
        ],
    },
    {
        "name": "memory",
        "weight": 8,
        "severity": [1, 3, 3, 1],
        "services": SERVICES,
        "tags": ["memory", "oom", "kubernetes"],
        "titles": ["{service} pods OOMKilled repeatedly", "Memory leak in {service}", "{service} crash loop: out of memory"],
        "openers": [
            "{service} pods in {region} were OOMKilled {n} times in an hour, each restart dropping requests.",
            "Memory of {service} grew steadily after release {version} until the pods were killed.",
            "{service} entered a crash loop as every pod ran out of memory on start-up.",
        ],
        "causes": [
            "an unbounded in-process cache added in release {version}",
            "a leak in the HTTP client's connection pool",
            "a memory limit lowered by mistake",
            "a large payload from {dependency} decoded in memory at once",
        ],
        "details": [
            "The restarts caused a partial outage of {feature}.",
            "Heap dumps showed millions of cached session objects.",
            "The memory alert fired only after the first restarts.",
        ],
        "mitigations": [
            "raised the memory limit temporarily",
            "rolled back to the previous release",
            "capped the cache size with a config change",
        ],
    },
    {
        "name": "certificate",
        "weight": 5,
        "severity": [0, 2, 3, 3],
        "services": ["api-gateway", "cdn", "auth", "mobile-api", "web-frontend"],
        "tags": ["tls", "certificate", "security"],
        "titles": [
            "TLS certificate expired for {domain}",
            "Certificate expiry broke {service} clients",
            "Expired certificate on {domain}",
        ],
        "openers": [
            "The TLS certificate for {domain} expired and clients failed the handshake.",
            "Clients of {service} rejected {domain} because its certificate had expired.",
            "Browsers showed certificate warnings for {domain} after the certificate expired.",
        ],
        "causes": [
            "automatic renewal failing silently since a DNS change",
            "the renewal job running in a decommissioned cluster",
            "a certificate pinned in the mobile app",
            "a renewal that skipped one of the load balancers",
        ],
        "details": [
            "Customers could not {action} until the certificate was replaced.",
            "The expiry warning emails went to a former employee's mailbox.",
        ],
        "mitigations": ["issued and deployed a new certificate by hand", "pointed the domain at a healthy endpoint"],
    },
    {
        "name": "deploy",
        "weight": 12,
        "severity": [1, 3, 3, 2],
        "services": SERVICES,
        "tags": ["deploy", "regression", "errors"],
        "titles": [
            "Elevated 5xx errors on {service} after deploy {version}",
            "Release {version} of {service} broke {feature}",
            "Error rate spike on {service} after rollout",
        ],
        "openers": [
            "The error rate of {service} climbed to {pct}% within minutes of deploying {version}.",
            "After release {version}, {feature} failed for every request to {service}.",
            "A rollout of {service} to {region} produced a burst of 5xx errors.",
        ],
        "causes": [
            "a feature flag defaulting to on",
            "an incompatible change to the {service} API contract",
            "a missing database index in the new query path",
            "a config key renamed without a fallback",
        ],
        "details": [
            "The canary stage was skipped for this release.",
            "Integration tests passed because they mocked {dependency}.",
            "Customers could not {action} while the release was live.",
        ],
        "mitigations": ["rolled back to the previous release", "turned the feature flag off", "hot-fixed the config key"],
    },
    {
        "name": "dns",
        "weight": 4,
        "severity": [0, 2, 3, 2],
        "services": ["dns", "cdn", "api-gateway"],
        "tags": ["dns", "network"],
        "titles": ["DNS resolution failures for {domain}", "Intermittent NXDOMAIN for {domain}"],
        "openers": [
            "Resolvers in {region} returned SERVFAIL for {domain} on {pct}% of lookups.",
            "Lookups of {domain} intermittently returned NXDOMAIN from {region}.",
        ],
        "causes": [
            "a zone transfer that truncated the record set",
            "a TTL lowered to 5 s that overloaded the resolvers",
            "an expired delegation at the registrar",
        ],
        "details": [
            "Cached answers hid the problem from the internal monitors.",
            "Partners calling the API saw connection errors rather than HTTP errors.",
        ],
        "mitigations": ["restored the previous zone file", "raised the TTL back to 300 s"],
    },
    {
        "name": "replication",
        "weight": 6,
        "severity": [1, 3, 2, 1],
        "services": ["postgres-main", "redis-cache"],
        "tags": ["database", "replication"],
        "titles": ["Replication lag on {service} replica above {lag} s", "Stale reads: {service} replica behind primary"],
        "openers": [
            "The {service} replica in {region} fell {lag} seconds behind the primary, so reads were stale.",
            "Replication from the {service} primary stalled and replica lag reached {lag} seconds.",
        ],
        "causes": [
            "a long-running analytics query holding back vacuum",
            "a bulk update of {rows} million rows",
            "a saturated network link between zones",
        ],
        "details": [
            "Order history showed orders as missing for several minutes.",
            "Read traffic was pinned to the primary, which degraded write latency.",
        ],
        "mitigations": ["cancelled the long-running query", "moved reads to the primary temporarily"],
    },
    {
        "name": "queue",
        "weight": 6,
        "severity": [1, 3, 2, 1],
        "services": ["kafka", "orders", "notifications", "payments"],
        "tags": ["queue", "backlog", "kafka"],
        "titles": ["Backlog on the {queue} queue", "{queue} consumers falling behind", "Delayed {queue} processing"],
        "openers": [
            "The {queue} queue grew to {backlog} messages and processing fell {lag} minutes behind.",
            "Consumers of {queue} stopped committing offsets and the backlog kept growing.",
        ],
        "causes": [
            "a poison message crashing every consumer",
            "consumers scaled down by an autoscaler misconfiguration",
            "a downstream rate limit on {dependency}",
        ],
        "details": [
            "Customers received order confirmations hours late.",
            "The backlog drained in {hours} hours once consumers were healthy.",
        ],
        "mitigations": ["moved the poison message to a dead-letter queue", "scaled the consumers back up"],
    },
    {
        "name": "third-party",
        "weight": 5,
        "severity": [1, 2, 3, 1],
        "services": ["payments", "notifications", "checkout", "orders"],
        "tags": ["third-party", "dependency", "degraded"],
        "titles": ["Timeouts from {provider} degraded {service}", "Upstream incident at {provider} affecting {service}"],
        "openers": [
            "Calls from {service} to {provider} timed out for {pct}% of requests.",
            "{service} was degraded while {provider} had an incident of their own.",
        ],
        "causes": ["an incident at {provider}", "{provider} rotating their API endpoint without notice"],
        "details": ["There was no fallback provider configured.", "Retries without backoff made the timeouts worse."],
        "mitigations": ["switched to the fallback provider", "added a circuit breaker around the calls"],
    },
    {
        "name": "traffic",
        "weight": 4,
        "severity": [0, 2, 3, 2],
        "services": ["auth", "api-gateway", "search", "web-frontend"],
        "tags": ["security", "traffic", "rate-limit"],
        "titles": [
            "Traffic spike on {service} triggered rate limiting",
            "Credential stuffing attempt against {service}",
            "Bot traffic overwhelming {service}",
        ],
        "openers": [
            "{service} received {rps} requests per second from a small set of addresses, {mult} times the usual peak.",
            "A credential stuffing attempt sent {rps} login requests per second to {service}.",
        ],
        "causes": [
            "a botnet replaying leaked credentials",
            "a partner's retry loop gone wrong",
            "a scraper ignoring the rate limits",
        ],
        "details": [
            "Legitimate customers were rate limited along with the attacker.",
            "The web application firewall rules were tightened afterwards.",
        ],
        "mitigations": ["blocked the offending address ranges", "lowered the per-client rate limit"],
    },
    {
        "name": "batch",
        "weight": 6,
        "severity": [3, 3, 1, 0],
        "services": ["billing", "reporting", "search", "inventory"],
        "tags": ["batch", "cron"],
        "titles": ["Nightly {job} job failed", "{job} job did not finish before the deadline"],
        "openers": [
            "The nightly {job} job failed after {hours} hours and the {report} was not produced.",
            "The {job} job ran past its deadline and the {report} was late.",
        ],
        "causes": ["an input file with an unexpected encoding", "a lock held by a manual migration", "a disk full on the worker"],
        "details": ["Finance was told the {report} would be a day late.", "The job was re-run by hand the next morning."],
        "mitigations": ["re-ran the job by hand", "fixed the input file and restarted the job"],
    },
]

RESOLUTIONS = [
    "root cause fixed and a regression test added",
    "postmortem written and action items filed",
    "monitoring improved so this is caught earlier",
    "runbook updated with the fix",
    "capacity added and alerts tuned",
    "follow-up work scheduled with the owning team",
]


def generate(seed: int = SEED, count: int = COUNT) -> list[dict]:
    """`count` incidents, oldest first, with ids INC-1001 upwards; the same seed gives the same list.

    Each is `{id, title, body, service, severity, status, opened_at, closed_at, tags, timeline}`,
    with `timeline` a list of `{at, kind, text}`.
    """
    rng = random.Random(seed)
    span = int((NOW - START).total_seconds())
    drafts = []
    for _ in range(count):
        category = rng.choices(CATEGORIES, weights=[c["weight"] for c in CATEGORIES])[0]
        opened = START + timedelta(seconds=rng.randrange(span - 3600))
        drafts.append(_incident(rng, category, opened))
    drafts.sort(key=lambda incident: incident["opened_at"])
    for number, incident in enumerate(drafts, start=1001):
        incident["id"] = f"INC-{number}"
    return drafts


def _incident(rng: random.Random, category: dict, opened: datetime) -> dict:
    service = rng.choice(category["services"])
    region = rng.choice(REGIONS)
    values = {
        "service": service,
        "region": region,
        "domain": rng.choice(DOMAINS),
        "queue": rng.choice(QUEUES),
        "job": rng.choice(JOBS),
        "report": rng.choice(REPORTS),
        "provider": rng.choice(PROVIDERS),
        "action": rng.choice(ACTIONS),
        "feature": rng.choice(FEATURES),
        "table": rng.choice(TABLES),
        "dependency": rng.choice([d for d in DEPENDENCIES if d != service]),
        "metric": rng.choice(METRICS),
        "host": f"{service}-{rng.randint(1, 12):02d}.{region}.internal",
        "version": f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        "pct": rng.choice([3, 7, 12, 18, 25, 40, 60, 85, 100]),
        "duration": rng.randint(4, 95),
        "late": rng.randint(5, 40),
        "ms": rng.choice([800, 1200, 2500, 4000, 9000]),
        "base_ms": rng.choice([90, 120, 180, 250]),
        "secs": rng.randint(5, 30),
        "hours": rng.randint(2, 14),
        "base_pct": rng.randint(55, 80),
        "days": rng.randint(10, 60),
        "gb": rng.choice([100, 250, 500, 1000]),
        "n": rng.randint(6, 40),
        "lag": rng.choice([30, 90, 240, 600, 1800]),
        "rows": rng.randint(2, 80),
        "backlog": f"{rng.randint(50, 900)},000",
        "rps": f"{rng.randint(8, 90)},000",
        "mult": rng.randint(5, 40),
    }

    def fill(template: str) -> str:  # a sentence; one that starts with a name (`{service} ...`) keeps its case
        text = template.format_map(values)
        return text if template.startswith("{") else text[0].upper() + text[1:]

    severity = rng.choices([1, 2, 3, 4], weights=category["severity"])[0]
    cause = category["causes"][rng.randrange(len(category["causes"]))].format_map(values)
    sentences = [
        fill(rng.choice(category["openers"])),
        fill(
            rng.choice(["The cause was {cause}.", "Investigation traced it to {cause}.", "Root cause: {cause}."]).replace(
                "{cause}", cause
            )
        ),
    ]
    sentences += [fill(detail) for detail in rng.sample(category["details"], k=rng.randint(1, min(2, len(category["details"]))))]

    age_days = (NOW - opened).total_seconds() / 86400
    weights = [55, 35, 10] if age_days < 3 else [25, 35, 40] if age_days < 21 else [7, 15, 78]
    status = rng.choices(["open", "mitigated", "resolved"], weights=weights)[0]

    at = opened
    timeline = [{"at": at, "kind": "detected", "text": fill(rng.choice(DETECTIONS))}]
    at += timedelta(minutes=rng.randint(1, 15))
    timeline.append({"at": at, "kind": "acknowledged", "text": f"{rng.choice(ONCALL)} took the page"})
    if rng.random() < 0.5:
        at += timedelta(minutes=rng.randint(5, 40))
        timeline.append({"at": at, "kind": "update", "text": f"suspected cause: {cause}"})
    closed_at = None
    if status in ("mitigated", "resolved"):
        at += timedelta(minutes=rng.randint(10, 180))
        timeline.append({"at": at, "kind": "mitigated", "text": rng.choice(category["mitigations"]).format_map(values)})
    if status == "resolved":
        at += timedelta(hours=rng.randint(2, 120))
        at = min(at, NOW - timedelta(minutes=1))
        timeline.append({"at": at, "kind": "resolved", "text": rng.choice(RESOLUTIONS)})
        closed_at = at
    tags = list(category["tags"]) + [service]
    if severity >= 3:
        tags.append("customer-impact")
    if severity >= 3 and status == "resolved":
        tags.append("postmortem")
    return {
        "id": "",
        "title": fill(rng.choice(category["titles"])),
        "body": " ".join(sentences),
        "service": service,
        "severity": severity,
        "status": status,
        "opened_at": iso(opened),
        "closed_at": iso(closed_at) if closed_at else None,
        "tags": tags,
        "timeline": [{**entry, "at": iso(entry["at"])} for entry in timeline],
    }


def iso(moment: datetime) -> str:
    """`2024-03-02T10:14:00Z`."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE incidents (
    n INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    service TEXT NOT NULL,
    severity INTEGER NOT NULL CHECK (severity BETWEEN 1 AND 4),
    status TEXT NOT NULL CHECK (status IN ('open', 'mitigated', 'resolved')),
    opened_at TEXT NOT NULL,
    closed_at TEXT,
    tags TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX incidents_status ON incidents (status, severity);
CREATE TABLE timeline (
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (incident_id, seq)
);
CREATE VIRTUAL TABLE incidents_fts USING fts5 (title, body, tokenize = 'porter unicode61');
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('notify', 'email', 'close')),
    recipient TEXT NOT NULL,
    subject TEXT,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


def fill_database(connection: sqlite3.Connection, seed: int = SEED, count: int = COUNT) -> None:
    """Create the tables in an empty database and insert the generated incidents."""
    connection.executescript(SCHEMA)
    connection.executemany("INSERT INTO meta VALUES (?, ?)", [("version", VERSION), ("seed", str(seed)), ("count", str(count))])
    for n, incident in enumerate(generate(seed, count), start=1):
        connection.execute(
            "INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                n,
                incident["id"],
                incident["title"],
                incident["body"],
                incident["service"],
                incident["severity"],
                incident["status"],
                incident["opened_at"],
                incident["closed_at"],
                json.dumps(incident["tags"]),
            ),
        )
        connection.execute(
            "INSERT INTO incidents_fts (rowid, title, body) VALUES (?, ?, ?)", (n, incident["title"], incident["body"])
        )
        connection.executemany(
            "INSERT INTO timeline VALUES (?, ?, ?, ?, ?)",
            [(incident["id"], seq, e["at"], e["kind"], e["text"]) for seq, e in enumerate(incident["timeline"], start=1)],
        )
    connection.execute("INSERT INTO incidents_fts (incidents_fts) VALUES ('optimize')")
    connection.commit()


def database_path() -> Path:
    """Where the database is: `$PLANC_INCIDENTS_DB`, else `examples/incidents/incidents.sqlite`."""
    return Path(os.environ.get(ENV) or DEFAULT_PATH)


_checked: set[Path] = set()


def database(path: str | os.PathLike | None = None) -> Path:
    """The database's path, after building it if it is missing (or was built by an older generator)."""
    path = Path(path) if path is not None else database_path()
    if path in _checked and path.exists():
        return path
    if not path.exists():
        build(path)
    elif _version(path) != VERSION:
        build(path, replace=True)
    _checked.add(path)
    return path


def connect(path: str | os.PathLike | None = None) -> sqlite3.Connection:
    """A new connection to the database (built first if needed); rows are `sqlite3.Row`."""
    connection = sqlite3.connect(database(path), timeout=30)
    connection.row_factory = sqlite3.Row
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def build(path: str | os.PathLike, seed: int = SEED, count: int = COUNT, *, replace: bool = False) -> Path:
    """Build the database into a temporary file beside `path`, then put it in place atomically.

    Without `replace`, an existing file wins (whoever links first; the others discard their copy),
    so concurrent first uses never see a half-built database or overwrite each other's outbox.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(descriptor)
    try:
        with contextlib.closing(sqlite3.connect(temporary)) as connection:
            fill_database(connection, seed, count)
            connection.execute("PRAGMA journal_mode = WAL")  # readers and the outbox writer side by side
        os.chmod(temporary, 0o644)  # mkstemp made it private
        if replace:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)  # fails if someone else got there first
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links
                if not path.exists():
                    os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return path


def _version(path: Path) -> str | None:
    """The generator version the database at `path` was built by; None if it is not one of ours."""
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    except sqlite3.DatabaseError as error:
        if "no such table" in str(error) or "not a database" in str(error):
            return None
        raise
    return row[0] if row else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m incidents.data", description="(Re)build the incidents database.")
    parser.add_argument("--path", type=Path, default=None, help=f"default: ${ENV} or {DEFAULT_PATH}")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--count", type=int, default=COUNT)
    options = parser.parse_args(argv)
    path = build(options.path or database_path(), options.seed, options.count, replace=True)
    print(f"{path}: {options.count} incidents (seed {options.seed})")


if __name__ == "__main__":
    main()
