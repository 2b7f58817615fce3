"""The embedded example's data and tools (examples/incidents/).

Every test works on its own copy of the database in a temporary folder (through
`PLANC_INCIDENTS_DB`), never on the repository's file. The declarations in planc.toml and the
functions in incidents/tools.py are held together here: the same parameters and defaults, and
every result validates against the declared `returns` (with every declared property present).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
import pytest
from cli import invoke

from planc.registry import load_registry

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "incidents"
CONFIG = EXAMPLE / "planc.toml"
REGISTRY = load_registry(CONFIG)


def _import(name: str):
    """A module of the example's `incidents` package, imported as the interpreter will (folder on sys.path)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLE))


data = _import("incidents.data")
tools = _import("incidents.tools")


@pytest.fixture(scope="session")
def template(tmp_path_factory) -> Path:
    """One database built per test session; each test gets a copy."""
    return data.build(tmp_path_factory.mktemp("incidents-template") / "incidents.sqlite")


@pytest.fixture
def db(template, tmp_path, monkeypatch) -> Path:
    path = tmp_path / "incidents.sqlite"
    shutil.copyfile(template, path)
    monkeypatch.setenv(data.ENV, str(path))
    return path


def rows(path: Path, sql: str, *args) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return connection.execute(sql, args).fetchall()


def outbox(path: Path) -> list[tuple]:
    return rows(path, "SELECT * FROM outbox ORDER BY id")


