"""Decide calls to tools: the Cedar request each makes, and what the policy says about it.

`planc check` asks for every step with the literal arguments (the others are named in
`context.dynamic`); the interpreter asks again before every dispatch with the real values.
Both go through `decide_all` (`decide` is one call of it), so a policy means the same thing
before and during a run.

Planc fails closed where Cedar does not: Cedar skips a policy it cannot evaluate for a request
(`context.args.amount > 1000` when the amount is a decimal), so a `forbid` that errors would
silently allow. Here any policy that cannot be evaluated denies the call, and says why.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import attrs

from planc.passes.policy.cedar_json import cedar_value, entity_uid
from planc.passes.policy.load import Policy, Rule
from planc.registry.provenance.labels import NO_LABELS, UNTRUSTED, plain, split_choices
from planc.registry.tools.tool import Tool
from planc.syntax.steps import made_by_agent

if TYPE_CHECKING:
    from cedarpy import AuthzResult, Entities

ACTION = 'Action::"call"'
ACTION_UID = {"type": "Action", "id": "call"}  # ACTION as Cedar reads it without parsing it
BATCH = 1_000  # requests per call into Cedar: enough to spread its cost, few enough that Cedar's answers stay small
# How Cedar reports a policy it could not evaluate for a request.
EVALUATION_ERROR = re.compile(r"error while evaluating policy `(policy\d+)`: (.*)", re.DOTALL)


@attrs.frozen
class Ask:
    """One call to put to the policy: `tool` with `args` at step path `step`; `dynamic` names the
    arguments whose values are only known at run time (absent from `args`); `sources` holds each
    argument's labels (where its value came from), `control` the labels of what decided that the call runs."""

    tool: Tool
    args: Mapping
    step: str
    in_loop: bool
    dynamic: Iterable[str] = ()
    sources: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    control: frozenset[str] = frozenset()

    def without_labels(self, argument: str | None = None) -> Ask:
        """The same call with the labels of `argument` (of everything, when None; of the control, when
        "") taken away: what a refusal is blamed on is the labels whose removal allows the call."""
        if argument is None:
            return attrs.evolve(self, sources={name: frozenset() for name in self.sources}, control=frozenset())
        if argument == "":
            return attrs.evolve(self, control=frozenset())
        return attrs.evolve(self, sources={**self.sources, argument: frozenset()})


@attrs.frozen
class Decision:
    """What the policy said about one call."""

    allowed: bool
    # The permits that allowed it; or what denied it: the forbids that matched it, or the policies
    # that could not be evaluated for it (`failed`). None: no permit matched, or a `problem`.
    policies: tuple[Rule, ...]
    errors: tuple[str, ...]  # Cedar's words for each policy that could not be evaluated (they deny the call)
    request: Mapping  # principal, action, resource and context, as the policy saw them
    problem: str | None = None  # why the call could not be put to the policy at all (it is then denied)
    failed: tuple[tuple[Rule, str], ...] = ()  # each policy that could not be evaluated, with Cedar's error


def decide(
    policy: Policy,
    principal: str,
    tool: Tool,
    args: Mapping,
    *,
    step: str,
    in_loop: bool,
    dynamic: Iterable[str] = (),
    sources: Mapping[str, frozenset[str]] | None = None,
    control: frozenset[str] = frozenset(),
) -> Decision:
    """Whether `principal` may call `tool` with `args` at step path `step`.

    `dynamic` names the arguments whose values are only known at run time (absent from `args`);
    `sources` gives each argument's labels, `control` those of what decided that the call runs.

    >>> from pathlib import Path
    >>> from planc.passes.policy.load import policy_from_text
    >>> policy = policy_from_text('permit(principal, action, resource) when { resource.read_only };', Path("p.cedar"))
    >>> decide(policy, 'User::"alice"', Tool("search"), {"query": "x"}, step="1", in_loop=False).allowed
    False
    >>> decision = decide(policy, 'User::"alice"', Tool("map", effects=attrs.evolve(Tool("map").effects, read_only=True)),
    ...                   {}, step="2", in_loop=False, dynamic=["over"])
    >>> decision.allowed, [rule.name for rule in decision.policies], decision.request["context"]["dynamic"]
    (True, ['policy 1 of p.cedar'], ['over'])
    """
    return decide_all(policy, principal, [Ask(tool, args, step, in_loop, dynamic, sources or {}, control)])[0]


