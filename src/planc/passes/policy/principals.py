"""Principals with attributes and groups: the Cedar entities a policy reads as `principal.org` and
`principal in Group::"staff"`.

A caller gives one as Cedar's entity JSON (`principal_from_json`: `--principal-json`, the API's
`principal=`): `{"uid": {"type": "User", "id": "alice"}, "attrs": {"org": "acme"}, "parents":
[{"type": "Group", "id": "staff"}]}`, each entity also written as its text (`'User::"alice"'`).
planc keeps one as planc.toml's `[principals]` holds it (`principal_data`'s form, which runs record):
`{"uid": 'User::"alice"', "attributes": {"org": "acme"}, "groups": ['Group::"staff"']}`. Cedar has no
schema of its own for them here, so the shape a policy is validated against is read from the principals
themselves: an attribute every principal of a type has is required, one some lack is optional (a policy
tests `principal has NAME` first), and two principals that give it different types are an error.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence

from planc.passes.policy.cedar_json import PRINCIPAL, cedar_value, entity_uid

# Cedar's entity JSON, and planc's own names of its parts: the form planc keeps, which a caller gave before
# planc read Cedar's (accepted from a caller, with a DeprecationWarning, until planc 0.2).
CEDAR_KEYS = ("uid", "attrs", "parents")
PLANC_KEYS = {"attrs": "attributes", "parents": "groups"}


def principal_from_json(value: object, where: str = "the principal") -> dict:
    """The principal a caller gives as Cedar's entity JSON, in `principal_data`'s form; its parts under planc's
    old names (`attributes`, `groups`) are read too, with a DeprecationWarning. A ValueError says what is wrong.

    >>> principal_from_json({"uid": {"type": "User", "id": "alice"}, "attrs": {"org": "acme"},
    ...                      "parents": [{"type": "Group", "id": "staff"}]})
    {'uid': 'User::"alice"', 'attributes': {'org': 'acme'}, 'groups': ['Group::"staff"']}
    """
    if isinstance(value, Mapping) and set(PLANC_KEYS.values()).intersection(value):
        old = sorted(set(PLANC_KEYS.values()).intersection(value))
        warnings.warn(
            f"{where} gives {' and '.join(f'`{key}`' for key in old)}: planc's names before it read Cedar's "
            "entity JSON, which are `attrs` and `parents`; the old names go in planc 0.2",
            DeprecationWarning,
            stacklevel=2,
        )
    return principal_data(value, where)


def principal_data(value: object, where: str = "the principal") -> dict:
    """`value` as a principal (`uid`, `attributes`, `groups`), every part checked; a ValueError says what is wrong.
    It may be written as Cedar's entity JSON too (`uid`, `attrs`, `parents`; an entity as `{"type", "id"}`).

    >>> principal_data({"uid": 'User::"alice"', "attributes": {"org": "acme"}})
    {'uid': 'User::"alice"', 'attributes': {'org': 'acme'}, 'groups': []}
    >>> principal_data({"uid": "alice"})
    Traceback (most recent call last):
    ValueError: the principal's `uid` must be a Cedar entity like {"type": "User", "id": "alice"} or 'User::"alice"', found 'alice'
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object with `uid`, `attrs` and `parents` (Cedar's entity JSON), found {value!r}")
    for cedar, planc in PLANC_KEYS.items():
        if cedar in value and planc in value:
            raise ValueError(f"{where} gives both `{cedar}` and `{planc}`: give `{cedar}` alone")
    unknown = sorted(set(value) - {*CEDAR_KEYS, *PLANC_KEYS.values()})
    if unknown:
        raise ValueError(f"{where} has `{unknown[0]}`, which is not one of `uid`, `attrs`, `parents`")
    attributes = value.get("attrs", value.get("attributes", {}))
    groups = value.get("parents", value.get("groups", []))
    if not isinstance(attributes, Mapping):
        raise ValueError(f"{where}'s `attrs` must be an object, found {attributes!r}")
    if not isinstance(groups, list):
        raise ValueError(f"{where}'s `parents` must be a list of entities, found {groups!r}")
    uid = _entity(value.get("uid"), f"{where}'s `uid`")
    groups = [_entity(group, f"{where}'s `parents[{number}]`") for number, group in enumerate(groups)]
    cedar_value(dict(attributes), f"{where}'s attributes")  # a value Cedar cannot hold is refused now
    return {"uid": uid, "attributes": {name: item for name, item in attributes.items() if item is not None}, "groups": groups}


def _entity(entity: object, what: str) -> str:
    """The entity `entity` as its text (`User::"alice"`): given so, or as Cedar's JSON writes a uid (`{"type":
    "User", "id": "alice"}`, or that inside `{"__entity": ...}`); of a plain type that is not `Tool`."""
    if isinstance(entity, Mapping) and set(entity) == {"__entity"}:
        entity = entity["__entity"]
    if (
        isinstance(entity, Mapping)
        and set(entity) == {"type", "id"}
        and isinstance(entity["type"], str)
        and isinstance(entity["id"], str)
    ):
        entity = f"{entity['type']}::{json.dumps(entity['id'], ensure_ascii=False)}"
    if not isinstance(entity, str) or not PRINCIPAL.match(entity):
        raise ValueError(
            f'{what} must be a Cedar entity like {{"type": "User", "id": "alice"}} or \'User::"alice"\', found {entity!r}'
        )
    if "::" in _type(entity):
        raise ValueError(f"{what} {entity} has a namespace: principals with attributes are of plain types (`User`, `Group`)")
    if _type(entity) == "Tool":
        raise ValueError(f"{what} {entity} is a `Tool`, the type of what a plan calls")
    return entity


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
    entities = {
        principal["uid"]: {
            "uid": entity_uid(principal["uid"]),
            "attrs": cedar_value(principal["attributes"]),
            "parents": [entity_uid(group) for group in principal["groups"]],
        }
        for principal in principals
    }
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
            given = {
                json.dumps(_schema_type(attrs[name], f"`{name}` of a `{kind}`"), sort_keys=True)
                for attrs in attribute_sets
                if name in attrs
            }
            if len(given) > 1:
                raise ValueError(f"the principals of type `{kind}` give `{name}` different types: {' and '.join(sorted(given))}")
            attributes[name] = {**json.loads(given.pop()), "required": all(name in attrs for attrs in attribute_sets)}
        types[kind] = {"memberOfTypes": sorted(parents.get(kind, ())), "shape": {"type": "Record", "attributes": attributes}}
    return types


def _schema_type(value: object, what: str) -> dict:
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
        return {
            "type": "Record",
            "attributes": {key: _schema_type(item, what) for key, item in value.items() if item is not None},
        }
    raise ValueError(f"{what} is not a JSON value: {type(value).__name__}")


def _type(entity: str) -> str:
    """The type of the entity uid `entity`: `User` for `User::"alice"`."""
    uid = entity_uid(entity)
    if isinstance(uid, str):  # written like a uid, yet not one Cedar reads
        raise ValueError(f"{entity} is not an entity Cedar can read")
    return uid["type"]
