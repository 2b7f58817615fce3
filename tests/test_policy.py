"""The policy pass and `planc.policy.decide`, with real Cedar (docs/policy.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import invoke

import planc
from planc.passes.policy.decide import decide
from planc.passes.policy.load import PolicyError, policy_from_text
from planc.registry.loading.config import registry_from_text
from planc.registry.loading.registry import Registry
from planc.registry.tools.tool import Effects, Tool

ROOT = Path(__file__).resolve().parents[1]
TOOLS = """\
[tools.search]
params = { query = { type = "string" }, limit = { type = "integer" }, tags = { type = "array" }, filter = { type = "object" } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" }, owner = { type = "string" } } } }
effects = { read_only = true }

[tools.summarize]
pipe = "items"
params = { items = { type = "array" }, title = { type = "string" } }
effects = { destructive = false }

[tools.email]
params = { to = { type = "string" }, subject = { type = "string" } }
required = ["to"]
effects = { destructive = false }

[tools.close_incident]
params = { id = { type = "string" } }
required = ["id"]
effects = { destructive = true }
"""
REGISTRY = registry_from_text(TOOLS, Path("planc.toml"))
ALLOW_ALL = 'permit(principal, action == Action::"call", resource);\n'
NO_DESTRUCTIVE = ALLOW_ALL + '@id("no-destructive")\nforbid(principal, action, resource) when { resource.destructive };\n'
PLAN = 'search(query: "disk full")\n  |> summarize(title: "Disk")\nclose_incident(id: "INC-1")\n'


def checked(plan: str, policy_text: str, principal: str = 'User::"anonymous"', registry=REGISTRY):
    policy = policy_from_text(policy_text, Path("policy.cedar"))
    return planc.check(plan, registry=registry, policy=policy, principal=principal)


def denials(result) -> list[tuple[str, str, int, int]]:
    return [(d.step, d.message, d.span.start.line, d.span.start.column) for d in result.diagnostics if d.code == "E400"]


def requests(result) -> dict[str, dict]:
    paths = result.resolution.paths
    return {paths[step]: decision.request for step, decision in result.policy.decisions.items()}


# --- denials ---------------------------------------------------------------------------------


def test_a_forbidden_step_is_E400_at_its_tool_name_naming_the_policy_id():
    result = checked(PLAN, NO_DESTRUCTIVE)
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "E400" and diagnostic.step == "3"
    assert diagnostic.message == 'calling `close_incident` is forbidden by policy `no-destructive` (for User::"anonymous")'
    span = diagnostic.span
    assert (span.start.line, span.start.column, span.end.line, span.end.column) == (3, 1, 3, 15)
    assert not result.ok


def test_a_policy_without_an_id_is_named_by_its_position_in_the_file():
    result = checked(PLAN, ALLOW_ALL + '\nforbid(principal, action, resource == Tool::"close_incident");')
    assert denials(result) == [
        ("3", 'calling `close_incident` is forbidden by policy `policy 2 of policy.cedar` (for User::"anonymous")', 3, 1)
    ]


def test_the_reason_annotation_is_a_hint():
    result = checked(
        PLAN,
        ALLOW_ALL + '@id("x")\n@reason("ask a person to close incidents")\n'
        "forbid(principal, action, resource) when { resource.destructive };",
    )
    assert result.diagnostics[0].hints == ("ask a person to close incidents",)


def test_the_same_plan_passes_for_an_allowed_principal():
    alice_only = 'permit(principal == User::"alice", action == Action::"call", resource);'
    assert [step for step, *_ in denials(checked(PLAN, alice_only))] == ["1", "2", "3"]
    assert checked(PLAN, alice_only, principal='User::"alice"').diagnostics == ()


def test_default_deny_when_no_policy_permits():
    result = checked(PLAN, '@id("no-email")\nforbid(principal, action, resource == Tool::"email");')
    assert [message for _, message, *_ in denials(result)] == [
        f'calling `{tool}` is not permitted (for User::"anonymous"): no policy of policy.cedar permits it'
        for tool in ("search", "summarize", "close_incident")
    ]
    assert len(denials(checked(PLAN, "// nothing permitted\n"))) == 3


def test_forbid_overrides_permit():
    text = (
        '@id("alice-may-do-anything")\npermit(principal == User::"alice", action, resource);\n'
        '@id("nobody-closes")\nforbid(principal, action, resource == Tool::"close_incident");'
    )
    result = checked(PLAN, text, principal='User::"alice"')
    assert denials(result) == [("3", 'calling `close_incident` is forbidden by policy `nobody-closes` (for User::"alice")', 3, 1)]
    [decision] = [d for d in result.policy.decisions.values() if not d.allowed]
    assert [rule.name for rule in decision.policies] == ["nobody-closes"]


def test_steps_inside_blocks_are_judged():
    plan = (
        'hits = search(query: "stale")\n'
        "decide(when: $hits.length > 3, then: { map(over: $hits, do: { close_incident(id: item.id) }) })\n"
    )
    assert denials(checked(plan, NO_DESTRUCTIVE)) == [
        ("2/then.1/do.1", 'calling `close_incident` is forbidden by policy `no-destructive` (for User::"anonymous")', 2, 63)
    ]


def test_without_a_policy_the_pass_does_nothing():
    result = planc.check(PLAN, registry=REGISTRY)
    assert result.diagnostics == () and result.policy.decisions == {}


def test_without_a_registry_a_tool_is_judged_by_the_conservative_effects():
    result = checked("delete_everything(confirm: true)", NO_DESTRUCTIVE, registry=None)
    assert [message for _, message, *_ in denials(result)] == [
        'calling `delete_everything` is forbidden by policy `no-destructive` (for User::"anonymous")'
    ]


def test_an_unknown_tool_is_not_judged():
    result = checked("delete_everything(confirm: true)", "")
    assert [d.code for d in result.diagnostics] == ["E200"]


# --- the request -----------------------------------------------------------------------------


def test_the_request_has_the_literal_args_and_names_the_dynamic_ones():
    plan = (
        'hits = search(query: "disk", limit: 5, tags: ["db", "sev1"], filter: {team: "ops"})\n'
        '  |> summarize(title: "{$hits.length} incidents")\n'
        'email(to: "{$hits[0].owner}@example.com", subject: "Disk \\{full}")\n'
    )
    seen = requests(checked(plan, ALLOW_ALL))
    assert seen["1"] == {
        "principal": 'User::"anonymous"',
        "action": 'Action::"call"',
        "resource": 'Tool::"search"',
        "context": {
            "args": {"query": "disk", "limit": 5, "tags": ["db", "sev1"], "filter": {"team": "ops"}},
            "dynamic": [],
            "step": "1",
            "in_loop": False,
            "sources": {"query": [], "limit": [], "tags": [], "filter": []},
            "labels": [],
            "control": [],
            "chosen_by": {"query": [], "limit": [], "tags": [], "filter": []},
            "unchosen_labels": [],
            "one_bit": False,
        },
    }
    # What `search` returned carries `untrusted` (it declares no labels), into the piped items and the title.
    assert seen["2"]["context"] == {
        "args": {},
        "dynamic": ["items", "title"],
        "step": "2",
        "in_loop": False,
        "sources": {"items": ["untrusted"], "title": ["untrusted"]},
        "labels": ["untrusted"],
        "control": [],
        "chosen_by": {"items": [], "title": []},
        "unchosen_labels": ["untrusted"],
        "one_bit": False,
    }
    assert seen["3"]["context"]["args"] == {"subject": "Disk {full}"}
    assert seen["3"]["context"]["dynamic"] == ["to"]


def test_a_policy_reads_args_dynamic_step_and_in_loop_as_the_pass_gives_them():
    text = (
        ALLOW_ALL
        + """
@id("big-searches")
forbid(principal, action, resource == Tool::"search")
when { context.args has limit && context.args.limit > 100 && context.args.tags.contains("db")
       && context.args.filter.team == "ops" };
@id("runtime-recipient")
forbid(principal, action, resource == Tool::"email") when { context.dynamic.contains("to") };
@id("per-item")
forbid(principal, action, resource == Tool::"summarize") when { context.in_loop };
@id("step-4")
forbid(principal, action, resource) when { context.step == "4" };
"""
    )
    plan = (
        'hits = search(query: "disk", limit: 500, tags: ["db"], filter: {team: "ops"})\n'
        'search(query: "disk", limit: 500, tags: ["web"], filter: {team: "ops"})\n'
        'email(to: "{$hits[0].owner}", subject: "x")\n'
        'email(to: "oncall@example.com", subject: "x")\n'
        "summarize(items: $hits)\n"
        'map(over: $hits, do: { decide(when: item.id == "a", then: { summarize(items: [item]) }) })\n'
    )
    assert [(step, message.split("`")[3]) for step, message, *_ in denials(checked(plan, text))] == [
        ("1", "big-searches"),
        ("3", "runtime-recipient"),
        ("4", "step-4"),
        ("6/do.1/then.1", "per-item"),
    ]


def test_the_resource_has_the_tools_effects_and_server():
    git_status = Tool(
        "git__git_status",
        provider="mcp:git",
        effects=Effects(read_only=True, idempotent=False, destructive=True, open_world=False),
    )
    registry = Registry(tools={"git__git_status": git_status, "close_incident": REGISTRY.tools["close_incident"]})
    text = (
        '@id("git-read-only")\npermit(principal, action, resource) when { resource.server == "git" && '
        "resource.read_only && !resource.destructive && resource.idempotent && !resource.open_world };"
    )
    result = checked('git__git_status()\nclose_incident(id: "INC-1")', text, registry=registry)
    assert [step for step, *_ in denials(result)] == ["2"]


# --- decide: the same function at run time ---------------------------------------------------


def test_decide_judges_real_argument_values():
    policy = policy_from_text(
        (ROOT / "examples" / "incidents" / "policy.cedar").read_text(encoding="utf-8"), Path("policy.cedar")
    )
    email = REGISTRY.tools["email"]
    inside = decide(policy, 'User::"anonymous"', email, {"to": "oncall@example.com"}, step="3", in_loop=False)
    outside = decide(policy, 'User::"anonymous"', email, {"to": "x@partner.io"}, step="3", in_loop=False)
    assert inside.allowed and [rule.name for rule in inside.policies] == ["allow-calls"]
    assert not outside.allowed and [rule.name for rule in outside.policies] == ["email-own-domain"]


def test_decide_refuses_a_value_cedar_cannot_hold():
    policy = policy_from_text(ALLOW_ALL, Path("policy.cedar"))
    decision = decide(policy, 'User::"anonymous"', Tool("t"), {"ratio": 0.123456}, step="1", in_loop=False)
    assert not decision.allowed
    assert decision.problem == (
        "`context.args.ratio` is 0.123456, which Cedar cannot hold: a decimal has at most 4 digits after the point"
    )


def test_null_is_absent_and_a_fraction_is_a_decimal():
    policy = policy_from_text(
        ALLOW_ALL + "forbid(principal, action, resource) when { context.args has cc };\n"
        "forbid(principal, action, resource) when { "
        'context.args has ratio && context.args.ratio.greaterThan(decimal("0.5")) };',
        Path("policy.cedar"),
    )
    assert decide(policy, 'User::"a"', Tool("t"), {"cc": None, "ratio": 0.25}, step="1", in_loop=False).allowed
    assert not decide(policy, 'User::"a"', Tool("t"), {"ratio": 0.75}, step="1", in_loop=False).allowed


# --- failing closed: a policy that cannot be evaluated denies -------------------------------

AMOUNTS = ALLOW_ALL + (
    '@id("big-transfers")\nforbid(principal, action, resource)\n'
    "  when { context.args has amount && context.args.amount > 1000 };\n"
    'forbid(principal, action, resource) when { context.args has to && context.args.to like "*@partner.io" };\n'
)
DENIED_DECIMAL = (
    'calling `transfer` is denied (for User::"anonymous"): policy `big-transfers` could not be '
    "evaluated for it: type error: expected long, got decimal"
)
DENIED_SET = (
    'calling `email` is denied (for User::"anonymous"): policy `policy 3 of policy.cedar` could not be '
    "evaluated for it: type error: expected string, got set"
)
UNHOLDABLE = (
    'calling `transfer` is not permitted (for User::"anonymous"): `context.args.amount` is 0.123456, '
    "which Cedar cannot hold: a decimal has at most 4 digits after the point"
)


def test_a_forbid_that_cannot_be_evaluated_denies_naming_the_policy_and_cedars_error():
    result = checked(
        'transfer(amount: 5000.5)\nemail(to: ["a@partner.io", "b@example.com"])\n'
        'transfer(amount: 5000)\ntransfer(amount: 5)\nemail(to: "a@example.com")',
        AMOUNTS,
        registry=None,
    )
    assert [(step, message) for step, message, *_ in denials(result)] == [
        ("1", DENIED_DECIMAL),
        ("2", DENIED_SET),
        ("3", 'calling `transfer` is forbidden by policy `big-transfers` (for User::"anonymous")'),
    ]
    decision = next(iter(result.policy.decisions.values()))
    assert not decision.allowed and [(rule.name, error) for rule, error in decision.failed] == [
        ("big-transfers", "type error: expected long, got decimal")
    ]
    assert "cannot be evaluated for a call denies it" in result.diagnostics[0].hints[0]


def test_a_permit_that_cannot_be_evaluated_denies_too_whatever_else_permits():
    text = (
        ALLOW_ALL + '@id("small-only")\npermit(principal, action, resource) when { context.args has n && context.args.n < 10 };'
    )
    decision = decide(policy_from_text(text, Path("policy.cedar")), 'User::"a"', Tool("t"), {"n": "ten"}, step="1", in_loop=False)
    assert not decision.allowed and [rule.name for rule in decision.policies] == ["small-only"]


def test_several_policies_that_cannot_be_evaluated_are_all_named():
    text = ALLOW_ALL + (
        '@id("a")\nforbid(principal, action, resource) when { context.args has x && context.args.x > 1 };\n'
        '@id("b")\nforbid(principal, action, resource) when { context.args has x && context.args.x like "y" };'
    )
    result = checked("t(x: [1])", text, registry=None)
    assert [message for _, message, *_ in denials(result)] == [
        'calling `t` is denied (for User::"anonymous"): policies `a` and `b` could not be evaluated for it: '
        "`a`: type error: expected long, got set; `b`: type error: expected string, got set"
    ]


def test_a_value_cedar_cannot_hold_is_denied_for_that_reason():
    result = checked("transfer(amount: 0.123456)", AMOUNTS, registry=None)
    assert [message for _, message, *_ in denials(result)] == [UNHOLDABLE]
    assert not any("no policy" in hint for hint in result.diagnostics[0].hints)


def test_the_batch_decides_as_one_call_at_a_time_would():
    from planc.passes.policy.decide import Ask, decide_all

    policy = policy_from_text(AMOUNTS, Path("policy.cedar"))
    asks = [
        Ask(REGISTRY.tools["close_incident"], {"id": "x"}, "1", False),
        Ask(Tool("transfer"), {"amount": 5000.5}, "2", True),
        Ask(Tool("transfer"), {"amount": 0.123456}, "3", False),
        Ask(Tool("close_incident"), {"id": "y"}, "4", False, ("note",)),  # another tool of the same name
        Ask(Tool("email"), {"to": "a@partner.io"}, "5/do.1", True),
    ]
    alone = [
        decide(policy, 'User::"a"', ask.tool, ask.args, step=ask.step, in_loop=ask.in_loop, dynamic=ask.dynamic) for ask in asks
    ]
    assert decide_all(policy, 'User::"a"', asks) == alone
    assert [decision.allowed for decision in alone] == [True, False, False, True, False]
    assert decide_all(policy, 'User::"a"', []) == []


SPY_TOOLS = """
import json, os

def source(kind):
    return {"amount": {"decimal": 5000.5, "fine": 0.123456, "small": 5}[kind]}

def transfer(amount):
    with open(os.environ["PLANC_TEST_CALLS"], "a") as log:
        log.write(json.dumps({"tool": "transfer", "amount": amount}) + "\\n")
    return {"sent": amount}
"""
SPY_TOML = """
policy = "policy.cedar"

[tools.source]
provider = "python:{module}:source"
params = {{ kind = {{ type = "string" }} }}
returns = {{ type = "object", properties = {{ amount = {{ type = "number" }} }} }}
effects = {{ read_only = true }}

[tools.transfer]
provider = "python:{module}:transfer"
params = {{ amount = {{ type = "number" }} }}
"""


@pytest.fixture
def spied(tmp_path, monkeypatch):
    """A project whose `transfer` appends each call to calls.jsonl, under the AMOUNTS policy."""
    from tool_project import tool_project

    with tool_project(tmp_path, "spytools", SPY_TOOLS, SPY_TOML, {"policy.cedar": AMOUNTS, "calls.jsonl": ""}):
        monkeypatch.setenv("PLANC_TEST_CALLS", str(tmp_path / "calls.jsonl"))
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def test_check_and_run_refuse_a_literal_the_policy_cannot_evaluate(spied):
    (spied / "plan.plan").write_text("transfer(amount: 5000.5)\n", encoding="utf-8")
    check = invoke("check", "--format", "line", "plan.plan")
    assert check.exit_code == 1 and check.output == f"plan.plan:1:1: E400 {DENIED_DECIMAL}\n"
    run = invoke("run", "plan.plan")
    assert run.exit_code == 1 and DENIED_DECIMAL in run.output and "Traceback" not in run.output
    assert (spied / "calls.jsonl").read_text() == ""


@pytest.mark.parametrize("kind, message", [("decimal", DENIED_DECIMAL), ("fine", UNHOLDABLE)])
def test_run_refuses_a_run_time_value_the_policy_cannot_judge_before_the_call(spied, kind, message):
    (spied / "plan.plan").write_text(f'source(kind: "{kind}")\ntransfer(amount: $1.amount)\n', encoding="utf-8")
    assert invoke("check", "plan.plan").exit_code == 0  # the amount is only known at run time
    run = invoke("run", "plan.plan")
    assert run.exit_code == 1 and "Traceback" not in run.output
    assert f"step 2: {message}" in run.output
    assert (spied / "calls.jsonl").read_text() == ""


def test_run_calls_the_tool_when_the_policy_can_judge_the_value(spied):
    (spied / "plan.plan").write_text('source(kind: "small")\ntransfer(amount: $1.amount)\n', encoding="utf-8")
    assert invoke("run", "plan.plan").exit_code == 0
    assert [json.loads(line) for line in (spied / "calls.jsonl").read_text().splitlines()] == [{"tool": "transfer", "amount": 5}]


def test_the_real_planc_process_refuses_with_no_traceback(spied):
    from cli import planc_completed

    (spied / "plan.plan").write_text('source(kind: "decimal")\ntransfer(amount: $1.amount)\n', encoding="utf-8")
    done = planc_completed("run", "plan.plan", cwd=spied)
    assert done.returncode == 1 and DENIED_DECIMAL in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert (spied / "calls.jsonl").read_text() == ""


# --- loading ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("permit(principal, action, resource);\n\nforbid(principal,\n  action resource);", 4, "unexpected token `resource`"),
        ("// one\npermit(principal, action, resource)\n  when { context.x = 1 };", 2, "'=' is not a valid operator"),
        (
            "permit(principal, action, resource);\nforbid(principal, action, resource)\n  when { resource.destructve };",
            2,
            "attribute `destructve` on entity type `Tool` not found",
        ),
        ('permit(principal, action == Action::"run", resource);', 1, 'unrecognized action `Action::"run"`'),
        (
            'permit(principal, action, resource);\n\n\nforbid(principal, action, resource == Tool::"email")\n'
            '  unless { context.args.to like "*@example.com" };',
            4,
            "test `context.args has to` before reading it",
        ),
        ("permit(principal == ?principal, action, resource);", 1, "a template"),
    ],
)
def test_a_bad_policy_file_names_its_line(text, line, message):
    with pytest.raises(PolicyError) as raised:
        policy_from_text(text, Path("policy.cedar"))
    assert raised.value.line == line and message in raised.value.message


# --- the command -----------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with a planc.toml (naming policy.cedar), the policy and a plan; the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "planc.toml").write_text('policy = "policy.cedar"\n' + TOOLS, encoding="utf-8")
    (tmp_path / "policy.cedar").write_text(NO_DESTRUCTIVE, encoding="utf-8")
    (tmp_path / "plan.plan").write_text(PLAN, encoding="utf-8")
    return tmp_path


def test_check_applies_the_policy_planc_toml_names(project):
    result = invoke("check", "--format", "line", "plan.plan")
    assert result.exit_code == 1
    assert result.output == (
        'plan.plan:3:1: E400 calling `close_incident` is forbidden by policy `no-destructive` (for User::"anonymous")\n'
    )


def test_the_policy_of_planc_toml_is_found_from_its_folder(project, monkeypatch):
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    assert invoke("check", "--format", "line", "../plan.plan").exit_code == 1


def test_the_policy_option_wins_over_planc_toml(project):
    (project / "open.cedar").write_text(ALLOW_ALL, encoding="utf-8")
    result = invoke("check", "--policy", "open.cedar", "plan.plan")
    assert result.exit_code == 0, result.output


def test_the_principal_option(project):
    (project / "alice.cedar").write_text('permit(principal == User::"alice", action, resource);', encoding="utf-8")
    assert invoke("check", "--policy", "alice.cedar", "plan.plan").exit_code == 1
    assert invoke("check", "--policy", "alice.cedar", "--principal", 'User::"alice"', "plan.plan").exit_code == 0
    bad = invoke("check", "--principal", "alice", "plan.plan")
    assert bad.exit_code == 2 and "is not a Cedar entity" in bad.output


def test_a_malformed_policy_is_a_clean_usage_error_with_the_line(project):
    (project / "policy.cedar").write_text(
        "permit(principal, action, resource);\n\nforbid(principal\n  action);\n", encoding="utf-8"
    )
    result = invoke("check", "plan.plan")
    assert result.exit_code == 2
    assert result.output == f"Error: {project / 'policy.cedar'}:4: unexpected token `action`\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)
    missing = invoke("check", "--policy", "nowhere.cedar", "plan.plan")
    assert missing.exit_code == 2 and "nowhere.cedar: cannot read it" in missing.output


def test_policy_explain_table(project):
    result = invoke("policy", "explain", "plan.plan")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert 'policy.cedar for User::"anonymous"' in lines[0]
    row = next(line for line in lines if "close_incident" in line)
    assert "deny" in row and "forbid" in row and "no-destructive" in row
    assert "allow" in next(line for line in lines if "│ search" in line)


def test_policy_explain_json(project):
    result = invoke("policy", "explain", "--format", "json", "--principal", 'User::"bob"', "plan.plan")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["principal"] == 'User::"bob"' and data["policy"].endswith("policy.cedar")
    assert [(s["step"], s["tool"], s["allowed"]) for s in data["steps"]] == [
        ("1", "search", True),
        ("2", "summarize", True),
        ("3", "close_incident", False),
    ]
    close = data["steps"][2]
    assert close["decided_by"] == [{"id": "no-destructive", "effect": "forbid", "line": 2}]
    assert close["request"]["context"] == {
        "args": {"id": "INC-1"},
        "dynamic": [],
        "step": "3",
        "in_loop": False,
        "sources": {"id": []},
        "labels": [],
        "control": [],
        "chosen_by": {"id": []},
        "unchosen_labels": [],
        "one_bit": False,
    }
    assert data["steps"][1]["request"]["context"]["dynamic"] == ["items"]


def test_policy_explain_needs_a_policy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.plan").write_text(PLAN, encoding="utf-8")
    result = invoke("policy", "explain", "plan.plan")
    assert result.exit_code == 2 and "no policy" in result.output


def test_the_embedded_example_policy_denies_its_close_stale_plan():
    config = str(ROOT / "examples" / "incidents" / "planc.toml")
    denied = invoke("check", "--config", config, "--format", "line", str(ROOT / "examples" / "incidents" / "close_stale.plan"))
    assert denied.exit_code == 1
    assert [line.split(" ", 2)[1] for line in denied.output.splitlines()] == ["E400", "E400"]
    assert "no-destructive" in denied.output and "email-own-domain" in denied.output
    assert invoke("check", "--config", config, str(ROOT / "examples" / "incidents" / "triage.plan")).exit_code == 0


# --- docs/policy.md --------------------------------------------------------------------------

POLICY_DOC = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")


def test_every_policy_in_the_guide_loads():
    import re
    import tomllib

    blocks = re.findall(r"```cedar\n(.*?)```", POLICY_DOC, re.DOTALL)
    assert len(blocks) == 6
    # The multi-tenant policy reads what the guide's `[principals]` declares.
    [declared] = [
        tomllib.loads(block)["principals"]
        for block in re.findall(r"```toml\n(.*?)```", POLICY_DOC, re.DOTALL)
        if "[principals" in block
    ]
    principals = [
        {"uid": uid, "attributes": entry.get("attributes", {}), "groups": entry.get("groups", [])}
        for uid, entry in declared.items()
    ]
    for block in blocks:
        assert policy_from_text(block, Path("policy.cedar"), principals).rules
    example = (ROOT / "examples" / "incidents" / "policy.cedar").read_text(encoding="utf-8")

    def rules(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//")]

    assert rules(blocks[0]) == rules(example)


def test_the_request_in_the_guide_is_the_one_the_pass_makes():
    import re

    shown = json.loads(re.search(r"```json\n(.*?)```", POLICY_DOC, re.DOTALL)[1])
    plan = 'search(query: "disk")\nsearch(query: "full")\nemail(to: "{$1[0].owner}", subject: "Disk full")'
    assert requests(checked(plan, ALLOW_ALL))["3"] == shown