def dump(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return list(connection.iterdump())


# --- the generator and the database --------------------------------------------------------------


def test_the_generator_is_deterministic():
    assert data.generate(seed=7, count=50) == data.generate(seed=7, count=50)
    assert data.generate(seed=7, count=50) != data.generate(seed=8, count=50)


def test_the_generated_incidents_are_well_formed():
    incidents = data.generate()
    assert len(incidents) == data.COUNT == 300
    assert [i["id"] for i in incidents] == [f"INC-{n}" for n in range(1001, 1301)]
    assert [i["opened_at"] for i in incidents] == sorted(i["opened_at"] for i in incidents)
    assert {i["status"] for i in incidents} == {"open", "mitigated", "resolved"}
    assert {i["severity"] for i in incidents} == {1, 2, 3, 4}
    assert len({i["service"] for i in incidents}) > 10
    for incident in incidents:
        assert incident["title"] and incident["body"].endswith(".") and incident["tags"]
        assert (incident["closed_at"] is not None) == (incident["status"] == "resolved")
        kinds = [entry["kind"] for entry in incident["timeline"]]
        assert kinds[:2] == ["detected", "acknowledged"]
        assert ("mitigated" in kinds) == (incident["status"] != "open")
        assert [e["at"] for e in incident["timeline"]] == sorted(e["at"] for e in incident["timeline"])
        assert incident["timeline"][0]["at"] == incident["opened_at"]


def test_two_builds_with_the_same_seed_hold_the_same_rows(tmp_path):
    first = data.build(tmp_path / "a.sqlite", seed=5, count=40)
    second = data.build(tmp_path / "b.sqlite", seed=5, count=40)
    other = data.build(tmp_path / "c.sqlite", seed=6, count=40)
    query = "SELECT * FROM incidents ORDER BY n"
    assert rows(first, query) == rows(second, query) != rows(other, query)
    assert len(rows(first, query)) == 40
    timeline = "SELECT * FROM timeline ORDER BY incident_id, seq"
    assert rows(first, timeline) == rows(second, timeline)
    assert rows(first, "SELECT count(*) FROM incidents_fts") == [(40,)]
    assert outbox(first) == []


def test_the_database_is_created_on_first_use_where_the_environment_says(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "incidents.sqlite"
    monkeypatch.setenv("PLANC_INCIDENTS_DB", str(path))
    assert tools.count("outage") > 0
    assert path.exists() and data.database() == path
    assert rows(path, "SELECT count(*) FROM incidents") == [(300,)]
    assert rows(path, "SELECT key, value FROM meta ORDER BY key") == [
        ("count", "300"),
        ("seed", str(data.SEED)),
        ("version", data.VERSION),
    ]
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_concurrent_first_uses_share_one_complete_database(tmp_path):
    path = tmp_path / "incidents.sqlite"
    barrier, results, errors = threading.Barrier(8), [], []

    def first_use():
        barrier.wait()
        try:
            results.append(data.database(path))
            with contextlib.closing(data.connect(path)) as connection:
                results.append(connection.execute("SELECT count(*) FROM incidents").fetchone()[0])
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results, key=str) == sorted([path] * 8 + [300] * 8, key=str)
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_database_from_an_older_generator_is_rebuilt(tmp_path):
    path = data.build(tmp_path / "incidents.sqlite", count=10, replace=True)
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE meta SET value = 'old' WHERE key = 'version'")
    data.database(path)
    assert rows(path, "SELECT value FROM meta WHERE key = 'version'") == [(data.VERSION,)]
    assert rows(path, "SELECT count(*) FROM incidents") == [(data.COUNT,)]


def test_the_default_database_is_beside_planc_toml(monkeypatch):
    monkeypatch.delenv("PLANC_INCIDENTS_DB", raising=False)
    assert data.database_path() == EXAMPLE / "incidents.sqlite"


# --- the read-only tools ------------------------------------------------------------------------


def test_search_finds_matching_incidents_best_first(db):
    hits = tools.search("disk full", limit=10)
    assert len(hits) == 10
    for hit in hits:
        text = rows(db, "SELECT lower(title || ' ' || body) FROM incidents WHERE id = ?", hit["id"])[0][0]
        assert "disk" in text and "full" in text
    assert "disk" in hits[0]["title"].lower()  # a title match ranks first
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert set(hits[0]) >= {"id", "title", "severity", "status", "service", "opened_at", "tags", "snippet"}


def test_search_stems_and_understands_fts5_syntax(db):
    assert tools.search("outages", limit=5) == tools.search("outage", limit=5)  # porter stemming
    either = {hit["id"] for hit in tools.search("outage OR degraded", limit=500)}
    assert either == {hit["id"] for hit in tools.search("outage", limit=500)} | {
        hit["id"] for hit in tools.search("degraded", limit=500)
    }
    both = {hit["id"] for hit in tools.search("certificate expired", limit=500)}
    without = {hit["id"] for hit in tools.search("certificate NOT expired", limit=500)}
    assert both and not both & without
    assert both | without == {hit["id"] for hit in tools.search("certificate", limit=500)}


def test_search_respects_limit(db):
    assert len(tools.search("outage", limit=3)) == 3
    assert len(tools.search("outage")) == 20  # the declared default
    assert len(tools.search("outage", limit=500)) == tools.count("outage") > 20
    for limit in (0, 501, "5", True):
        with pytest.raises(ValueError, match="limit"):
            tools.search("outage", limit=limit)


@pytest.mark.parametrize("query", ["disk-full", "service:api", '"unbalanced', "NOT", "AND OR", "(", "*", "???"])
def test_a_query_fts5_cannot_parse_is_searched_as_a_phrase(db, query):
    hits = tools.search(query, limit=5)  # does not raise
    assert tools.count(query) >= len(hits)


def test_the_phrase_fallback_finds_the_phrase(db):
    assert tools.search("disk-full", limit=50) == tools.search('"disk full"', limit=50) != []
    assert tools.search("", limit=5) == [] and tools.count("  ") == 0


def test_count_agrees_with_search(db):
    for query in ["outage", "outage OR degraded", "certificate expired", "disk-full", "nothing-like-this"]:
        assert tools.count(query) == len(tools.search(query, limit=500))
    assert tools.count("zebra") == 0


def test_get_incident_has_its_timeline(db):
    incident = tools.get_incident("INC-1042")
    assert incident["id"] == "INC-1042"
    stored = rows(db, "SELECT title, status, severity FROM incidents WHERE id = 'INC-1042'")[0]
    assert (incident["title"], incident["status"], incident["severity"]) == stored
    assert incident["timeline"][0].startswith(f"{incident['opened_at']} detected: ")
    assert all(isinstance(line, str) for line in incident["timeline"]) and len(incident["timeline"]) >= 2
    assert tools.get_incident(" inc-1042 ") == incident


def test_an_unknown_incident_is_a_clear_error(db):
    with pytest.raises(LookupError, match=r"no incident with id 'INC-9999' \(ids run from INC-1001 to INC-1300\)"):
        tools.get_incident("INC-9999")


def test_summarize_is_extractive(db):
    hits = [tools.get_incident(hit["id"]) for hit in tools.search("memory", limit=3)]
    summary = tools.summarize(hits)
    assert summary["count"] == 3 and summary["title"] == "3 incidents"
    lines = summary["text"].split("\n")
    assert len(lines) == 3
    for line, incident in zip(lines, hits):
        assert line.startswith(f"- {incident['id']} (sev {incident['severity']}, {incident['status']}, ")
        assert incident["title"] in line
        first_sentence = incident["body"].split(". ")[0]
        assert first_sentence in line and incident["body"] not in line
    prose = tools.summarize(hits, style="prose", title="Memory")
    assert prose["title"] == "Memory" and "\n" not in prose["text"] and prose["count"] == 3
    assert tools.summarize([]) == {"title": "0 incidents", "text": "No incidents.", "count": 0}
    assert tools.summarize(["First. Second."])["text"] == "- First."
    with pytest.raises(ValueError, match="style"):
        tools.summarize(hits, style="haiku")


def test_read_only_tools_write_nothing(db):
    before = dump(db)
    hits = tools.search("outage OR degraded", limit=50)
    tools.count("outage")
    tools.summarize([tools.get_incident(hit["id"]) for hit in hits[:5]])
    assert dump(db) == before


def test_the_triage_plan_finds_what_it_reads(db):
    """triage.plan, step by step in Python: the fields it reads exist, and it pages (more than 10 match)."""
    found = tools.search("outage OR degraded", limit=50)
    kept = [item for item in found if item["severity"] >= 2 and item["status"] != "resolved"]
    summary = tools.summarize([tools.get_incident(item["id"]) for item in kept], style="bullets", title="Open sev2+ incidents")
    assert len(kept) > 10 and summary["count"] == len(kept)
    assert all(item["id"] in summary["text"] for item in kept)


# --- the effectful tools ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, kind, recipient",
    [
        (lambda: tools.notify("#incidents", "12 open incidents"), "notify", "#incidents"),
        (lambda: tools.email("oncall@example.com", "Digest", "All quiet."), "email", "oncall@example.com"),
        (lambda: tools.close_incident("INC-1300", note="fixed by the rollback")["outbox"], "close", "INC-1300"),
    ],
)
def test_an_effectful_tool_writes_exactly_one_outbox_row(db, call, kind, recipient):
    assert outbox(db) == []
    written = call()
    assert outbox(db) == [(written["id"], kind, recipient, written["subject"], written["text"], written["created_at"])]
    assert written["kind"] == kind and written["recipient"] == recipient


