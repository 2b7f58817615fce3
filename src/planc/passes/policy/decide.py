"""Decide one call to a tool: the Cedar request it makes, and what the policy says about it.

`planc check` asks for every step with the literal arguments (the others are named in
`context.dynamic`); the interpreter asks again before every dispatch with the real values.
Both go through `decide`, so a policy means the same thing before and during a run.

Planc fails closed where Cedar does not: Cedar skips a policy it cannot evaluate for a request
(`context.args.amount > 1000` when the amount is a decimal), so a `forbid` that errors would
silently allow. Here any policy that cannot be evaluated denies the call, and says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

import attrs

from planc.passes.policy.load import Policy, Rule
from planc.registry.tool import Tool

ACTION = 'Action::"call"'
LONG = range(-(2**63), 2**63)
# Record keys that Cedar's JSON reads as an entity, an extension value or an expression.
ESCAPES = frozenset({"__entity", "__extn", "__expr"})
# How Cedar reports a policy it could not evaluate for a request.
EVALUATION_ERROR = re.compile(r"error while evaluating policy `(policy\d+)`: (.*)", re.DOTALL)


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


def decide(policy: Policy, principal: str, tool: Tool, args: Mapping, *, step: str, in_loop: bool,
           dynamic: Iterable[str] = ()) -> Decision:
    """Whether `principal` may call `tool` with `args` at step path `step`.

    `dynamic` names the arguments whose values are only known at run time (absent from `args`).

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
    import cedarpy

    context = {"args": dict(args), "dynamic": sorted(dynamic), "step": step, "in_loop": in_loop}
    request = {"principal": principal, "action": ACTION, "resource": f"Tool::{json.dumps(tool.name)}", "context": context}
    try:
        cedar_args = cedar_value(context["args"])
    except ValueError as error:
        return Decision(False, (), (), request, problem=str(error))
    entity = {"uid": {"type": "Tool", "id": tool.name}, "attrs": tool_attributes(tool), "parents": []}
    answer = cedarpy.is_authorized({**request, "context": {**context, "args": cedar_args}}, policy.policy_set, [entity])
    return _decision(answer, request, policy)


def _decision(answer, request: Mapping, policy: Policy) -> Decision:
    """What Cedar's `answer` to `request` means, failing closed."""
    import cedarpy

    cedar_errors = answer.diagnostics.errors
    if answer.decision is cedarpy.Decision.NoDecision:  # Cedar could not read the request (a malformed principal)
        return Decision(False, (), (), request, problem="; ".join(cedar_errors))
    rules = policy.rules
    errors = tuple(re.sub(r"policy `(policy\d+)`", lambda m: f"policy `{rules[m[1]].name if m[1] in rules else m[1]}`", error)
                   for error in cedar_errors)
    failed = []
    for error in cedar_errors:
        found = EVALUATION_ERROR.fullmatch(error)
        if found is None or found[1] not in rules:  # an error planc cannot tie to a policy: still a refusal
            return Decision(False, (), errors, request, problem="; ".join(errors))
        failed.append((rules[found[1]], found[2]))
    if failed:
        return Decision(False, tuple(rule for rule, _ in failed), errors, request, failed=tuple(failed))
    deciding = tuple(rules[policy_id] for policy_id in answer.diagnostics.reasons if policy_id in rules)
    return Decision(answer.allowed, deciding, errors, request)


def tool_attributes(tool: Tool) -> dict:
    """The attributes of the `Tool` entity a policy reads as `resource.NAME`.

    As in MCP's annotations, `destructive` and `idempotent` are about tools that change
    something: a read-only tool is neither destructive nor anything but idempotent.
    """
    effects = tool.effects
    read_only = effects.read_only
    return {"read_only": read_only, "destructive": effects.destructive and not read_only,
            "idempotent": effects.idempotent or read_only, "open_world": effects.open_world,
            "server": tool.server or ""}


def cedar_value(value, where: str = "context.args"):
    """`value` (JSON) as Cedar's JSON reads it: a list is a set, `null` is absent, a fraction a decimal.

    A value Cedar cannot hold is a ValueError, so that the call is refused rather than judged
    without it.

    >>> cedar_value({"to": "a@example.com", "cc": None, "ratio": 0.5, "ids": [1, 2]})
    {'to': 'a@example.com', 'ratio': {'__extn': {'fn': 'decimal', 'arg': '0.5000'}}, 'ids': [1, 2]}
    >>> cedar_value({"ratio": 0.12345})
    Traceback (most recent call last):
    ValueError: `context.args.ratio` is 0.12345, which Cedar cannot hold: a decimal has at most 4 digits after the point
    """
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if value in LONG:
            return value
        raise ValueError(f"`{where}` is {value}, which Cedar cannot hold: integers are 64-bit")
    if isinstance(value, float):
        if value.is_integer() and int(value) in LONG:
            return int(value)
        if round(value, 4) != value or abs(value) >= 2**63 / 10**4:
            raise ValueError(f"`{where}` is {value}, which Cedar cannot hold: a decimal has at most 4 digits after the point")
        return {"__extn": {"fn": "decimal", "arg": f"{value:.4f}"}}
    if isinstance(value, list):
        return [cedar_value(item, f"{where}[{index}]") for index, item in enumerate(value) if item is not None]
    if isinstance(value, dict):
        escapes = ESCAPES.intersection(value)
        if escapes:
            raise ValueError(f"`{where}` has the key `{min(escapes)}`, which Cedar reads as an entity or extension, not a field")
        return {key: cedar_value(item, f"{where}.{key}") for key, item in value.items() if item is not None}
    raise ValueError(f"`{where}` is not a JSON value: {type(value).__name__}")
