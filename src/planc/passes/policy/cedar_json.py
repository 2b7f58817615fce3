"""planc's values and entity names as Cedar's JSON reads them: what the policy's requests and entities are made of."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

LONG = range(-(2**63), 2**63)
# Record keys that Cedar's JSON reads as an entity, an extension value or an expression.
ESCAPES = frozenset({"__entity", "__extn", "__expr"})
# An entity uid as Cedar writes it: `User::"alice"`, `Org::Team::"ops"`.
PRINCIPAL = re.compile(r'\s*[A-Za-z_]\w*(\s*::\s*[A-Za-z_]\w*)*\s*::\s*"(?:[^"\\]|\\.)*"\s*\Z')


@functools.lru_cache(maxsize=64)
def entity_uid(entity: str) -> dict | str:
    """`entity` (`User::"alice"`) as the uid Cedar reads without parsing, as Cedar itself reads it; the text
    itself when it is not a plain entity uid (Cedar's answer to the request then says what is wrong).

    >>> entity_uid('User::"alice"'), entity_uid('Org::Team :: "o\\\\"ps"'), entity_uid("alice")
    ({'type': 'User', 'id': 'alice'}, {'type': 'Org::Team', 'id': 'o"ps'}, 'alice')
    """
    import cedarpy

    if not PRINCIPAL.match(entity):  # a uid and nothing else: it cannot change the policy it is read in
        return entity
    try:
        read = json.loads(cedarpy.policies_to_json_str(f"permit(principal == {entity}, action, resource);"))
    except ValueError:
        return entity
    [policy] = read["staticPolicies"].values()
    return policy["principal"]["entity"]


def cedar_value(value: object, where: str = "context.args") -> Any:
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
