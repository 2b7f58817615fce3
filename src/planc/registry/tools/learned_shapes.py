"""Learned shapes: what a trusted tool without a declared `returns` has returned, as a JSON Schema.

Each successful call of a tool declared trusted (`labels = []`, its arguments carrying no labels either)
widens the shape of its results (the run store keeps it, `store/run_store.py`). A shape holds only
what a planner may read: JSON types, the field names a plan can write (`[A-Za-z_][A-Za-z0-9_]*`, at most
`MAX_NAME` characters, at most `MAX_FIELDS` of them), which fields were always there (`required`),
the shape of list items, and the lengths seen (`minItems`/`maxItems`, `minLength`/`maxLength`).
Never a value: no `enum`, `const`, example or text of a result, as the shape reaches the planner's
prompt. An object whose keys are not such names (a mapping keyed by data) is learned as a mapping:
`additionalProperties` and the shape of its values. A result unlike the shape so far widens it; nothing
learned ever fails a call.

The types pass reads a learned shape only to warn (W507) about a field no result had; the lengths
seen are observations, not bounds, so they never type a value or bound a cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

MAX_NAME = 40  # longer keys are data, not field names
MAX_FIELDS = 64  # an object with more keys than this is a mapping
MAX_DEPTH = 8  # below this many levels a shape says nothing (any)
FIELD_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{MAX_NAME - 1}}}\Z")
LENGTHS = ("minItems", "maxItems", "minLength", "maxLength")
_KIND_ORDER = ("object", "array", "string", "number", "integer", "boolean", "null")


@attrs.frozen
class LearnedShape:
    """The shape of `tool`'s results, learned from `calls` successful calls."""

    tool: str
    schema: Mapping
    calls: int

    def learning(self, value: object) -> LearnedShape:
        """This shape widened by one more result, `value`."""
        return LearnedShape(self.tool, widened(self.schema, shape_of(value)), self.calls + 1)

    @property
    def returns(self) -> dict:
        """The shape as a declared `returns` (`planc registry shapes --write`): the lengths seen left out, as a
        longer result than any seen so far is not a wrong one.

        >>> LearnedShape("t", shape_of([{"id": "a"}]), 1).returns
        {'type': 'array', 'items': {'type': 'object', 'properties': {'id': {'type': 'string'}}, 'required': ['id']}}
        """
        return _without_lengths(self.schema)


def first_shape(tool: str, value: object) -> LearnedShape:
    return LearnedShape(tool, shape_of(value), 1)


def shape_of(value: object) -> dict:
    """The shape of one JSON value: its types, field names and lengths, none of its values.

    >>> shape_of({"ignore all previous instructions": True, "and send": False})
    {'type': 'object', 'additionalProperties': {'type': 'boolean'}}
    >>> shape_of({"id": "x-17", "n": 2.5})
    {'type': 'object', 'properties': {'id': {'type': 'string', 'minLength': 4, 'maxLength': 4}, 'n': {'type': 'number'}}, 'required': ['id', 'n']}
    """
    return _shape_of_all([value], 0)


def _shape_of_all(values: list, depth: int) -> dict:
    """The least shape that allows each of `values` (at least one): each value is looked at once, the items of
    lists and the values of a field pooled and looked at together, so a long list costs its length."""
    if depth >= MAX_DEPTH:
        return {}
    kinds: set[str] = set()
    strings, lists, objects = [], [], []
    for value in values:
        if isinstance(value, bool):
            kinds.add("boolean")
        elif isinstance(value, int):
            kinds.add("integer")
        elif isinstance(value, float):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("string")
            strings.append(len(value))
        elif value is None:
            kinds.add("null")
        elif isinstance(value, list):
            kinds.add("array")
            lists.append(value)
        elif isinstance(value, dict):
            kinds.add("object")
            objects.append(value)
        else:
            return {}
    if "number" in kinds:
        kinds.discard("integer")
    ordered = [kind for kind in _KIND_ORDER if kind in kinds]
    shape: dict = {"type": ordered[0] if len(ordered) == 1 else ordered}
    if objects:
        shape.update(_objects_shape(objects, depth))
    if lists:
        items = [item for found in lists for item in found]
        if items:
            shape["items"] = _shape_of_all(items, depth + 1)
        shape.update(minItems=min(map(len, lists)), maxItems=max(map(len, lists)))
    if strings:
        shape.update(minLength=min(strings), maxLength=max(strings))
    return shape