def test_invalid_messages_are_refused_and_write_nothing(db):
    with pytest.raises(ValueError, match="channel"):
        tools.notify("incidents", "x")
    with pytest.raises(ValueError, match="email address"):
        tools.email("nobody", "s", "b")
    assert outbox(db) == []


def test_close_incident_resolves_it_once(db):
    open_id = rows(db, "SELECT id FROM incidents WHERE status = 'open' ORDER BY n LIMIT 1")[0][0]
    closed = tools.close_incident(open_id, note="duplicate of an earlier incident")
    assert closed["changed"] is True and closed["previous_status"] == "open"
    assert closed["status"] == "resolved" and closed["closed_at"]
    assert tools.get_incident(open_id)["status"] == "resolved"
    assert tools.get_incident(open_id)["timeline"][-1].endswith("resolved: duplicate of an earlier incident")
    assert rows(db, "SELECT status FROM incidents WHERE id = ?", open_id) == [("resolved",)]
    again = tools.close_incident(open_id)  # idempotent, as declared
    assert again["changed"] is False and again["outbox"] is None
    assert len(outbox(db)) == 1
    with pytest.raises(LookupError):
        tools.close_incident("INC-0")
    assert len(outbox(db)) == 1


def test_concurrent_writes_all_land(db):
    threads = [threading.Thread(target=tools.notify, args=("#load", f"message {n}")) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(row[4] for row in outbox(db)) == sorted(f"message {n}" for n in range(20))


# --- planc.toml and the code agree --------------------------------------------------------------


def _function(name: str):
    module, function = REGISTRY.tools[name].provider.removeprefix("python:").split(":")
    assert module == "incidents.tools"
    return getattr(_import(module), function)


PYTHON_TOOLS = sorted(name for name, tool in REGISTRY.tools.items() if tool.kind == "python")


@pytest.mark.parametrize("name", PYTHON_TOOLS)
def test_the_signature_matches_the_declaration(name):
    tool = REGISTRY.tools[name]
    signature = inspect.signature(_function(name))
    assert list(signature.parameters) == list(tool.params)
    for param, schema in tool.params.items():
        default = signature.parameters[param].default
        if param in tool.required:
            assert default is inspect.Parameter.empty, f"{name}.{param} is required in planc.toml"
        elif "default" in schema:
            assert default == schema["default"], f"{name}.{param}: default differs from planc.toml"
        else:
            assert default is None, f"{name}.{param} is optional in planc.toml, so its default is None"


SAMPLE_CALLS = {
    "search": {"query": "outage OR degraded", "limit": 30},
    "get_incident": {"id": "INC-1042"},
    "tally": {"query": "disk full"},
    "summarize": None,  # filled with real incidents below
    "notify": {"channel": "#incidents", "text": "hello"},
    "email": {"to": "oncall@example.com", "subject": "Digest", "body": "All quiet."},
    "close_incident": {"id": "INC-1299", "note": "done"},
}


@pytest.mark.parametrize("name", PYTHON_TOOLS)
def test_the_result_validates_against_the_declared_returns(db, name):
    tool = REGISTRY.tools[name]
    assert tool.returns is not None, f"{name} declares no `returns` in planc.toml"
    arguments = SAMPLE_CALLS[name] or {
        "items": [tools.get_incident("INC-1042"), *tools.search("disk", limit=3)],
        "style": "prose",
        "title": "Sample",
    }
    for param, value in arguments.items():
        jsonschema.validate(value, tool.params[param])  # the sample call is one planc would make
    result = _function(name)(**arguments)
    jsonschema.validate(result, tool.returns)
    assert json.loads(json.dumps(result)) == result  # plain JSON, as the interpreter prints it
    # every declared property is really there (the declarations mark none as required)
    schema, values = (tool.returns["items"], result) if tool.returns.get("type") == "array" else (tool.returns, [result])
    assert values, f"{name}: the sample call found nothing to compare"
    for value in values:
        if "properties" in schema:
            assert set(schema["properties"]) <= set(value), f"{name}: a declared property is missing"


def test_the_search_bound_is_the_declared_returns_at_most(db):
    assert REGISTRY.tools["search"].returns_at_most == "limit"
    assert REGISTRY.tools["search"].params["limit"]["maximum"] == tools.MAX_LIMIT


def test_checking_never_imports_the_tools():
    code = (
        "import sys, planc; from pathlib import Path; from planc.registry import load_registry\n"
        f"registry = load_registry(Path({str(CONFIG)!r}))\n"
        f"planc.check(Path({str(EXAMPLE / 'triage.plan')!r}).read_text(), registry=registry)\n"
        "assert not [m for m in sys.modules if m.startswith('incidents')], sys.modules.keys()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=EXAMPLE)


# --- the plans ----------------------------------------------------------------------------------


@pytest.mark.parametrize("plan", ["triage", "digest", "gate", "rota", "busiest"])
def test_the_example_plans_check_clean_with_the_example_policy(plan):
    result = invoke("check", "--config", str(CONFIG), str(EXAMPLE / f"{plan}.plan"))
    assert result.exit_code == 0, result.output
    assert "ok" in result.output


oncall = _import("incidents.oncall")


def test_the_rota_plan_maps_over_the_rows_of_the_sql_tool_and_leaves_the_database_as_it_was(db, tmp_path):
    committed = oncall.PATH.read_bytes()
    result = invoke("run", "--config", str(CONFIG), str(EXAMPLE / "rota.plan"), "--store", tmp_path / "runs.sqlite")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    expected = rows(oncall.PATH, "SELECT service, handle FROM rota WHERE tier = 1 ORDER BY service LIMIT 20")
    assert [(row["service"], row["on_call"]) for row in found] == expected
    assert [row["incidents"] for row in found] == [tools.count(f'"{service}"') for service, _ in expected]
    assert oncall.PATH.read_bytes() == committed  # read-only by construction: not a byte written
    calls = json.loads(invoke("show-run", "last", "--store", tmp_path / "runs.sqlite", "--format", "json").stdout)
    assert [call["tool"] for call in calls["calls"]].count("tally") == len(expected)


def test_the_busiest_plan_ranks_services_with_pure_steps_and_calls_only_search_and_notify(db, tmp_path):
    result = invoke("run", "--config", str(CONFIG), str(EXAMPLE / "busiest.plan"), "--store", tmp_path / "runs.sqlite")
    assert result.exit_code == 0, result.output
    counts: dict[str, int] = {}
    for hit in tools.search("outage OR degraded OR error", limit=200):
        if hit["status"] != "resolved":
            counts[hit["service"]] = counts.get(hit["service"], 0) + 1
    top = sorted(counts.items(), key=lambda pair: -pair[1])[:3]  # a stable sort: ties keep first-seen order
    assert json.loads(result.stdout)["text"] == "Busiest services: " + ", ".join(f"{s} ({n})" for s, n in top)
    calls = json.loads(invoke("show-run", "last", "--store", tmp_path / "runs.sqlite", "--format", "json").stdout)
    assert [call["tool"] for call in calls["calls"]] == ["search", "notify"]


def test_the_committed_rota_is_what_its_generator_builds(tmp_path):
    oncall.build(tmp_path / "oncall.sqlite")
    every = "SELECT * FROM rota ORDER BY service, tier"
    assert rows(tmp_path / "oncall.sqlite", every) == rows(oncall.PATH, every)
