"""Load a Cedar policy file for plans, or say exactly what is wrong with it (`file:line: message`).

A file is parsed by Cedar and validated against the shape of a plan's requests
(`REQUEST_SCHEMA`), so a misspelt attribute (`resource.destructve`) or action is
an error when the file is loaded, not a `forbid` that silently never applies.
Cedar's messages carry no position; the line is found here, by splitting the
text into its policies (Cedar numbers them `policy0`, `policy1`... in text order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import attrs

from planc.passes.policy.cedar_json import PRINCIPAL
from planc.passes.policy.principals import cedar_entities, entity_types, merged, principal_data

if TYPE_CHECKING:
    from cedarpy import PolicySet

    from planc.registry.loading.registry import Registry

# What a policy can read about a call. `args` and `sources` are declared with no
# attributes: their keys differ from tool to tool, so a policy must test `context.args has NAME`
# before it reads one, and an unguarded read is reported when the file is loaded.
REQUEST_SCHEMA = {
    "": {
        "entityTypes": {
            "User": {},
            "Tool": {
                "shape": {
                    "type": "Record",
                    "attributes": {
                        "read_only": {"type": "Boolean"},
                        "destructive": {"type": "Boolean"},
                        "idempotent": {"type": "Boolean"},
                        "open_world": {"type": "Boolean"},
                        "server": {"type": "String"},
                    },
                }
            },
        },
        "actions": {
            "call": {
                "appliesTo": {
                    "principalTypes": ["User"],
                    "resourceTypes": ["Tool"],
                    "context": {
                        "type": "Record",
                        "attributes": {
                            "args": {"type": "Record", "attributes": {}},
                            "dynamic": {"type": "Set", "element": {"type": "String"}},
                            "step": {"type": "String"},
                            "in_loop": {"type": "Boolean"},
                            # Each argument's labels (argument name -> set of labels), all of them together, and the labels
                            # of what decides that the call runs.
                            "sources": {"type": "Record", "attributes": {}},
                            "labels": {"type": "Set", "element": {"type": "String"}},
                            "control": {"type": "Set", "element": {"type": "String"}},
                            # Each argument's labels that reached it only as a choice among trusted items, the
                            # arguments' labels but those, and whether all others' content decides is one yes or no.
                            "chosen_by": {"type": "Record", "attributes": {}},
                            "unchosen_labels": {"type": "Set", "element": {"type": "String"}},
                            "one_bit": {"type": "Boolean"},
                        },
                    },
                }
            }
        },
    }
}
DEFAULT_PRINCIPAL = 'User::"anonymous"'
ARGUMENT_READ = re.compile(r"context\s*\.\s*args\s*\.\s*(\w+)")
UNGUARDED = re.compile(r"attribute `(args|sources|chosen_by)\.(\w+)` in context")
# The messages of errors in Cedar's tokens (the others are about a whole policy).
TOKEN_ERRORS = ("unexpected token", "invalid token")


class PolicyError(Exception):
    """A policy file (or principal) that cannot be used: `file:line: message`."""

    def __init__(self, path: Path | None, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        super().__init__(where + message)


def principal_of(given: str | None, registry: Registry | None) -> str:
    """Who a plan runs for: `given`, else the `principal` its planc.toml declares, else anonymous."""
    if given is not None:
        return given
    declared = registry.principal if registry is not None else None
    return declared if declared is not None else DEFAULT_PRINCIPAL


@attrs.frozen
class Rule:
    """One policy of the file: what decisions name it by, and what it does."""

    name: str  # its `@id`, else its position: "policy 2 of policy.cedar"
    effect: str  # "permit" or "forbid"
    reason: str | None  # its `@reason` annotation: why, in words, for the plan's author
    line: int
    reads: frozenset[str] = frozenset()  # the arguments it reads (`context.args.NAME`): what a denial points at


@attrs.frozen
class Policy:
    """A loaded policy file: Cedar's parsed policy set, and each policy by Cedar's id."""

    path: Path
    policy_set: PolicySet = attrs.field(repr=False)  # parsed once and reused
    rules: Mapping[str, Rule] = attrs.field(factory=dict)  # "policy0" -> Rule
    text: str = attrs.field(default="", repr=False)  # the file's text (a stored plan keeps its hash)
    # The principals with attributes and groups it was validated with (`principals.principal_data`'s form, as
    # a run records them), and the same as Cedar's entities, which every request is judged with.
    principals: tuple[Mapping, ...] = ()
    entities: tuple[str, ...] = attrs.field(default=(), repr=False)


def with_principals(policy: Policy, principals: Sequence[Mapping]) -> Policy:
    """`policy` judging with `principals` too (`principal_data`'s form; one of a uid it already has replaces it):
    validated again, as the shapes of the principals are part of what it reads. A PolicyError when it does not fit."""
    if not principals:
        return policy
    return policy_from_text(policy.text, policy.path, merged(policy.principals, principals))


def load_policy(path: str | Path, principals: Sequence[Mapping] = ()) -> Policy:
    """The Policy in the file at `path`, judging with `principals` (`principals.principal_data`'s form)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyError(path, None, f"cannot read it: {getattr(error, 'strerror', None) or error}") from None
    return policy_from_text(text, path, principals)


def policy_from_text(text: str, path: Path, principals: Sequence[Mapping] = ()) -> Policy:
    """The Policy that `text` holds, reported as if read from `path` (which need not exist), validated
    against the shape of plans' requests and of `principals` (`principals.principal_data`'s form).

    >>> policy = policy_from_text('@id("no-destructive")\\nforbid(principal, action, resource)\\n'
    ...                           '  when { resource.destructive };', Path("policy.cedar"))
    >>> policy.rules["policy0"].name
    'no-destructive'
    >>> policy_from_text('permit(principal, action, resource)\\n  when { resource.destructve };', Path("p.cedar"))
    Traceback (most recent call last):
    planc.passes.policy.load.PolicyError: p.cedar:1: attribute `destructve` on entity type `Tool` not found
    """
    import cedarpy

    starts = policy_starts(text)
    try:
        policy_set = cedarpy.PolicySet.from_str(text)
        est = json.loads(cedarpy.policies_to_json_str(text))
    except ValueError as error:
        raise PolicyError(path, _parse_error_line(text, starts, str(error)), str(error)) from None
    lines = [text.count("\n", 0, start) + 1 for start in starts]
    texts = [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)])]

    def line_of(policy_id: str) -> int | None:
        number = _position(policy_id)
        return lines[number] if number is not None and number < len(lines) else None

    templates = list(est.get("templates", {}))
    if templates:
        raise PolicyError(
            path,
            line_of(templates[0]),
            "a template (`?principal`, `?resource`) applies to nothing until it is linked; write the entity instead",
        )
    try:
        principals = tuple(
            principal_data(principal, f"principal {principal.get('uid')}" if isinstance(principal, Mapping) else "a principal")
            for principal in principals
        )
        schema, entities = request_schema(principals), cedar_entities(principals)
    except ValueError as error:
        raise PolicyError(path, None, f"the principals do not fit a policy: {error}") from None
    errors = cedarpy.validate_policies(text, schema).errors
    if errors:
        raise PolicyError(path, line_of(errors[0].policy_id), _validation_message(errors[0].error))
    rules = {}
    for policy_id, body in est.get("staticPolicies", {}).items():
        annotations = body.get("annotations", {})
        number = _position(policy_id)
        name = annotations.get("id") or f"policy {cast(int, number) + 1} of {path.name}"  # a static policy's id
        read = ARGUMENT_READ.findall(texts[number]) if number is not None and number < len(texts) else []
        rules[policy_id] = Rule(name, body["effect"], annotations.get("reason"), line_of(policy_id) or 1, frozenset(read))
    return Policy(path, policy_set, rules, text, principals, entities)


