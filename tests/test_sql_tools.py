"""SQL tools: a read-only query over an SQLite database as a tool, read-only by construction."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import textwrap

import pytest
from cli import invoke

import planc
from planc.registry import ConfigError, load_registry
from planc.registry.tools.sql_tools import SqlError, open_read_only, run_query

QUERY = "SELECT id, title, severity FROM incidents WHERE team = :team ORDER BY id LIMIT :limit"


@pytest.fixture
def project(tmp_path, monkeypatch):
    database = tmp_path / "ops.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE incidents (id TEXT, title TEXT, severity INTEGER, team TEXT)")
        db.executemany(
            "INSERT INTO incidents VALUES (?, ?, ?, ?)",
            [(f"I{n}", f"incident {n}", n % 4 + 1, "db" if n % 2 else "web") for n in range(10)],
        )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    return tmp_path


def declare(project, query: str = QUERY, params: str | None = None, provider: str = "sql:ops.sqlite") -> None:
    params = (
        params
        if params is not None
        else '{ team = { type = "string" }, limit = { type = "integer", minimum = 1, maximum = 50, default = 20 } }'
    )
    (project / "planc.toml").write_text(
        textwrap.dedent(f'''
        [tools.team_incidents]
        description = "A team's incidents"
        provider = "{provider}"
        query = {json.dumps(query)}
        params = {params}
        returns_at_most = "limit"

        [tools.echo]
        params = {{ text = {{ type = "string" }} }}
        required = ["text"]
    '''),
        encoding="utf-8",
    )


def digest(project) -> str:
    return hashlib.sha256((project / "ops.sqlite").read_bytes()).hexdigest()


def test_the_query_is_the_tool_its_params_its_parameters_and_its_rows_records(project):
    declare(project)
    tool = load_registry(project / "planc.toml").tools["team_incidents"]
    assert tool.required == ("team",) and tool.effects.read_only and not tool.effects.destructive
    assert tool.returns["items"]["properties"] == {"id": {}, "title": {}, "severity": {}}
    (project / "p.plan").write_text('team_incidents(team: "db", limit: 2)\n', encoding="utf-8")
    result = invoke("run", "p.plan")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"id": "I1", "title": "incident 1", "severity": 2},
        {"id": "I3", "title": "incident 3", "severity": 4},
    ]


def test_a_parameter_left_out_takes_its_declared_default(project):
    declare(project, params='{ team = { type = "string" }, limit = { type = "integer", minimum = 1, default = 2 } }')
    (project / "p.plan").write_text('team_incidents(team: "web")\n', encoding="utf-8")
    result = invoke("run", "p.plan")
    assert result.exit_code == 0, result.output
    assert [row["id"] for row in json.loads(result.stdout)] == ["I0", "I2"]


def test_a_map_over_the_rows_is_a_bounded_loop_and_fields_are_checked(project):
    declare(project)
    registry = load_registry(project / "planc.toml")
    checked = planc.check('team_incidents(team: "web", limit: 3) |> map(do: { echo(text: item.title) })', registry=registry)
    assert checked.ok and checked.diagnostics == () and checked.cost.total.to_json()["calls"] == [1, 4]
    typo = planc.check('team_incidents(team: "web") |> map(do: { echo(text: item.titel) })', registry=registry)
    assert [d.code for d in typo.diagnostics] == ["E301"]


@pytest.mark.parametrize(
    "query, words",
    [
        ("DELETE FROM incidents WHERE team = :team", "would do more than read"),
        ("UPDATE incidents SET title = 'x' WHERE team = :team", "would do more than read"),
        ("ATTACH DATABASE 'other.sqlite' AS other", "would do more than read"),
        ("PRAGMA writable_schema = ON", "would do more than read"),
        ("SELECT * FROM incidents WHERE team = :team; DELETE FROM incidents", "one statement"),
        ("SELEC id FROM incidents", "syntax error"),
        ("SELECT nope FROM incidents WHERE team = :team", "no such column"),
        ("SELECT id FROM incidents WHERE team = ?", "positional parameter"),
    ],
)
def test_a_query_that_would_write_or_cannot_work_is_refused_at_load_and_the_file_is_untouched(project, query, words):
    before = digest(project)
    declare(project, query, params="{}" if "?" in query or ":team" not in query else '{ team = { type = "string" } }')
    with pytest.raises(ConfigError) as error:
        load_registry(project / "planc.toml")
    assert words in str(error.value) and error.value.line == 5  # the line of `query`
    result = invoke("check", "--config", "planc.toml", "-")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert digest(project) == before


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM incidents",
        "UPDATE incidents SET title = 'x'",
        "ATTACH DATABASE 'x.sqlite' AS x",
        "PRAGMA writable_schema = ON",
        "CREATE TABLE t (a)",
        "INSERT INTO incidents (id) VALUES ('x')",
    ],
)
def test_a_write_fails_at_call_time_too_and_the_file_is_untouched(project, query):
    """Were the query changed after it was checked, the connection still cannot write."""
    before = digest(project)
    with pytest.raises(SqlError):
        run_query(project / "ops.sqlite", query, {})
    assert digest(project) == before


def test_the_connection_is_read_only_even_without_the_authorizer(project):
    connection = open_read_only(project / "ops.sqlite")
    connection.set_authorizer(None)
    with pytest.raises(sqlite3.Error):
        connection.execute("DELETE FROM incidents")


def test_params_must_match_the_querys_parameters(project):
    declare(project, params='{ team = { type = "string" } }')
    with pytest.raises(ConfigError, match=r"the query reads :limit, which `params` does not declare"):
        load_registry(project / "planc.toml")
    declare(project, params='{ team = { type = "string" }, limit = { type = "integer" }, other = { type = "string" } }')
    with pytest.raises(ConfigError, match=r"`params` declares other, which the query does not read"):
        load_registry(project / "planc.toml")
