"""SQL tools over PostgreSQL (`provider = "postgresql:$VAR"`), on a throwaway server: SQLite's contract, kept.

The spy is the database itself: every attack is followed by the table's rows, compared with what they
were, and by a file a shell command would have made.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import test_sql_tools as sql_tools_test
from cli import invoke

import planc
from planc.registry import ConfigError, load_registry
from planc.registry.tools.postgres_tools import run_query
from planc.registry.tools.sql_tools import SqlError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "incidents"
QUERY = sql_tools_test.QUERY  # the same query, the same rows
PROVIDER = "postgresql:$PLANC_TEST_DSN"

pytestmark = pytest.mark.slow  # a PostgreSQL server: conftest.py, the slow tier


@pytest.fixture
def database(postgres, monkeypatch, tmp_path):
    """A fresh database holding `incidents`, its DSN in $PLANC_TEST_DSN; a function `writes()` that
    inserts a row, for the attacks."""
    import psycopg

    dsn = postgres.database()
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(
            "CREATE TABLE incidents (id TEXT NOT NULL, title TEXT, severity INTEGER NOT NULL, team TEXT, "
            "opened DATE, score NUMERIC)"
        )
        for n in range(10):
            db.execute(
                "INSERT INTO incidents VALUES (%s, %s, %s, %s, DATE '2026-01-01' + %s, %s)",
                (f"I{n}", f"incident {n}", n % 4 + 1, "db" if n % 2 else "web", n, n / 2),
            )
        db.execute(
            "CREATE FUNCTION writes() RETURNS integer LANGUAGE sql AS "
            "$$ INSERT INTO incidents (id, severity) VALUES ('X', 1) RETURNING 1 $$"
        )
    monkeypatch.setenv("PLANC_TEST_DSN", dsn)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    return dsn


def rows(dsn: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn) as db:
        return db.execute("SELECT * FROM incidents ORDER BY id").fetchall()


def declare(folder: Path, query: str = QUERY, params: str | None = None) -> None:
    sql_tools_test.declare(folder, query, params, provider=PROVIDER)


def test_the_rows_are_records_typed_by_the_database(database, tmp_path):
    declare(tmp_path, "SELECT id, title, severity, opened, score FROM incidents WHERE team = :team ORDER BY id LIMIT :limit")
    tool = load_registry(tmp_path / "planc.toml").tools["team_incidents"]
    assert tool.required == ("team",) and tool.effects.read_only and not tool.effects.destructive
    assert tool.returns["items"]["properties"] == {
        "id": {"type": "string"},
        "title": {"type": ["string", "null"]},
        "severity": {"type": "integer"},
        "opened": {"type": ["string", "null"], "format": "date"},
        "score": {"type": ["number", "null"]},
    }
    (tmp_path / "p.plan").write_text('team_incidents(team: "db", limit: 2)\n', encoding="utf-8")
    result = invoke("run", "p.plan")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"id": "I1", "title": "incident 1", "severity": 2, "opened": "2026-01-02", "score": 0.5},
        {"id": "I3", "title": "incident 3", "severity": 4, "opened": "2026-01-04", "score": 1.5},
    ]


def test_undeclared_params_take_the_types_the_database_gives_them(database, tmp_path):
    (tmp_path / "planc.toml").write_text(
        f'[tools.t]\nprovider = "{PROVIDER}"\nquery = "SELECT id FROM incidents WHERE team = :team LIMIT :n"\n'
    )
    tool = load_registry(tmp_path / "planc.toml").tools["t"]
    assert tool.params == {"team": {"type": "string"}, "n": {"type": "integer"}}
    checked = planc.check('t(team: "db", n: "two")', registry=load_registry(tmp_path / "planc.toml"))
    assert [d.code for d in checked.diagnostics] == ["E300"]


def test_a_param_declared_with_another_type_than_the_database_reads_is_refused_at_load(database, tmp_path):
    declare(tmp_path, params='{ team = { type = "integer" }, limit = { type = "integer" } }')
    with pytest.raises(ConfigError, match=r"`params` says :team is integer, and the database reads it as string"):
        load_registry(tmp_path / "planc.toml")


# --- the example project's SQL tool, on either database ----------------------------------------


def example_on(tmp_path: Path, dsn: str | None) -> Path:
    """The incidents example copied; with `dsn`, its `on_call` tool reads the same rota from PostgreSQL."""
    import psycopg

    folder = tmp_path / "incidents"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".planc", "__pycache__"))
    if dsn is not None:
        with sqlite3.connect(EXAMPLE / "oncall.sqlite") as source, psycopg.connect(dsn, autocommit=True) as db:
            db.execute(
                "CREATE TABLE rota (service TEXT NOT NULL, tier INTEGER NOT NULL, person TEXT NOT NULL, "
                "handle TEXT NOT NULL, PRIMARY KEY (service, tier))"
            )
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO rota VALUES (%s, %s, %s, %s)",
                    source.execute("SELECT service, tier, person, handle FROM rota").fetchall(),
                )
        config = folder / "planc.toml"
        config.write_text(config.read_text().replace('provider = "sql:oncall.sqlite"', f'provider = "{PROVIDER}"'))
    return folder


def test_the_example_sql_tool_gives_the_same_rows_and_the_same_check_errors_on_postgresql(database, tmp_path):
    results, errors = [], []
    for dsn, place in ((None, tmp_path / "sqlite"), (database, tmp_path / "postgresql")):
        folder = example_on(place, dsn)
        assert load_registry(folder / "planc.toml").tools["on_call"].provider.split(":")[0] == ("postgresql" if dsn else "sql")
        ran = invoke(
            "run", "--config", str(folder / "planc.toml"), str(folder / "rota.plan"), "--store", str(place / "runs.sqlite")
        )
        assert ran.exit_code == 0, ran.output
        results.append(json.loads(ran.stdout))
        typo = folder / "typo.plan"
        typo.write_text("on_call(tier: 3) |> map(do: { reshape(value: {who: item.handel}) })\n")
        checked = invoke("check", "--config", str(folder / "planc.toml"), str(typo), "--format", "json")
        assert checked.exit_code == 1
        errors.append([(d["code"], d["message"]) for d in json.loads(checked.stdout)["diagnostics"]])
    assert results[0] == results[1] and len(results[0]) == 18
    assert errors[0] == errors[1] and [code for code, _ in errors[0]] == ["E300", "E301"]


# --- attacks ------------------------------------------------------------------------------------

WRITES = [
    ("DELETE FROM incidents WHERE team = :team", "returns no rows"),
    ("DELETE FROM incidents WHERE team = :team RETURNING id", "would do more than read"),
    ("UPDATE incidents SET title = 'x' WHERE team = :team RETURNING id", "would do more than read"),
    ("INSERT INTO incidents (id, severity) SELECT :team, 1 RETURNING id", "would do more than read"),
    ("WITH gone AS (DELETE FROM incidents WHERE team = :team RETURNING id) SELECT id FROM gone", "would do more than read"),
    ("SELECT id FROM incidents WHERE team = :team FOR UPDATE", "would do more than read"),
    ("SELECT id INTO copied FROM incidents WHERE team = :team", "returns no rows"),
    ("COPY incidents TO STDOUT", "returns no rows"),
    ("COPY (SELECT 1) TO PROGRAM 'touch {spy}'", "returns no rows"),
    ("SET default_transaction_read_only = off", "returns no rows"),
    ("DO $$ BEGIN DELETE FROM incidents; END $$", "returns no rows"),
    ("SELECT id FROM incidents WHERE team = :team; DELETE FROM incidents", "one statement"),
    ("SELECT id FROM incidents; DELETE FROM incidents", "one statement"),
    ("SELEC id FROM incidents", "syntax error"),
    ("SELECT nope FROM incidents WHERE team = :team", 'column "nope" does not exist'),
    ("SELECT id FROM nowhere WHERE team = :team", 'relation "nowhere" does not exist'),
    ("SELECT id FROM incidents WHERE team = $1", "positional parameter"),
]


@pytest.mark.parametrize("query, words", WRITES)
def test_a_query_that_would_write_or_cannot_work_is_refused_at_load_and_nothing_changes(database, tmp_path, query, words):
    before, spy = rows(database), tmp_path / "spy"
    query = query.replace("{spy}", str(spy))
    declare(tmp_path, query, params='{ team = { type = "string" } }' if ":team" in query else "{}")
    with pytest.raises(ConfigError) as error:
        load_registry(tmp_path / "planc.toml")
    assert words in str(error.value) and error.value.line == 5  # the line of `query`
    result = invoke("check", "--config", "planc.toml", "-", input='echo(text: "x")\n')
    assert result.exit_code == 2 and "Traceback" not in result.output and "cannot be used" in result.output
    assert rows(database) == before and not spy.exists()


@pytest.mark.parametrize("query", [query for query, _ in WRITES[:12]] + ["SELECT writes()", "SELECT nextval('s')"])
def test_a_write_fails_at_call_time_too_and_nothing_changes(database, tmp_path, query):
    """Were the query changed after it was checked, the session still cannot write."""
    import psycopg

    with psycopg.connect(database, autocommit=True) as db:
        db.execute("CREATE SEQUENCE s")
    before, spy = rows(database), tmp_path / "spy"
    with pytest.raises(SqlError):
        run_query(PROVIDER, query.replace("{spy}", str(spy)), {"team": "db"})
    assert rows(database) == before and not spy.exists()
    with psycopg.connect(database) as db:
        assert db.execute("SELECT last_value, is_called FROM s").fetchone() == (1, False)


def test_what_a_read_only_transaction_lets_a_function_do_is_rolled_back(database):
    import psycopg

    assert len(run_query(PROVIDER, "SELECT lo_import('/etc/hostname') AS oid", {})) == 1
    with psycopg.connect(database) as db:
        assert db.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone() == (0,)


def test_a_function_that_writes_loads_and_fails_its_call_and_the_run_records_the_failure(database, tmp_path):
    before = rows(database)
    (tmp_path / "planc.toml").write_text(f'[tools.sneaky]\nprovider = "{PROVIDER}"\nquery = "SELECT writes() AS n"\n')
    (tmp_path / "p.plan").write_text("sneaky()\n")
    result = invoke("run", "p.plan")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "would do more than read" in result.output and "read-only transaction" in result.output
    shown = json.loads(invoke("show-run", "last", "--format", "json").stdout)
    assert shown["status"] == "failed" and [c["outcome"] for c in shown["calls"]] == ["failed"]
    assert rows(database) == before


def test_a_dsn_that_asks_for_a_writable_session_is_still_read_only(database, monkeypatch):
    before = rows(database)
    monkeypatch.setenv("PLANC_TEST_DSN", f"{database} options='-c default_transaction_read_only=off'")
    with pytest.raises(SqlError, match="read-only transaction"):
        run_query(PROVIDER, "SELECT writes()", {})
    assert rows(database) == before
    assert run_query(PROVIDER, "SELECT count(*) AS n FROM incidents", {}) == [{"n": 10}]


def test_a_query_runs_no_longer_than_the_tools_timeout(database):
    with pytest.raises(SqlError, match="statement timeout"):
        run_query(PROVIDER, "SELECT pg_sleep(30) AS slept", {}, timeout_s=0.2)


def test_a_provider_that_names_no_set_variable_is_a_load_error_naming_it(database, tmp_path, monkeypatch):
    declare(tmp_path)
    monkeypatch.delenv("PLANC_TEST_DSN")
    with pytest.raises(ConfigError, match=r"the environment variable PLANC_TEST_DSN holds no DSN"):
        load_registry(tmp_path / "planc.toml")
    (tmp_path / "planc.toml").write_text('[tools.t]\nprovider = "postgresql:host=db"\nquery = "SELECT 1 AS one"\n')
    with pytest.raises(ConfigError, match=r"must be \"postgresql:\$NAME\": the DSN is read from the environment"):
        load_registry(tmp_path / "planc.toml")


def test_casts_percent_signs_and_dollar_quotes_are_not_parameters(database):
    query = "SELECT :v::int + 1 AS y, $$:no$$ AS d, 'a%b' AS p, 7 % 3 AS m WHERE 'ab' LIKE 'a%'"
    assert run_query(PROVIDER, query, {"v": 4}) == [{"y": 5, "d": ":no", "p": "a%b", "m": 1}]
