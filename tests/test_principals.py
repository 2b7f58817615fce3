"""Principals with attributes and groups: a multi-tenant policy (`principal.org == context.args.org`)
refuses a call into another organisation at check time, at the argument's span, and at run time, when
the organisation is only computed then; it allows the same organisation's.

As in the attack modules, the tool is a spy that appends each call to `spy.log`; each test asserts the
exact calls made, the exit code, the run's recorded status and that no traceback reached the user.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli import invoke
from test_attacks import calls, run, statuses  # the spy's lines, a run of p.plan, the recorded statuses
from tool_project import spied_project

import planc

TOOLS = """
import os

SPY = os.environ["PLANC_TEST_SPY"]


def _called(line):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(line + "\\n")


def read_invoice(org, id):
    _called(f"read_invoice {org} {id}")
    return {"org": org, "id": id}


def org_of(customer):
    _called(f"org_of {customer}")
    return {"acme-1": "acme", "globex-7": "globex"}[customer]
"""

TOML = """
policy = "policy.cedar"
principal = 'User::"alice"'

[tools.read_invoice]
provider = "python:{module}:read_invoice"
params = {{ org = {{ type = "string" }}, id = {{ type = "integer" }} }}
required = ["org", "id"]
effects = {{ read_only = true }}

[tools.org_of]
provider = "python:{module}:org_of"
params = {{ customer = {{ type = "string" }} }}
required = ["customer"]
returns = {{ type = "string" }}
effects = {{ read_only = true }}

[principals.'User::"alice"']
attributes = {{ org = "acme" }}
groups = ['Group::"billing"']

[principals.'User::"bob"']
attributes = {{ org = "globex" }}
"""

POLICY = """
permit(principal in Group::"billing", action, resource);
permit(principal, action, resource) when { resource.read_only };

@id("own-organisation")
@reason("a user reads only their own organisation's records")
forbid(principal, action, resource)
when { context.args has org && principal.org != context.args.org };
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    with spied_project(tmp_path, monkeypatch, "tenanttools", TOOLS, TOML, {"policy.cedar": POLICY}) as folder:
        yield folder


def check(project, text: str, *args: str):
    (project / "p.plan").write_text(text, encoding="utf-8")
    result = invoke("check", "p.plan", *args)
    assert "Traceback" not in result.output
    return result


def test_a_call_into_another_organisation_is_refused_at_check_time_at_the_argument(project):
    result = check(project, 'read_invoice(id: 7, org: "globex")\n')
    assert result.exit_code == 1
    assert "E400" in result.output and 'forbidden by policy `own-organisation` (for User::"alice")' in result.output
    line = result.output.splitlines()
    arrow = next(n for n, text in enumerate(line) if text.lstrip().startswith("1 |"))
    assert line[arrow + 1].index("^") == line[arrow].index('"globex"')  # the carets under the argument
    assert "a user reads only their own organisation's records" in result.output
    assert calls(project) == []


def test_the_same_call_in_ones_own_organisation_runs(project):
    result = run(project, 'read_invoice(id: 7, org: "acme")\n')
    assert result.exit_code == 0, result.output
    assert calls(project) == ["read_invoice acme 7"] and statuses(project) == ["ok"]


def test_an_organisation_computed_at_run_time_is_refused_before_the_call(project):
    result = run(project, 'org_of(customer: "globex-7")\nread_invoice(id: 7, org: $1)\n')
    assert result.exit_code == 1
    assert "step 2: calling `read_invoice` is forbidden by policy `own-organisation`" in result.output
    assert calls(project) == ["org_of globex-7"] and statuses(project) == ["failed"]


def test_an_organisation_computed_at_run_time_in_ones_own_runs(project):
    result = run(project, 'org_of(customer: "acme-1")\nread_invoice(id: 7, org: $1)\n')
    assert result.exit_code == 0, result.output
    assert calls(project) == ["org_of acme-1", "read_invoice acme 7"] and statuses(project) == ["ok"]


def test_another_principal_of_planc_toml_is_judged_by_its_own_attributes(project):
    assert check(project, 'read_invoice(id: 7, org: "acme")\n', "--principal", 'User::"bob"').exit_code == 1
    assert check(project, 'read_invoice(id: 7, org: "globex")\n', "--principal", 'User::"bob"').exit_code == 0


CAROL = {"uid": {"type": "User", "id": "carol"}, "attrs": {"org": "globex"}, "parents": []}  # Cedar's entity JSON


def test_a_principal_given_per_run_is_judged_and_recorded_with_the_run(project):
    carol = json.dumps(CAROL)
    assert check(project, 'read_invoice(id: 7, org: "acme")\n', "--principal-json", carol).exit_code == 1
    result = run(project, 'read_invoice(id: 8, org: "globex")\n', "--principal-json", carol)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    assert calls(project) == ["read_invoice globex 8"] and statuses(project) == ["ok"]
    with sqlite3.connect(project / "runs.sqlite") as db:
        [(options,)] = db.execute("SELECT options FROM runs").fetchall()
    recorded = json.loads(options)
    assert recorded["principal"] == 'User::"carol"'
    assert {"uid": 'User::"carol"', "attributes": {"org": "globex"}, "groups": []} in recorded["principals"]