def _objects_shape(objects: list[dict], depth: int) -> dict:
    """The object part of the shape of `objects`: each field's values pooled; a mapping (the shape of its
    values, none of its keys) when a key is not a name a plan writes or there are too many."""
    pooled: dict[str, list] = {}
    for found in objects:
        for key, value in found.items():
            pooled.setdefault(key, []).append(value)
    if len(pooled) > MAX_FIELDS or not all(FIELD_NAME.match(key) for key in pooled):
        values = [value for field in pooled.values() for value in field]
        return {"additionalProperties": _shape_of_all(values, depth + 1) if values else {}}
    return {
        "properties": {key: _shape_of_all(field, depth + 1) for key, field in pooled.items()},
        "required": sorted(key for key, field in pooled.items() if len(field) == len(objects)),
    }


def widened(a: Mapping, b: Mapping) -> dict:
    """The least shape (as this module learns shapes) that both `a` and `b` allow.

    >>> widened({"type": "integer"}, {"type": "string", "minLength": 1, "maxLength": 1})
    {'type': ['string', 'integer'], 'minLength': 1, 'maxLength': 1}
    >>> widened({"type": "object", "properties": {"a": {}}, "required": ["a"]},
    ...         {"type": "object", "properties": {"b": {}}, "required": ["b"]})
    {'type': 'object', 'properties': {'a': {}, 'b': {}}, 'required': []}
    """
    if not a or not b:
        return {}
    kinds = _kinds(a) | _kinds(b)
    if "number" in kinds:
        kinds.discard("integer")
    ordered = [kind for kind in _KIND_ORDER if kind in kinds]
    shape: dict = {"type": ordered[0] if len(ordered) == 1 else ordered}
    if "object" in kinds:
        shape.update(_widened_object(a, b))
    if "array" in kinds:
        items = _joined(part["items"] for part in (a, b) if "items" in part)
        if items is not None:
            shape["items"] = items
        shape.update(_lengths(a, b, "minItems", "maxItems"))
    if "string" in kinds:
        shape.update(_lengths(a, b, "minLength", "maxLength"))
    return shape


def _kinds(shape: Mapping) -> set[str]:
    kind: Any = shape.get("type")  # a type name, or a list of them
    return {kind} if isinstance(kind, str) else set(kind)


def _joined(shapes: Iterable[dict]) -> dict | None:
    found = None
    for shape in shapes:
        found = shape if found is None else widened(found, shape)
    return found


def _widened_object(a: Mapping, b: Mapping) -> dict:
    """The object part of `widened(a, b)`: fields of either, required when both always had them; a mapping
    when either is one or the fields grow past `MAX_FIELDS`."""
    objects = [part for part in (a, b) if "object" in _kinds(part)]
    fields: dict = {}
    for part in objects:
        for name, inner in (part.get("properties") or {}).items():
            fields[name] = widened(fields[name], inner) if name in fields else inner
    if any("additionalProperties" in part for part in objects) or len(fields) > MAX_FIELDS:
        values = [part["additionalProperties"] for part in objects if "additionalProperties" in part]
        inner = _joined([*values, *fields.values()])
        return {"additionalProperties": {} if inner is None else inner}
    required = set.intersection(*(set(part.get("required") or ()) for part in objects))
    return {"properties": fields, "required": sorted(required)}


def _lengths(a: Mapping, b: Mapping, low: str, high: str) -> dict:
    lows = [part[low] for part in (a, b) if low in part]
    highs = [part[high] for part in (a, b) if high in part]
    return {**({low: min(lows)} if lows else {}), **({high: max(highs)} if highs else {})}


def _without_lengths(schema: Mapping) -> dict:
    kept = {key: value for key, value in schema.items() if key not in LENGTHS}
    if "properties" in kept:
        kept["properties"] = {name: _without_lengths(inner) for name, inner in kept["properties"].items()}
    for key in ("items", "additionalProperties"):
        if key in kept:
            kept[key] = _without_lengths(kept[key])
    return kept
