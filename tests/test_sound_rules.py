"""Attacks on the two things a policy may let untrusted data decide: which of the user's own items a
call uses (`context.chosen_by`), and whether a call the user wrote in full runs, once
(`context.one_bit`); and on the records a plan builds, whose fields keep their own labels.

The project is test_flow.py's inbox assistant (`read_inbox` is anyone's mail; `contacts` is the
user's own list; `pay` may destroy), with `remind`, declared to destroy nothing. The policy lets a
recipient chosen among the user's contacts through, and a call decided by one yes or no; every
attack below is refused by `planc check` (exit 1, no call made, no run recorded) or makes only the
calls the rule allows, each counted by the spy tools.
"""

from __future__ import annotations

import pytest
from model_server import model_server  # noqa: F401  (the fixture)
from test_attacks import calls, statuses
from test_attacks_propagation import agent_project  # noqa: F401  (the fixture: this module's project, with a model)
from test_flow import FILES, TOML, TOOLS, checked, ran
from tool_project import spied_project

RULES_TOOLS = (
    TOOLS
    + """

def remind(to, text):
    _called(f"remind {to} {text}")
    return {"reminded": to}
"""
)

RULES_TOML = (
    TOML
    + """
[tools.remind]
provider = "python:{module}:remind"
params = {{ to = {{ type = "string" }}, text = {{ type = "string" }} }}
effects = {{ read_only = false, destructive = false, open_world = true }}
labels = []

[plans.nudge]
file = "nudge.plan"
"""
)

POLICY = """
@id("recipients-from-the-user")
forbid(principal, action, resource) when
  { (context.sources has to && context.sources.to.contains("untrusted") &&
     !(context.chosen_by has to && context.chosen_by.to.contains("untrusted"))) ||
    (context.sources has recipient && context.sources.recipient.contains("untrusted") &&
     !(context.chosen_by has recipient && context.chosen_by.recipient.contains("untrusted"))) };

@id("no-untrusted-words")
forbid(principal, action, resource) when { context.unchosen_labels.contains("untrusted") && !resource.read_only };

@id("untrusted-decides-nothing")
forbid(principal, action, resource) when { context.control.contains("untrusted") && !context.one_bit && !resource.read_only };

permit(principal, action, resource);
"""

CHOOSE_BY_SENDER = "read_inbox()\ncontacts() |> filter(where: email == $1[0].sender) |> pick = take(count: 1)\n"


FILES_TOO = {**FILES, "policy.cedar": POLICY, "nudge.plan": 'remind(to: "alice@example.com", text: "nudge")\n'}


@pytest.fixture
def project(tmp_path, monkeypatch):
    with spied_project(tmp_path, monkeypatch, "rulestools", RULES_TOOLS, RULES_TOML, FILES_TOO):
        yield tmp_path


def refused(project, text: str, rule: str) -> None:
    """`text` is refused at check for `rule`, and `planc run` makes no call and records no run."""
    code, errors = checked(project, text)
    assert code == 1 and errors and all(error["code"] == "E400" for error in errors), errors
    assert any(rule in error["message"] for error in errors), errors
    result = ran(project, text)
    assert result.exit_code == 1 and "E400" in result.output
    assert calls(project) == [] and statuses(project) == []


def test_the_mail_chooses_which_contact_is_reminded_and_no_one_else(project):
    """The sender of the first mail picks one of the user's contacts: the reminder goes to that
    contact's address as the contact list holds it, never to an address the mail wrote."""
    text = CHOOSE_BY_SENDER + 'remind(to: $pick[0].email, text: "see you")\n'
    assert checked(project, text) == (0, [])
    result = ran(project, text)
    assert result.exit_code == 0, result.output
    assert calls(project) == ["read_inbox", "contacts", "remind bob@example.com see you"]
    assert statuses(project) == ["ok"]


def test_an_attacker_who_picks_among_contacts_reaches_only_a_contact(project):
    """The mail's sender is the attacker's to write: the condition keeps every contact that is not
    the sender, so the attacker chose alice. The address is still the contact list's."""
    text = CHOOSE_BY_SENDER.replace("==", "!=") + 'remind(to: $pick[0].email, text: "see you")\n'
    result = ran(project, text)
    assert result.exit_code == 0, result.output
    assert calls(project) == ["read_inbox", "contacts", "remind alice@example.com see you"]


def test_a_choice_never_lets_a_destructive_call_through(project):
    """`pay` may destroy: a payee chosen on the mail's words is the mail's, whatever the policy says
    of choices."""
    refused(project, CHOOSE_BY_SENDER + "pay(recipient: $pick[0].iban, amount: 5)\n", "recipients-from-the-user")


def test_words_of_the_mail_are_no_choice(project):
    """The chosen contact's address is a choice; the mail's subject written beside it is the mail's
    own words."""
    text = CHOOSE_BY_SENDER + 'remind(to: $pick[0].email, text: "{$1[0].subject}")\n'
    refused(project, text, "no-untrusted-words")


