"""Stored plans: `planc compile`, `planc run OUT.json`, `planc.save_plan` and `planc.load_plan`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import invoke
from tool_project import tool_project

import planc
from planc import corpus
from planc.passes.policy.load import load_policy
from planc.registry import registry_from_text
from planc.store.migrations import MIGRATIONS
from planc.store.stored import VERSION, OlderPlan, StoredPlanError, dump, load_plan, migrate_plan, save_plan

TESTS = Path(__file__).resolve().parent
# One stored plan of every version planc has written, each compiled by the planc of its time: every one must
# load (migrated) for as long as docs/compatibility.md says.
FIXTURES = {version: TESTS / "fixtures" / f"stored_v{version}.json" for version in range(1, VERSION + 1)}
CORPUS = TESTS.parent / "corpus"

TOOLS = """
def search(query, limit=3):
    return [{"id": f"I{i}", "title": f"{query} {i}", "severity": i % 4 + 1} for i in range(limit)]

def notify(channel, text):
    return {"sent": True, "channel": channel, "text": text}
"""

TOML = """
[tools.search]
provider = "python:{module}:search"
params = {{ query = {{ type = "string" }}, limit = {{ type = "integer", minimum = 1, default = 3 }} }}
required = ["query"]
returns = {{ type = "array", items = {{ type = "object", properties = {{ id = {{ type = "string" }}, severity = {{ type = "integer" }}, title = {{ type = "string" }} }} }} }}
returns_at_most = "limit"
effects = {{ read_only = true }}

[tools.notify]
provider = "python:{module}:notify"
params = {{ channel = {{ type = "string", pattern = "^#" }}, text = {{ type = "string" }} }}
required = ["channel", "text"]
"""

PLAN = """search(query: "disk", limit: 4)
  |> filter(where: severity >= 2)