def blamed_labels(policy: Policy, principal: str, ask: Ask) -> str | None:
    """Which labels the policy's denial of `ask` is owed to: the name of the argument whose labels, taken
    away, let the call through ("" for its control labels); None when it is denied whatever its labels.

    >>> from pathlib import Path
    >>> from planc.passes.policy.load import policy_from_text
    >>> policy = policy_from_text('permit(principal, action, resource);\\nforbid(principal, action, resource) when '
    ...     '{ context.sources has to && context.sources.to.contains("untrusted") };', Path("p.cedar"))
    >>> ask = Ask(Tool("send"), {}, "2", False, ["to"], {"to": frozenset({"untrusted"}), "text": frozenset()})
    >>> blamed_labels(policy, 'User::"a"', ask)
    'to'
    """
    blamable = [name for name, labels in ask.sources.items() if labels] + ([""] if ask.control else [])
    if not blamable:
        return None
    decisions = decide_all(policy, principal, [ask.without_labels(), *(ask.without_labels(name) for name in blamable)])
    if not decisions[0].allowed:
        return None
    return next((name for name, decision in zip(blamable, decisions[1:]) if decision.allowed), blamable[0])


def decide_all(policy: Policy, principal: str, asks: Sequence[Ask]) -> list[Decision]:
    """The decision on each of `asks`, in order: one Cedar request each, all sent in one batch.

    A batch because most of a request's cost is the call into Cedar, not Cedar's decision.

    >>> from pathlib import Path
    >>> from planc.passes.policy.load import policy_from_text
    >>> policy = policy_from_text('permit(principal, action, resource);\\n@id("big")\\nforbid(principal, action, resource)'
    ...                           ' when { context.args has amount && context.args.amount > 1000 };', Path("p.cedar"))
    >>> [(d.allowed, [rule.name for rule in d.policies]) for d in decide_all(policy, 'User::"a"', [
    ...     Ask(Tool("pay"), {"amount": 5}, "1", False), Ask(Tool("pay"), {"amount": 5000}, "2", False),
    ...     Ask(Tool("pay"), {"amount": 5000.5}, "3", False)])]
    [(True, ['policy 1 of p.cedar']), (False, ['big']), (False, ['big'])]
    """
    import cedarpy

    decisions: list[Decision | None] = []
    requests: list[dict] = []  # each call's request as the policy sees it (and `planc policy explain` shows it)
    batches: list[tuple[dict, list[tuple[int, dict]]]] = []  # (tool name -> its entity, [(index, Cedar's request)])
    entities_of: dict[int, str] = {}  # id(tool) -> its entity: a plan calls the same tools again and again
    for index, ask in enumerate(asks):
        context = {
            "args": dict(ask.args),
            "dynamic": sorted(ask.dynamic),
            "step": ask.step,
            "in_loop": ask.in_loop,
            **labels_context(ask),
        }
        name = ask.tool.name
        request = {"principal": principal, "action": ACTION, "resource": f"Tool::{json.dumps(name)}", "context": context}
        requests.append(request)
        try:
            cedar_args = cedar_value(context["args"])
        except ValueError as error:
            decisions.append(Decision(False, (), (), request, problem=str(error)))
            continue
        decisions.append(None)
        # The same request with uids Cedar need not parse again: most of a request's cost is Cedar's reading it.
        cedar_request = {
            "principal": entity_uid(principal),
            "action": ACTION_UID,
            "resource": {"type": "Tool", "id": name},
            "context": {**context, "args": cedar_args},
        }
        entity = entities_of.get(id(ask.tool)) or entities_of.setdefault(
            id(ask.tool), _entity(name, tuple(tool_attributes(ask.tool).items()))
        )
        # A batch holds one entity per tool name: two tools of one name (from two registries) go to two.
        batch = next((batch for batch in batches if batch[0].get(name, entity) == entity), None)
        if batch is None:
            batches.append(batch := ({}, []))
        batch[0][name] = entity
        batch[1].append((index, cedar_request))
    for entities, calls in batches:
        known = _entities(tuple(sorted(entities.values())) + policy.entities)
        for start in range(0, len(calls), BATCH):
            chunk = calls[start : start + BATCH]
            answers = cedarpy.is_authorized_batch([request for _, request in chunk], policy.policy_set, known)
            for (index, _), answer in zip(chunk, answers):
                decisions[index] = _decision(answer, requests[index], policy)
    return cast(list[Decision], decisions)  # each None was one of a batch, decided there