def test_a_list_the_mail_wrote_is_no_choice_among_the_users_items(project):
    """Picking one of the mail's own items (its IBANs) by a condition on the mail chooses among the
    attacker's values: the item carries the mail's labels as they are."""
    text = 'read_inbox() |> filter(where: urgent) |> pick = take(count: 1)\nremind(to: $pick[0].sender, text: "hi")\n'
    refused(project, text, "recipients-from-the-user")


def test_one_yes_or_no_may_decide_a_call_the_user_wrote_in_full(project):
    text = 'read_inbox()\ndecide(when: $1[0].urgent, then: { remind(to: "alice@example.com", text: "urgent mail") })\n'
    assert checked(project, text) == (0, [])
    result = ran(project, text)
    assert result.exit_code == 0, result.output
    assert calls(project) == ["read_inbox", "remind alice@example.com urgent mail"]
    assert statuses(project) == ["ok"]


def test_a_yes_or_no_per_mail_is_as_many_bits_as_there_are_mails(project):
    """Inside a loop over the mail, the mail decides how many reminders are sent: refused."""
    block = '{ decide(when: item.urgent, then: { remind(to: "alice@example.com", text: "urgent") }) }'
    refused(project, f"read_inbox() |> map(do: {block})\n", "untrusted-decides-nothing")


def test_a_yes_or_no_with_a_value_of_the_mail_in_the_call_is_more_than_one_bit(project):
    text = 'read_inbox()\ndecide(when: $1[0].urgent, then: { remind(to: "alice@example.com", text: "{$1[0].amount}") })\n'
    refused(project, text, "untrusted-decides-nothing")


def test_a_choice_that_decides_a_call_is_what_decided_it(project):
    """A chosen contact used as a condition decides whether the call runs: the control carries the
    mail's label itself (no choice there), so only the one-bit rule may let it through, and a value
    chosen in the call's arguments takes that away."""
    decided = CHOOSE_BY_SENDER + 'decide(when: $pick[0].name == "bob", then: { remind(to: "{$pick[0].email}", text: "hi") })\n'
    refused(project, decided, "untrusted-decides-nothing")
    literal = decided.replace('"{$pick[0].email}"', '"alice@example.com"')
    result = ran(project, literal)
    assert result.exit_code == 0, result.output
    assert calls(project) == ["read_inbox", "contacts", "remind alice@example.com hi"]


ROWS = (
    "read_inbox()\n"
    'contacts() |> rows = map(do: { reshape(value: {email: item.email, note: "{$1[0].subject}"}) })\n'
    'sort(over: $rows, field: "note") |> pick = take(count: 1)\n'
)


def test_a_record_the_plan_built_keeps_each_fields_labels_through_a_map_and_a_sort(project):
    """Each row pairs a contact's address with the mail's words: sorting the rows by the words is a
    choice among the contacts, and the address read out of the chosen row is still the contact's."""
    text = ROWS + 'remind(to: $pick[0].email, text: "hi")\n'
    assert checked(project, text) == (0, [])
    result = ran(project, text)
    assert result.exit_code == 0, result.output
    assert calls(project) == ["read_inbox", "contacts", "remind alice@example.com hi"]


def test_the_mails_words_in_a_record_stay_the_mails(project):
    refused(project, ROWS + 'remind(to: "alice@example.com", text: $pick[0].note)\n', "no-untrusted-words")
    refused(project, ROWS + 'remind(to: $pick[0].note, text: "hi")\n', "recipients-from-the-user")


NUDGES = 'decide(when: $1.length > 1, then: { agent(prompt: "Nudge Alice", tools: ["plan__nudge"], output_schema: {type: "object"}) })\n'


def test_a_model_may_repeat_a_call_so_what_it_makes_is_never_one_bit(agent_project, model_server):
    """The mail decides once whether the agent runs; the agent then calls the declared plan `nudge`
    (a reminder the plan wrote in full) as often as it likes, so each call it makes is more than one
    yes or no: refused before the first, the run failed. Decided by the user's contacts instead, both
    reminders are made."""
    for number in (1, 2):
        model_server.call("plan__nudge", {}, id=f"call_{number}")
    model_server.reply("{}")
    assert checked(agent_project, "read_inbox()\n" + NUDGES) == (0, [])
    result = ran(agent_project, "read_inbox()\n" + NUDGES)
    assert result.exit_code == 1 and "untrusted-decides-nothing" in result.output, result.output
    assert calls(agent_project) == ["read_inbox"] and statuses(agent_project) == ["failed"]


def test_a_model_decided_by_the_users_data_makes_its_calls(agent_project, model_server):
    for number in (1, 2):
        model_server.call("plan__nudge", {}, id=f"call_{number}")
    model_server.reply("{}")
    result = ran(agent_project, "contacts()\n" + NUDGES)
    assert result.exit_code == 0, result.output
    assert calls(agent_project) == ["contacts", "remind alice@example.com nudge", "remind alice@example.com nudge"]
    assert statuses(agent_project) == ["ok"]