notify(channel: "#ops", text: "found {$2.length}")
reshape(value: {found: $2, sent: $3.sent})
"""

POLICY = (
    "permit(principal, action, resource);\n"
    '@id("no-destructive")\nforbid(principal, action, resource) when { resource.destructive && resource.read_only };\n'
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    with tool_project(tmp_path, "storedtools", TOOLS, TOML, {"p.plan": PLAN}):
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def compiled(project) -> dict:
    result = invoke("compile", "p.plan", "-o", "p.json")
    assert result.exit_code == 0, result.output
    return json.loads((project / "p.json").read_text(encoding="utf-8"))


def test_a_compiled_plan_runs_as_the_text_does(project):
    stored = compiled(project)
    assert stored["format"] == "planc.plan" and stored["version"] == VERSION and stored["source"] == PLAN
    assert stored["planc_version"] == planc.__version__
    assert stored["plans"] == {}  # it calls no declared plan
    assert sorted(stored["registry"]["tools"]) == ["notify", "search"] and stored["policy"] is None
    assert (project / "p.json").read_text(encoding="utf-8").endswith("}\n")
    from_text, from_stored = invoke("run", "p.plan"), invoke("run", "p.json")
    assert from_text.exit_code == 0 and from_stored.exit_code == 0, from_stored.output
    assert from_stored.stdout == from_text.stdout and json.loads(from_stored.stdout)["sent"] is True


def test_compile_refuses_a_plan_with_errors(project):
    (project / "bad.plan").write_text('notify(channel: "#x", text: 5)\n', encoding="utf-8")
    result = invoke("compile", "bad.plan", "-o", "bad.json")
    assert result.exit_code == 1 and "E300" in result.output and not (project / "bad.json").exists()
    assert invoke("compile", "p.plan").exit_code == 2  # -o is required


def test_a_tampered_plan_is_refused_naming_the_hash_mismatch(project):
    stored = compiled(project)
    value = stored["ast"]["pipelines"][0]["steps"][0]["args"][0]["value"]
    assert value["parts"] == ["disk"]
    value["parts"] = ["dusk"]  # one byte of the tree
    (project / "p.json").write_text(dump(stored), encoding="utf-8")
    result = invoke("run", "p.json")
    assert result.exit_code == 1 and "content hash does not match" in result.output
    assert f"expected {stored['hash']}" in result.output and "found " in result.output


def test_a_changed_tool_declaration_is_refused_naming_the_tool(project):
    compiled(project)
    toml = (project / "planc.toml").read_text(encoding="utf-8")
    (project / "planc.toml").write_text(toml.replace('pattern = "^#"', 'pattern = "^[#@]"'), encoding="utf-8")
    result = invoke("run", "p.json")
    assert result.exit_code == 1 and "stale" in result.output and "tool `notify` changed" in result.output
    assert "search" not in result.output


def test_a_removed_tool_is_refused_naming_it(project):
    compiled(project)
    toml = (project / "planc.toml").read_text(encoding="utf-8")
    (project / "planc.toml").write_text(toml[: toml.index("[tools.notify]")], encoding="utf-8")
    result = invoke("run", "p.json")
    assert result.exit_code == 1 and "tool `notify` was removed" in result.output


def test_a_changed_policy_is_refused(project):
    (project / "policy.cedar").write_text(POLICY, encoding="utf-8")
    result = invoke("compile", "p.plan", "-o", "p.json", "--policy", "policy.cedar")
    assert result.exit_code == 0, result.output
    assert invoke("run", "p.json", "--policy", "policy.cedar").exit_code == 0
    (project / "policy.cedar").write_text(
        POLICY + 'forbid(principal, action, resource) when { resource.server == "none" };\n', encoding="utf-8"
    )
    result = invoke("run", "p.json", "--policy", "policy.cedar")
    assert result.exit_code == 1 and "the policy changed since it was compiled" in result.output
    result = invoke("run", "p.json")
    assert result.exit_code == 1 and "the policy was removed" in result.output


def test_a_future_version_and_other_formats_are_refused(project):
    stored = compiled(project)
    stored["version"] = VERSION + 1
    with pytest.raises(
        StoredPlanError,
        match=f"version {VERSION + 1}, newer than this planc: this planc reads "
        f"versions {', '.join(map(str, range(1, VERSION + 1)))}",
    ):
        load_plan(dump(stored))
    stored.update(format="other", version=VERSION)
    with pytest.raises(StoredPlanError, match="not a stored plan"):
        load_plan(dump(stored))


def test_an_older_version_goes_through_its_migration(project, monkeypatch):
    from planc.store import stored as module

    text = dump(compiled(project))
    registry = planc.registry.load_registry(project / "planc.toml")
    now, then = VERSION + 1, VERSION
    monkeypatch.setattr(module, "VERSION", now)  # as if the format changed after this version
    monkeypatch.setitem(module.STORED_PLAN["properties"], "version", {"const": now})
    for version in range(1, then):
        monkeypatch.delitem(MIGRATIONS, version)
    with pytest.raises(OlderPlan, match=f"version {then}, and this planc runs version {now}"):  # a file is not run
        load_plan(text, registry=registry)
    with pytest.raises(StoredPlanError, match=f"version {then}, which this planc cannot read: it reads versions {now}"):
        load_plan(text, registry=registry, recorded=True)
    migrated = []
    monkeypatch.setitem(MIGRATIONS, then, lambda plan, registry: (migrated.append(plan["version"]) or dict(plan), ""))
    assert load_plan(text, registry=registry, recorded=True).ok and migrated == [then]  # a record: in memory
    rewritten, said = migrate_plan(text, registry)
    assert json.loads(rewritten)["version"] == now and said == [f"version {then} -> {now}"]
    assert load_plan(rewritten, registry=registry).ok  # stamped, and its hash made again
    tampered = text.replace('"disk', '"dusk', 1)
    with pytest.raises(StoredPlanError, match="content hash does not match"):  # checked before migrating
        load_plan(tampered, registry=registry, recorded=True)


# The committed fixture was written by `planc compile` against this registry; it must load forever.
FIXTURE_TOML = """
[tools.lookup]
provider = "python:fixture_tools:lookup"
description = "Find the records that match a query."
params = { query = { type = "string" }, limit = { type = "integer", minimum = 1, default = 5 } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
returns_at_most = "limit"
effects = { read_only = true, idempotent = true }
cost = { usd = 0.001, latency_ms = 50 }

[tools.post]
provider = "python:fixture_tools:post"
params = { channel = { type = "string" }, text = { type = "string" } }
required = ["channel", "text"]
"""
FIXTURE_PLAN = """# a stored plan fixture: do not change
lookup(query: "disk full", limit: 3)
  |> map(concurrency: 2, do: { reshape(value: {id: item.id}) })
post(channel: "#ops", text: "{$2.length} records")
"""


def fixture_registry():
    return registry_from_text(FIXTURE_TOML, Path("planc.toml"))


@pytest.mark.parametrize("version", range(1, VERSION))
def test_a_committed_older_plan_is_refused_to_run_and_migrates_to_the_current_one(version):
    """Version 1 did not record declared plans' files, 2 a declared plan's `params`, 3 the built-in steps, 4
    the planc that compiled it: each migrates (calling no declared plan and no tool whose name is a built-in
    step now), and its content hash is that of the plan compiled now, but for what was not recorded."""
    registry = fixture_registry()
    text = FIXTURES[version].read_text(encoding="utf-8")
    with pytest.raises(OlderPlan):
        load_plan(text, registry=registry)
    checked = load_plan(text, registry=registry, recorded=True)  # a run's record of it, in memory
    assert checked.ok and checked.source == FIXTURE_PLAN and checked.steps == 4
    migrated, said = migrate_plan(text, registry)
    current = json.loads(FIXTURES[VERSION].read_text(encoding="utf-8"))
    unknown = {"plans": None} if version == 1 else {}  # which declared plans it reached was not recorded
    assert json.loads(migrated) == {**current, **unknown, "planc_version": None, "hash": json.loads(migrated)["hash"]}
    if version > 1:  # the same content: which planc compiled it is outside the hash
        assert json.loads(migrated)["hash"] == current["hash"]
    assert said == [f"version {n} -> {n + 1}" for n in range(version, VERSION)]


def test_the_committed_plan_of_this_version_still_loads_and_compiles_the_same_but_for_planc_version():
    text = FIXTURES[VERSION].read_text(encoding="utf-8")
    registry = fixture_registry()
    checked = load_plan(text, registry=registry)
    assert checked.ok and checked.source == FIXTURE_PLAN and checked.steps == 4
    compiled_now = save_plan(checked, registry=registry)
    assert compiled_now["planc_version"] == planc.__version__
    assert dump({**compiled_now, "planc_version": json.loads(text)["planc_version"]}) == text
    assert migrate_plan(text, registry) == (text, [])


def test_which_planc_compiled_a_plan_is_outside_its_hash():
    text = FIXTURES[VERSION].read_text(encoding="utf-8")
    stored = json.loads(text)
    stored["planc_version"] = "99.0.0"
    assert load_plan(dump(stored), registry=fixture_registry()).ok
    stored["source"] = stored["source"].replace("disk full", "disk empty")
    with pytest.raises(StoredPlanError, match="content hash does not match"):
        load_plan(dump(stored), registry=fixture_registry())


def write_fixture() -> None:  # by hand, for a new version: `python -c "import test_stored as t; t.write_fixture()"`
    from planc.store.stored import VERSION

    registry = fixture_registry()
    checked = planc.check(FIXTURE_PLAN, registry=registry)
    path = TESTS / "fixtures" / f"stored_v{VERSION}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(dump(save_plan(checked, registry=registry)), encoding="utf-8")


def ok_cases():
    cases = []
    for case in corpus.load_cases(CORPUS):
        in_registry = case.category.startswith("registry")
        registry = case.registry if in_registry else None
        policy = case.policy if in_registry else None
        if case.extract:  # the stored source is the plan itself, not a model reply around it
            continue
        checked = planc.check(case.source, registry=registry, policy=policy)
        if checked.ok:
            cases.append(pytest.param(checked, registry, policy, id=f"{case.category}: {case.name}"))
    return cases


@pytest.mark.parametrize(("checked", "registry", "policy"), ok_cases())
def test_every_corpus_plan_round_trips(checked, registry, policy):
    text = dump(save_plan(checked, registry=registry, policy=policy))
    assert dump(save_plan(load_plan(text, registry=registry, policy=policy), registry=registry, policy=policy)) == text


def test_the_policy_hash_is_of_the_policy_text(tmp_path):
    (tmp_path / "p.cedar").write_text(POLICY, encoding="utf-8")
    policy = load_policy(tmp_path / "p.cedar")
    stored = save_plan(planc.check('search(query: "x")', policy=policy), policy=policy)
    import hashlib

    assert stored["policy"] == hashlib.sha256(POLICY.encode()).hexdigest()