def labels_context(ask: Ask) -> dict:
    """What a policy sees of where the values of `ask` came from.

    `sources` (each argument's labels), `labels` (all of them) and `control` (what decided that the call
    runs) hold every label, however it came: a label a choice among trusted items carried (`chosen by
    untrusted`, result_labels.py) is the label there, so a policy that reads only them allows nothing
    more for it. Two keys let a policy allow what is sound, and nothing else:

    - `chosen_by`: each argument's labels that reached it only as a choice among trusted items (the
      value is one of them, each what it was); `unchosen_labels`: the labels of the arguments but
      those. A choice is never reported for a destructive call: there every label is its own.
    - `one_bit`: content others can write decided whether the call runs (its control), and nothing
      else of it: every argument is free of `untrusted`, and nothing repeats it (no loop, no model
      calling it), so all it tells is one yes or no.

    >>> from planc.registry.provenance.labels import label_set
    >>> email = Tool("email", effects=attrs.evolve(Tool("email").effects, destructive=False))
    >>> ask = Ask(email, {}, "3", False, ["subject"], {"subject": label_set(["chosen by untrusted"])})
    >>> context = labels_context(ask)
    >>> context["sources"], context["chosen_by"], context["unchosen_labels"], context["one_bit"]
    ({'subject': ['untrusted']}, {'subject': ['untrusted']}, [], False)
    >>> labels_context(attrs.evolve(ask, tool=Tool("email")))["chosen_by"]  # a destructive call: no choice
    {'subject': []}
    >>> labels_context(Ask(email, {"subject": "hi"}, "3/then.1", False, (), {}, label_set(["untrusted"])))["one_bit"]
    True
    """
    destructive = ask.tool.effects.normalised().destructive
    sources: dict[str, list[str]] = {}
    chosen: dict[str, list[str]] = {}
    unchosen: set[str] = set()
    for name, labels in ask.sources.items():
        every, by_choice = split_choices(labels)
        if destructive:
            by_choice = NO_LABELS
        sources[name], chosen[name] = sorted(every), sorted(by_choice)
        unchosen |= every - by_choice
    control = plain(ask.control)
    one_bit = (
        UNTRUSTED in control
        and not ask.in_loop
        and not made_by_agent(ask.step)  # a model may make it any number of times
        and not any(UNTRUSTED in labels for labels in sources.values())
    )
    return {
        "sources": sources,
        "labels": sorted(set().union(*sources.values())),
        "control": sorted(control),
        "chosen_by": chosen,
        "unchosen_labels": sorted(unchosen),
        "one_bit": one_bit,
    }


def _decision(answer: AuthzResult, request: Mapping, policy: Policy) -> Decision:
    """What Cedar's `answer` to `request` means, failing closed."""
    import cedarpy

    cedar_errors = answer.diagnostics.errors
    if answer.decision is cedarpy.Decision.NoDecision:  # Cedar could not read the request (a malformed principal)
        return Decision(False, (), (), request, problem="; ".join(cedar_errors))
    rules = policy.rules
    errors = tuple(
        re.sub(r"policy `(policy\d+)`", lambda m: f"policy `{rules[m[1]].name if m[1] in rules else m[1]}`", error)
        for error in cedar_errors
    )
    failed = []
    for error in cedar_errors:
        found = EVALUATION_ERROR.fullmatch(error)
        if found is None or found[1] not in rules:  # an error planc cannot tie to a policy: still a refusal
            return Decision(False, (), errors, request, problem="; ".join(errors))
        failed.append((rules[found[1]], found[2]))
    if failed:
        return Decision(False, tuple(rule for rule, _ in failed), errors, request, failed=tuple(failed))
    # In the file's order: Cedar gives them as a set, and what a refusal says is recorded byte for byte.
    deciding = tuple(
        sorted((rules[policy_id] for policy_id in answer.diagnostics.reasons if policy_id in rules), key=lambda rule: rule.line)
    )
    return Decision(answer.allowed, deciding, errors, request)


@functools.lru_cache(maxsize=4096)
def _entity(name: str, attributes: tuple[tuple[str, object], ...]) -> str:
    """The `Tool` entity `name` with `attributes` (`tool_attributes`' items) as Cedar's JSON, made once per tool."""
    return json.dumps({"uid": {"type": "Tool", "id": name}, "attrs": dict(attributes), "parents": []})


@functools.lru_cache(maxsize=256)
def _entities(entities: tuple[str, ...]) -> Entities:
    """The entities of a batch (its tools, the policy's principals), parsed by Cedar once per set of them (at
    run time, once per tool)."""
    import cedarpy

    return cedarpy.Entities.from_json_str("[" + ",".join(entities) + "]")


def tool_attributes(tool: Tool) -> dict:
    """The attributes of the `Tool` entity a policy reads as `resource.NAME`.

    As in MCP's annotations, `destructive` and `idempotent` are about tools that change
    something: a read-only tool is neither destructive nor anything but idempotent.
    """
    effects = tool.effects.normalised()
    return {
        "read_only": effects.read_only,
        "destructive": effects.destructive,
        "idempotent": effects.idempotent,
        "open_world": effects.open_world,
        "server": tool.server or "",
    }
