"""Static types are JSON Schemas: what values a schema allows, what a path into it reads.

`None` is the unknown type, `any`: it passes every check (gradual typing). So
is every schema planc does not follow (`$ref`, `if`/`then`, `not`): the types
pass only reports what a schema states plainly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

BOOLEAN = {"type": "boolean"}
INTEGER = {"type": "integer"}
STRING = {"type": "string"}
LIST = {"type": "array"}
LENGTH = {"type": "integer", "minimum": 0}
SCALARS = {bool: BOOLEAN, int: INTEGER, float: {"type": "number"}, str: STRING, type(None): {"type": "null"}}
NULL = frozenset({"null"})


@attrs.frozen
class Missing:
    """An accessor that reads nothing from a value of some type: what the value is, and its fields."""

    what: str  # "an object", "a list", "a string", ...
    fields: tuple[str, ...] = ()


def kinds(schema: object) -> frozenset[str] | None:
    """The JSON types a value of `schema` may have ("number" includes "integer"); None: any.

    >>> sorted(kinds({"type": ["number", "null"]}))
    ['integer', 'null', 'number']
    >>> kinds({"description": "anything"}) is None
    True
    """
    if schema is False:
        return frozenset()
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        found = {declared}
    elif isinstance(declared, list):
        found = set(declared)
    elif "const" in schema:
        found = {value_kind(schema["const"])}
    elif isinstance(schema.get("enum"), list):
        found = {value_kind(value) for value in schema["enum"]}
    elif isinstance(schema.get("anyOf") or schema.get("oneOf"), list):
        found = set()
        for branch in schema.get("anyOf") or schema["oneOf"]:
            more = kinds(branch)
            if more is None:
                return None
            found |= more
    elif "properties" in schema or "required" in schema or "additionalProperties" in schema:
        found = {"object"}
    elif "items" in schema or "prefixItems" in schema:
        found = {"array"}
    else:
        return None
    if "number" in found:
        found.add("integer")
    return frozenset(found)


def value_kind(value: object) -> str:
    """The JSON type of a Python value read from JSON or a plan."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def json_equal(a: object, b: object) -> bool:
    """Equality of two JSON scalars: `1 == 1.0`, but `true` is not `1`."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def read(schema: object, accessor_name: str | int) -> Mapping | Missing | None:
    """The type that `.name` (a str) or `[index]` (an int) reads from a value of `schema`.

    None when unknown; a `Missing` when a value of `schema` has nothing there.

    >>> read({"type": "object", "properties": {"id": {"type": "string"}}}, "id")
    {'type': 'string'}
    >>> read({"type": "object", "properties": {"id": {"type": "string"}}}, "title")
    Missing(what='an object', fields=('id',))
    >>> read({"type": "array", "items": {"type": "object"}}, "length")
    {'type': 'integer', 'minimum': 0}
    """
    if not isinstance(schema, Mapping):
        return None
    branches = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if isinstance(branches, list) and "type" not in schema and "properties" not in schema:
        return _read_branches(branches, accessor_name)
    found = kinds(schema)
    if found is None:
        return None
    known = found - NULL
    if not known:
        return Missing("null")
    if isinstance(accessor_name, int):
        if "array" not in known:
            return Missing(_kind_words(known))
        return item_at(schema, accessor_name)
    if accessor_name == "length" and known & {"array", "string"}:
        return LENGTH if "object" not in known else None
    if "object" not in known:
        return Missing(_kind_words(known))
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    if accessor_name in properties:
        return properties[accessor_name]
    for pattern, value in (schema.get("patternProperties") or {}).items():
        if re.search(pattern, accessor_name):
            return value
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    # Declared properties close an object for reading: a field nobody declared is most likely
    # a typo. `additionalProperties: true` opens it again.
    if extra is False or (extra is None and properties and known == {"object"}):
        return Missing("an object", tuple(properties))
    return None


def _read_branches(branches: list, accessor_name: str | int) -> Mapping | Missing | None:
    found: list[Mapping | None] = []
    missing: list[Missing] = []
    for branch in branches:
        if kinds(branch) == NULL:
            continue
        result = read(branch, accessor_name)
        if isinstance(result, Missing):
            missing.append(result)
        else:
            found.append(result)
    if found:
        return found[0] if len(found) == 1 else (None if None in found else {"anyOf": found})
    if missing:
        fields = tuple(dict.fromkeys(field for result in missing for field in result.fields))
        return Missing(missing[0].what, fields)
    return None


def item_at(schema: Mapping, index: int) -> Mapping | None:
    """The type of the item at `index` of a list of `schema`."""
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None


def items_of(schema: object) -> Mapping | None:
    """The type of the items of a list of `schema`, None when unknown."""
    if isinstance(schema, Mapping) and "array" in (kinds(schema) or ()):
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    return None


def compatible(found: object, expected: object, depth: int = 0) -> bool:
    """Whether a value of type `found` may be valid for `expected` (unknown passes).

    >>> compatible({"type": "array"}, {"type": "string"})
    False
    >>> compatible({"type": "integer"}, {"type": "number", "minimum": 1})
    True
    """
    have, want = kinds(found), kinds(expected)
    if have is None or want is None:
        return True
    if not have & want:
        return False
    if have - NULL == {"array"} and want - NULL == {"array"} and depth < 8:
        return compatible(items_of(found), items_of(expected), depth + 1)
    return True


def enum_of(schema: object) -> list | None:
    """The values `schema` enumerates, when it does."""
    if isinstance(schema, Mapping) and isinstance(schema.get("enum"), list):
        return schema["enum"]
    return None


def list_of(items: list) -> dict:
    """The type of a list literal whose items have the types `items` (None: unknown); its length is known."""
    schema: dict = {"type": "array", "minItems": len(items), "maxItems": len(items)}
    if items and items[0] is not None and all(item == items[0] for item in items):
        schema["items"] = items[0]
    else:
        declared = {item.get("type") if isinstance(item, Mapping) else None for item in items}
        if len(declared) == 1 and isinstance(kind := declared.pop(), str):
            schema["items"] = {"type": kind}
    return schema


def type_of(value: object) -> dict:
    """The type of a JSON value, as a literal of it in a plan has: a run argument known before the run.

    >>> type_of({"team": "ENG", "ids": [1, 2]})["properties"]["ids"]
    {'type': 'array', 'minItems': 2, 'maxItems': 2, 'items': {'type': 'integer'}}
    """
    if isinstance(value, list):
        return list_of([type_of(item) for item in value])
    if isinstance(value, dict):
        return record_of({key: type_of(item) for key, item in value.items()})
    return {"type": value_kind(value)}


def record_of(fields: dict) -> dict:
    """The type of a record literal whose values have the types `fields` (None: unknown)."""
    return {
        "type": "object",
        "properties": {key: {} if value is None else value for key, value in fields.items()},
        "required": list(fields),
        "additionalProperties": False,
    }


KIND_WORDS = {
    "array": "a list",
    "string": "a string",
    "boolean": "a boolean",
    "object": "an object",
    "number": "a number",
    "integer": "a number",
    "null": "null",
}


def _kind_words(known: frozenset) -> str:
    return " or ".join(dict.fromkeys(KIND_WORDS.get(kind, str(kind)) for kind in sorted(known)))
