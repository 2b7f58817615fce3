"""Provenance labels: the names of where a value came from, and how they combine.

A label set is a frozenset of label names, interned, so that the same set is the same object
wherever it travels and a union of two sets already seen costs a dictionary look-up. Every
value of a run shares its step's set; nothing is copied per value.

A tool's results carry its declared `labels` (`untrusted` when it declares none: only a
declaration makes a tool trusted). A `returns` schema may label single parts of a result with
`x-labels`: reading `$2.subject` carries the labels of `subject` and of every node on the way to
it; reading `$2` whole carries every label in its schema. `LabelView` is a set of labels with the
schema of the value they belong to, so that reading into the value reads into its labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

UNTRUSTED = "untrusted"  # content others can write
SECRET = "secret"  # redacted wherever planc writes it
X_LABELS = "x-labels"  # the key of a schema node that labels that part of a result

NO_LABELS: frozenset[str] = frozenset()
_interned: dict[frozenset, frozenset] = {NO_LABELS: NO_LABELS}
_unions: dict[tuple[int, int], frozenset] = {}


def label_set(names: Iterable[str]) -> frozenset[str]:
    """The interned set of `names`.

    >>> label_set(["pii", "untrusted"]) is label_set(("untrusted", "pii"))
    True
    """
    found = frozenset(names)
    return _interned.setdefault(found, found)


UNTRUSTED_ONLY = label_set([UNTRUSTED])


def union(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """`a | b`, interned; the same object when one holds the other.

    >>> union(label_set(["a"]), NO_LABELS) is label_set(["a"])
    True
    """
    if b is a or not b or b <= a:
        return a
    if not a or a <= b:
        return b
    key = (id(a), id(b))
    found = _unions.get(key)
    if found is None:
        found = _unions[key] = label_set(a | b)
    return found


def union_all(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    joined = NO_LABELS
    for labels in sets:
        joined = union(joined, labels)
    return joined


def node_labels(schema) -> frozenset[str]:
    """The `x-labels` a schema node itself declares."""
    if not isinstance(schema, Mapping):
        return NO_LABELS
    found = schema.get(X_LABELS)
    return label_set(found) if found else NO_LABELS


_subtrees: dict[int, tuple[object, frozenset]] = {}


def subtree_labels(schema) -> frozenset[str]:
    """Every `x-labels` in `schema`, at any depth: what reading the whole value carries.

    >>> subtree_labels({"type": "object", "properties": {"iban": {}, "subject": {"x-labels": ["untrusted"]}}})
    frozenset({'untrusted'})
    """
    if not isinstance(schema, Mapping):
        return NO_LABELS
    kept = _subtrees.get(id(schema))
    if kept is not None and kept[0] is schema:
        return kept[1]
    found = node_labels(schema)
    for key, part in schema.items():
        if key in ("properties", "patternProperties", "$defs", "definitions"):
            parts = part.values() if isinstance(part, Mapping) else ()
        elif key in ("items", "additionalProperties", "not", "contains"):
            parts = [part]
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            parts = part if isinstance(part, list) else ()
        else:
            continue
        for inner in parts:
            found = union(found, subtree_labels(inner))
    _subtrees[id(schema)] = (schema, found)  # the schema kept, so that its id stays its own
    return found


def _field_schema(schema, name: str):
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and name in properties:
        return properties[name]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _item_schema(schema):
    if not isinstance(schema, Mapping):
        return None
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None


@attrs.frozen
class LabelView:
    """The labels of a value: `labels` for all of it, and `schema`'s `x-labels` for its parts.

    >>> view = LabelView(NO_LABELS, {"properties": {"iban": {}, "subject": {"x-labels": ["untrusted"]}}})
    >>> sorted(view.field("iban").whole()), sorted(view.field("subject").whole()), sorted(view.whole())
    ([], ['untrusted'], ['untrusted'])
    """

    labels: frozenset[str] = NO_LABELS
    schema: Mapping | None = None

    def whole(self) -> frozenset[str]:
        """What the value carries when it is used as it is."""
        return union(self.labels, subtree_labels(self.schema)) if self.schema is not None else self.labels

    def field(self, name: str) -> LabelView:
        """The labels of `.name` of the value. `.length` of a list carries the list's own labels and not its
        items' parts: which items there are is the list's to say, what a field of one says is not.

        >>> mails = LabelView(frozenset({"private"}), {"type": "array", "items": {"properties": {
        ...     "sender": {}, "body": {"x-labels": ["untrusted"]}}}})
        >>> sorted(mails.field("length").whole()), sorted(mails.whole())
        (['private'], ['private', 'untrusted'])
        """
        inner = _field_schema(self.schema, name)
        if inner is None:
            return LabelView(union(self.labels, node_labels(self.schema)) if name == "length" else self.whole())
        return LabelView(union(self.labels, node_labels(inner)), inner)

    def item(self) -> LabelView:
        """The labels of an item of the value, a list."""
        inner = _item_schema(self.schema)
        if inner is None:
            return LabelView(self.whole())
        return LabelView(union(self.labels, node_labels(inner)), inner)

    def read(self, accessors) -> LabelView:
        """The labels of the value read through `accessors` (the syntax's `Field` and `Index`)."""
        view = self
        for accessor in accessors:
            view = view.field(accessor.name) if hasattr(accessor, "name") else view.item()
        return view

    def adding(self, labels: frozenset[str]) -> LabelView:
        return self if not labels or labels <= self.labels else LabelView(union(self.labels, labels), self.schema)


def view_of(labels: frozenset[str], schema: Mapping | None = None) -> LabelView:
    """The view of a value carrying `labels`, whose parts `schema` may label."""
    if schema is not None and not subtree_labels(schema):
        schema = None  # nothing in it labels a part: the labels are the whole's
    return LabelView(labels, schema)


REDACTED = "planc/redacted"  # the key of what a value labelled `secret` is written as


def redacted(value) -> dict:
    """What planc writes of a value labelled `secret`: its length (as compact JSON) and a hash, never itself.

    >>> redacted("hunter2")
    {'planc/redacted': {'length': 9, 'sha256': '4ddbb67bf993867e13253c146a339ed3b33ea5b895543569278e99d5b3c2b7d5'}}
    """
    import hashlib
    import json

    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str)
    return {REDACTED: {"length": len(text), "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}}


def is_redacted(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and REDACTED in value


def secret_arguments(arguments, sources) -> dict:
    """`arguments` with each one whose labels (`sources`) say `secret` redacted."""
    if not any(SECRET in labels for labels in sources.values()):
        return dict(arguments)
    return {name: redacted(value) if SECRET in sources.get(name, NO_LABELS) else value
            for name, value in arguments.items()}
