"""Principals with attributes and groups: the Cedar entities a policy reads as `principal.org` and
`principal in Group::"staff"`.

A principal is written as planc.toml's `[principals]` holds it and `--principal-json` takes it:
`{"uid": 'User::"alice"', "attributes": {"org": "acme"}, "groups": ['Group::"staff"']}`. Cedar has no
schema of its own for them here, so the shape a policy is validated against is read from the principals
themselves: an attribute every principal of a type has is required, one some lack is optional (a policy
tests `principal has NAME` first), and two principals that give it different types are an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from planc.passes.policy.cedar_json import PRINCIPAL, cedar_value, entity_uid

KEYS = frozenset({"uid", "attributes", "groups"})


def principal_data(value, where: str = "the principal") -> dict:
    """`value` as a principal (`uid`, `attributes`, `groups`), every part checked; a ValueError says what is wrong.

    >>> principal_data({"uid": 'User::"alice"', "attributes": {"org": "acme"}})
    {'uid': 'User::"alice"', 'attributes': {'org': 'acme'}, 'groups': []}
    >>> principal_data({"uid": "alice"})
    Traceback (most recent call last):
    ValueError: the principal's `uid` must be a Cedar entity like 'User::"alice"', found 'alice'
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object with `uid`, `attributes` and `groups`, found {value!r}")
    unknown = sorted(set(value) - KEYS)
    if unknown:
        raise ValueError(f"{where} has `{unknown[0]}`, which is not one of `uid`, `attributes`, `groups`")
    uid, attributes, groups = value.get("uid"), value.get("attributes", {}), value.get("groups", [])
    if not isinstance(attributes, Mapping):
        raise ValueError(f"{where}'s `attributes` must be an object, found {attributes!r}")
    if not isinstance(groups, list):
        raise ValueError(f"{where}'s `groups` must be a list of entities, found {groups!r}")
    for name, entity in (("uid", uid), *((f"groups[{n}]", group) for n, group in enumerate(groups))):
        if not isinstance(entity, str) or not PRINCIPAL.match(entity):
            raise ValueError(f"{where}'s `{name}` must be a Cedar entity like 'User::\"alice\"', found {entity!r}")
        if "::" in _type(entity):
            raise ValueError(f"{where}'s `{name}` {entity} has a namespace: principals with attributes are of "
                             f"plain types (`User`, `Group`)")
        if _type(entity) == "Tool":
            raise ValueError(f"{where}'s `{name}` {entity} is a `Tool`, the type of what a plan calls")
    cedar_value(dict(attributes), f"{where}'s attributes")  # a value Cedar cannot hold is refused now
    return {"uid": uid, "attributes": {name: item for name, item in attributes.items() if item is not None},
            "groups": list(groups)}


def merged(*principals: Sequence[Mapping]) -> tuple[dict, ...]:
    """Every principal of `principals`, one per uid: a later one replaces an earlier one (a run's own, planc.toml's)."""
    by_uid: dict[str, dict] = {}
    for group in principals:
        for principal in group:
            by_uid[json.dumps(entity_uid(principal["uid"]))] = dict(principal)
    return tuple(by_uid.values())


def cedar_entities(principals: Sequence[Mapping]) -> tuple[str, ...]:
    """The entities of `principals` as Cedar's JSON, each a text; a group no principal declares is an entity too.

    >>> cedar_entities([{"uid": 'User::"a"', "attributes": {"org": "x"}, "groups": ['Group::"g"']}])
    ('{"uid": {"type": "User", "id": "a"}, "attrs": {"org": "x"}, "parents": [{"type": "Group", "id": "g"}]}', \
'{"uid": {"type": "Group", "id": "g"}, "attrs": {}, "parents": []}')
    """
    entities = {principal["uid"]: {"uid": entity_uid(principal["uid"]), "attrs": cedar_value(principal["attributes"]),
                                   "parents": [entity_uid(group) for group in principal["groups"]]}
                for principal in principals}
    for principal in principals:
        for group in principal["groups"]:
            entities.setdefault(group, {"uid": entity_uid(group), "attrs": {}, "parents": []})
    return tuple(json.dumps(entity) for entity in entities.values())


def entity_types(principals: Sequence[Mapping]) -> dict:
    """The shape of each type of `principals` (and of their groups) as Cedar's schema declares it.

    >>> entity_types([{"uid": 'User::"a"', "attributes": {"org": "x", "admin": True}, "groups": ['Group::"g"']},
    ...               {"uid": 'User::"b"', "attributes": {"org": "y"}, "groups": []}])["User"]
    {'memberOfTypes': ['Group'], 'shape': {'type': 'Record', 'attributes': {'admin': {'type': 'Boolean', 'required': False}, \
'org': {'type': 'String', 'required': True}}}}
    """
    seen: dict[str, list[Mapping]] = {}
    parents: dict[str, set[str]] = {}
    for principal in principals:
        seen.setdefault(_type(principal["uid"]), []).append(principal["attributes"])
        parents.setdefault(_type(principal["uid"]), set()).update(_type(group) for group in principal["groups"])
        for group in principal["groups"]:
            seen.setdefault(_type(group), [])
    types = {}
    for kind, attribute_sets in seen.items():
        attributes: dict[str, dict] = {}
        for name in sorted({name for attrs in attribute_sets for name in attrs}):
            given = {json.dumps(_schema_type(attrs[name], f"`{name}` of a `{kind}`"), sort_keys=True)
                     for attrs in attribute_sets if name in attrs}
            if len(given) > 1:
                raise ValueError(f"the principals of type `{kind}` give `{name}` different types: "
                                 f"{' and '.join(sorted(given))}")
            attributes[name] = {**json.loads(given.pop()), "required": all(name in attrs for attrs in attribute_sets)}
        types[kind] = {"memberOfTypes": sorted(parents.get(kind, ())),
                       "shape": {"type": "Record", "attributes": attributes}}
    return types


def _schema_type(value, what: str) -> dict:
    """The Cedar schema type of the JSON `value` (after `cedar_value`)."""
    if isinstance(value, bool):
        return {"type": "Boolean"}
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return {"type": "Long"}
    if isinstance(value, float):
        return {"type": "Extension", "name": "decimal"}
    if isinstance(value, str):
        return {"type": "String"}
    if isinstance(value, list):
        elements = {json.dumps(_schema_type(item, what), sort_keys=True) for item in value if item is not None}
        if len(elements) > 1:
            raise ValueError(f"{what} is a list of values of different types, which Cedar cannot hold as a set")
        return {"type": "Set", "element": json.loads(elements.pop()) if elements else {"type": "String"}}
    if isinstance(value, Mapping):
        return {"type": "Record", "attributes": {key: _schema_type(item, what) for key, item in value.items()
                                                 if item is not None}}
    raise ValueError(f"{what} is not a JSON value: {type(value).__name__}")


def _type(entity: str) -> str:
    """The type of the entity uid `entity`: `User` for `User::"alice"`."""
    uid = entity_uid(entity)
    if isinstance(uid, str):  # written like a uid, yet not one Cedar reads
        raise ValueError(f"{entity} is not an entity Cedar can read")
    return uid["type"]