def request_schema(principals: Sequence[Mapping]) -> dict:
    """`REQUEST_SCHEMA` with the types of `principals`: their attributes, their groups, and that they may call.

    >>> request_schema([])[""]["actions"]["call"]["appliesTo"]["principalTypes"]
    ['User']
    """
    declared = entity_types(principals)
    [schema] = REQUEST_SCHEMA.values()
    applies = schema["actions"]["call"]["appliesTo"]
    callers = sorted({"User", *declared})  # a group may be who a plan runs for too
    return {
        "": {
            "entityTypes": {**schema["entityTypes"], **declared},
            "actions": {"call": {"appliesTo": {**applies, "principalTypes": callers}}},
        }
    }


def _position(policy_id: str) -> int | None:
    """Where Cedar's `policy3` is in its file: 3 (counting from 0)."""
    found = re.fullmatch(r"policy(\d+)", policy_id)
    return int(found[1]) if found else None


def _validation_message(error: str) -> str:
    message = re.sub(r"^for policy `policy\d+`, ", "", error)
    guard = UNGUARDED.search(message)
    if guard:
        message += (
            f"; a tool may have no argument `{guard[2]}`{' (or know it only at run time)' if guard[1] == 'args' else ''}: "
            f"test `context.{guard[1]} has {guard[2]}` before reading it"
        )
    return message


def check_principal(text: str) -> str:
    """`text` when it is an entity uid as Cedar writes it (`User::"alice"`), else a PolicyError."""
    if not PRINCIPAL.match(text):
        raise PolicyError(None, None, f"--principal {text!r} is not a Cedar entity like 'User::\"alice\"'")
    return text


def policy_starts(text: str) -> list[int]:
    """The offset where each policy of `text` starts (its first annotation or its effect).

    >>> policy_starts('// a comment; not a policy\\npermit(principal, action, resource == Tool::"a;b");\\n forbid(principal, action, resource);')
    [27, 80]
    """
    starts: list[int] = []
    inside = False
    for match in re.finditer(r'//[^\n]*|"(?:[^"\\]|\\.)*"?|;|\S', text):
        token = match.group()
        if token.startswith("//"):
            continue
        if not inside:
            starts.append(match.start())
        inside = token != ";"
    return starts


def _parse_error_line(text: str, starts: list[int], message: str) -> int | None:
    """The line of Cedar's parse error `message` in the first policy that fails to parse.

    Cedar reads tokens left to right, so a token it did not expect is on the first line
    where a prefix of the policy fails with the same message. Other errors (`=` for `==`)
    are found once the whole policy is read: they are reported at its first line.
    """
    import cedarpy

    ends = starts[1:] + [len(text)]
    for start, end in zip(starts, ends):
        try:
            cedarpy.PolicySet.from_str(text[start:end])
            continue
        except ValueError:
            pass
        first = text.count("\n", 0, start) + 1
        lines = text[start:end].rstrip().split("\n")
        for count in range(1, len(lines) + 1):
            try:
                cedarpy.PolicySet.from_str("\n".join(lines[:count]))
            except ValueError as error:
                if str(error) == message and (count < len(lines) or message.startswith(TOKEN_ERRORS)):
                    return first + count - 1
        return first
    return None