@pytest.mark.parametrize(
    "given",
    [
        {"uid": 'User::"carol"', "attrs": {"org": "globex"}, "parents": ['Group::"billing"']},  # entities as text
        {
            "uid": {"__entity": {"type": "User", "id": "carol"}},
            "attrs": {"org": "globex"},
            "parents": [{"__entity": {"type": "Group", "id": "billing"}}],
        },  # Cedar's escape of an entity
    ],
)
def test_cedars_entity_json_is_read_in_each_of_its_spellings(project, given):
    result = check(project, 'read_invoice(id: 7, org: "acme")\n', "--principal-json", json.dumps(given))
    assert result.exit_code == 1 and 'forbidden by policy `own-organisation` (for User::"carol")' in result.output
    assert check(project, 'read_invoice(id: 7, org: "globex")\n', "--principal-json", json.dumps(given)).exit_code == 0


def test_the_old_names_attributes_and_groups_still_work_with_a_warning(project):
    """planc's own keys before it read Cedar's entity JSON: accepted for one more minor version, said so."""
    old = json.dumps({"uid": 'User::"carol"', "attributes": {"org": "globex"}, "groups": []})
    result = run(project, 'read_invoice(id: 8, org: "globex")\n', "--principal-json", old)
    assert result.exit_code == 0, result.output
    assert (
        "warning: --principal-json: the principal gives `attributes` and `groups`: planc's names before it "
        "read Cedar's entity JSON, which are `attrs` and `parents`; the old names go in planc 0.2"
    ) in result.stderr
    assert calls(project) == ["read_invoice globex 8"] and statuses(project) == ["ok"]
    with pytest.warns(DeprecationWarning, match="`attributes`: planc's names before"):
        assert (
            planc.load_project(project, principal={"uid": 'User::"dave"', "attributes": {"org": "x"}}).principal == 'User::"dave"'
        )


def test_a_principal_planc_does_not_know_is_refused_whatever_the_organisation(project):
    """`principal.org` of an entity no one declared cannot be evaluated: the call is denied, not let through."""
    result = run(project, 'read_invoice(id: 7, org: "acme")\n', "--principal", 'User::"mallory"')
    assert result.exit_code == 1 and "could not be evaluated" in result.output
    assert calls(project) == [] and statuses(project) == []


@pytest.mark.parametrize(
    "given, words",
    [
        ("{", "--principal-json: "),
        ('{"uid": "carol"}', "must be a Cedar entity like"),
        ('{"uid": "User::\\"carol\\"", "org": "acme"}', "has `org`, which is not one of `uid`, `attrs`, `parents`"),
        ('{"uid": "User::\\"carol\\"", "attrs": {"org": 5}}', "give `org` different types"),
        ('{"uid": {"type": "User"}}', '`uid` must be a Cedar entity like {"type": "User", "id": "alice"}'),
        ('{"uid": "User::\\"carol\\"", "attrs": {}, "attributes": {}}', "gives both `attrs` and `attributes`"),
        ('{"uid": "User::\\"carol\\"", "parents": [{"type": "Tool", "id": "x"}]}', "is a `Tool`"),
    ],
)
def test_a_malformed_principal_is_one_clean_message(project, given, words):
    result = run(project, 'read_invoice(id: 7, org: "acme")\n', "--principal-json", given)
    assert result.exit_code == 2 and words in result.output
    assert calls(project) == [] and statuses(project) == []


@pytest.mark.parametrize(
    "entry, words",
    [
        ("""[principals.'Org::Team::"ops"']\nattributes = { org = "acme" }\n""", "has a namespace"),
        ("""[principals.'Tool::"x"']\n""", "is a `Tool`"),
        ("""[principals.'User::"eve"']\nattributes = { org = 0.123456 }\n""", "Cedar cannot hold"),
        ("""[principals.'User::"eve"']\ngroups = "admins"\n""", '`groups` of User::"eve" must be a list'),
        ("""[principals.'User::"eve"']\nrole = "admin"\n""", "unknown key `role`"),
    ],
)
def test_a_principal_planc_toml_declares_wrongly_is_one_clean_message(project, entry, words):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text() + entry, encoding="utf-8")
    result = run(project, 'read_invoice(id: 7, org: "acme")\n')
    assert result.exit_code == 2 and words in result.output, result.output
    assert calls(project) == [] and statuses(project) == []


def test_principal_and_principal_json_naming_two_principals_is_refused(project):
    result = run(
        project,
        'read_invoice(id: 7, org: "acme")\n',
        "--principal",
        'User::"bob"',
        "--principal-json",
        '{"uid": "User::\\"carol\\""}',
    )
    assert result.exit_code == 2 and "name two principals" in result.output
    assert calls(project) == []


def test_the_python_api_takes_a_principal_with_attributes_per_call(project):
    project_ = planc.load_project(project)
    dave = {"uid": {"type": "User", "id": "dave"}, "attrs": {"org": "globex"}, "parents": [{"type": "Group", "id": "billing"}]}
    assert not planc.check(
        'read_invoice(id: 1, org: "acme")', registry=project_.registry, policy=project_.policy, principal=dave
    ).ok
    checked = planc.check(
        'read_invoice(id: 1, org: "globex")', registry=project_.registry, policy=project_.policy, principal=dave
    )
    assert checked.ok, checked.diagnostics
    assert planc.run(checked).value == {"org": "globex", "id": 1}
    assert calls(project) == ["read_invoice globex 1"]
    assert planc.load_project(project, principal=dave).principal == 'User::"dave"'
