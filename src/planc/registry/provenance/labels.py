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

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from planc.syntax.ast import Field, Index

UNTRUSTED = "untrusted"  # content others can write
SECRET = "secret"  # written as its mark wherever planc writes it (redaction.py)
X_LABELS = "x-labels"  # the key of a schema node that labels that part of a result
# The kind of a label that reached a value only through a choice among trusted items (`chosen_by`).
CHOSEN_BY = "chosen by "

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


def node_labels(schema: object) -> frozenset[str]:
    """The `x-labels` a schema node itself declares."""
    if not isinstance(schema, Mapping):
        return NO_LABELS
    found = schema.get(X_LABELS)
    return label_set(found) if found else NO_LABELS


_subtrees: dict[tuple[int, int], tuple[object, object, frozenset]] = {}


def subtree_labels(schema: object, root: Mapping | None = None) -> frozenset[str]:
    """Every `x-labels` in `schema` at any depth, and in every node of `root` (the schema it is part
    of; none: itself) that a `$ref` in it leads to: what reading the whole value carries.

    >>> subtree_labels({"type": "object", "properties": {"iban": {}, "subject": {"x-labels": ["untrusted"]}}})
    frozenset({'untrusted'})
    >>> memo = {"$ref": "#/$defs/Memo"}
    >>> root = {"$defs": {"Memo": {"x-labels": ["untrusted"]}}, "properties": {"memo": memo}}
    >>> sorted(subtree_labels(root["properties"]["memo"], root))
    ['untrusted']
    """
    if not isinstance(schema, Mapping):
        return NO_LABELS
    root = schema if root is None else root
    key = (id(schema), id(root))
    kept = _subtrees.get(key)
    if kept is not None and kept[0] is schema and kept[1] is root:
        return kept[2]
    found = NO_LABELS
    waiting: list[object] = [schema]
    seen: set[int] = set()
    while waiting:
        node = waiting.pop()
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        found = union(found, node_labels(node))
        waiting.extend(_children(node))
        if "$ref" in node:
            target = _pointed(node["$ref"], root)
            if target is UNRESOLVED:  # not known: it may be any part of the schema
                whole = subtree_labels(root) if root is not schema else _all_labels(root)
                found = union(found, whole)
            else:
                waiting.append(target)
    _subtrees[key] = (schema, root, found)  # the schemas kept, so that their ids stay their own
    return found


def _all_labels(schema: Mapping) -> frozenset[str]:
    """Every `x-labels` in `schema`, not following any `$ref`."""
    found = NO_LABELS
    waiting: list[object] = [schema]
    while waiting:
        node = waiting.pop()
        found = union(found, node_labels(node))
        waiting.extend(_children(node))
    return found


def _children(node: object) -> list:
    """The schema nodes directly inside `node`: its properties, definitions, items and branches."""
    if not isinstance(node, Mapping):
        return []
    found: list = []
    for key, part in node.items():
        named = key in ("properties", "patternProperties", "$defs", "definitions")
        if named and isinstance(part, Mapping):
            found.extend(part.values())
        elif key in ("items", "additionalProperties", "not", "contains"):
            found.append(part)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(part, list):
            found.extend(part)
    return found


@attrs.frozen
class SchemaPart:
    """What a schema says of one value, for its labels: the `x-labels` of every node that describes
    it (the node, the targets of its `$ref`s, the branches of its `allOf`/`anyOf`/`oneOf`), and
    those nodes."""

    labels: frozenset[str]
    nodes: tuple


UNRESOLVED: Mapping = {}  # a `$ref` planc cannot follow: the value may be any part of the schema


# (id of node, id of root) -> (node, root, its SchemaPart); and the reads of a field or an item.
_parts: dict[tuple[int, int], tuple[object, object, SchemaPart]] = {}
_reads: dict[tuple[int, int, object], tuple[object, object, Mapping | None, frozenset[str]]] = {}


def schema_part(schema: Mapping, root: Mapping) -> SchemaPart:
    """The nodes of `root` that describe the value `schema` describes, and their `x-labels`: one
    walk for a whole value and for one field alike, through `$ref` (a JSON pointer into `root`:
    `#/$defs/Mail`), `allOf`, `anyOf` and `oneOf`. A `$ref` it cannot follow carries every label
    in `root`.

    >>> root = {"$defs": {"Mail": {"x-labels": ["untrusted"]}}, "anyOf": [{"$ref": "#/$defs/Mail"}]}
    >>> sorted(schema_part(root, root).labels)
    ['untrusted']
    """
    key = (id(schema), id(root))
    kept = _parts.get(key)
    if kept is not None and kept[0] is schema and kept[1] is root:
        return kept[2]
    nodes: list = []
    seen: set[int] = set()
    labels = NO_LABELS
    waiting = [schema]
    while waiting:
        node = waiting.pop()
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        labels = union(labels, node_labels(node))
        ref = node.get("$ref")
        if ref is not None:
            target = _pointed(ref, root)
            if target is UNRESOLVED:
                labels = union(labels, _all_labels(root))
            else:
                waiting.append(target)
        for combinator in ("allOf", "anyOf", "oneOf"):
            branches = node.get(combinator)
            if isinstance(branches, list):
                waiting.extend(reversed(branches))
    part = SchemaPart(labels, tuple(nodes))
    _parts[key] = (schema, root, part)
    return part


def _pointed(ref: object, root: Mapping) -> Mapping:
    """The node of `root` a local `$ref` (`#`, `#/$defs/Name`) points at, or UNRESOLVED."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return UNRESOLVED
    node: object = root
    for token in ref[1:].split("/")[1:] if ref != "#" else ():
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return UNRESOLVED
    return node if isinstance(node, Mapping) else UNRESOLVED


def _inner(schema: Mapping, root: Mapping, name: str | None) -> tuple[Mapping | None, frozenset[str]]:
    """The schema of `.name` (`None`: of an item) of the value `schema` describes, and the
    `x-labels` on the way to it: every node describing the value, and the field's or item's own.
    None when no node says."""
    key = (id(schema), id(root), name)
    kept = _reads.get(key)
    if kept is not None and kept[0] is schema and kept[1] is root:
        return kept[2], kept[3]
    part = schema_part(schema, root)
    found = []
    for node in part.nodes:
        if name is None:
            inner = node.get("items")
        else:
            properties = node.get("properties")
            inner = properties.get(name) if isinstance(properties, Mapping) else None
            if inner is None:
                inner = node.get("additionalProperties")
        if isinstance(inner, Mapping):
            found.append(inner)
    inner_schema: Mapping | None = None
    labels = NO_LABELS
    if found:
        inner_schema = found[0] if len(found) == 1 else {"allOf": found}
        labels = union(part.labels, schema_part(inner_schema, root).labels)
    _reads[key] = (schema, root, inner_schema, labels)
    return inner_schema, labels


@attrs.frozen
class LabelView:
    """The labels of a value: `labels` for all of it, and `schema`'s `x-labels` for its parts
    (`root`: the schema `schema` is part of, where its `$ref`s point; none: `schema` itself).

    >>> view = LabelView(NO_LABELS, {"properties": {"iban": {}, "subject": {"x-labels": ["untrusted"]}}})
    >>> sorted(view.field("iban").whole()), sorted(view.field("subject").whole()), sorted(view.whole())
    ([], ['untrusted'], ['untrusted'])
    """

    labels: frozenset[str] = NO_LABELS
    schema: Mapping | None = None
    root: Mapping | None = None

    def whole(self) -> frozenset[str]:
        """What the value carries when it is used as it is."""
        if self.schema is None:
            return self.labels
        return union(self.labels, subtree_labels(self.schema, self.root))

    def members(self) -> frozenset[str]:
        """The labels of which items the value (a list) holds, how many and in what order: its
        own labels and its schema node's, not those its items' parts declare. What a position or a
        count carries (an `index`, a `.length`), and what decides how often a loop over it runs."""
        if self.schema is None:
            return self.labels
        root = self.root if self.root is not None else self.schema
        return union(self.labels, schema_part(self.schema, root).labels)

    def field(self, name: str) -> LabelView:
        """The labels of `.name` of the value. `.length` of a list carries the list's own labels and not its
        items' parts: which items there are is the list's to say, what a field of one says is not.

        >>> mails = LabelView(frozenset({"private"}), {"type": "array", "items": {"properties": {
        ...     "sender": {}, "body": {"x-labels": ["untrusted"]}}}})
        >>> sorted(mails.field("length").whole()), sorted(mails.whole())
        (['private'], ['private', 'untrusted'])
        """
        if self.schema is None:
            return LabelView(self.labels)
        root = self.root if self.root is not None else self.schema
        inner, labels = _inner(self.schema, root, name)
        if inner is None:
            return LabelView(self.members() if name == "length" else self.whole())
        return LabelView(union(self.labels, labels), inner, root)

    def item(self) -> LabelView:
        """The labels of an item of the value, a list."""
        if self.schema is None:
            return LabelView(self.labels)
        root = self.root if self.root is not None else self.schema
        inner, labels = _inner(self.schema, root, None)
        if inner is None:
            return LabelView(self.whole())
        return LabelView(union(self.labels, labels), inner, root)

    def read(self, accessors: Iterable[Field | Index]) -> LabelView:
        """The labels of the value read through `accessors` (the syntax's `Field` and `Index`)."""
        view = self
        for accessor in accessors:
            view = view.field(accessor.name) if hasattr(accessor, "name") else view.item()
        return view

    def adding(self, labels: frozenset[str]) -> LabelView:
        if not labels or labels <= self.labels:
            return self
        return LabelView(union(self.labels, labels), self.schema, self.root)


def view_of(labels: frozenset[str], schema: Mapping | None = None) -> LabelView:
    """The view of a value carrying `labels`, whose parts `schema` may label."""
    if schema is not None and not subtree_labels(schema):
        schema = None  # nothing in it labels a part: the labels are the whole's
    return LabelView(labels, schema)


# What content others can write decides, and so what a choice made on it carries in a kind of its own:
# integrity alone. A choice made on a secret tells the secret, so a secret stays a secret, whatever chose.
CHOOSABLE = label_set([UNTRUSTED])
_chosen: dict[int, tuple[frozenset, frozenset]] = {}
_plain: dict[int, tuple[frozenset, frozenset, frozenset]] = {}


def chosen_by(labels: frozenset[str]) -> frozenset[str]:
    """What a value carries of `labels` when they only chose it among trusted items (a `filter`'s
    condition, a `sort`'s field): each label of `CHOOSABLE` in the kind `chosen by LABEL`, the others as
    they are. A policy sees that kind apart (`context.chosen_by`); everywhere else it is the label.

    >>> sorted(chosen_by(label_set(["private", "untrusted"])))
    ['chosen by untrusted', 'private']
    """
    kept = _chosen.get(id(labels))
    if kept is not None and kept[0] is labels:
        return kept[1]
    found = label_set(CHOSEN_BY + label if label in CHOOSABLE else label for label in labels)
    _chosen[id(labels)] = (labels, found)
    return found


def plain(labels: frozenset[str]) -> frozenset[str]:
    """`labels` with each `chosen by LABEL` read as `LABEL`: what a value carries, however it got it.

    >>> sorted(plain(label_set(["chosen by untrusted", "private"])))
    ['private', 'untrusted']
    """
    return split_choices(labels)[0]


def split_choices(labels: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(`plain(labels)`, the labels that reached the value only through a choice among trusted items),
    computed once per set.

    >>> [sorted(part) for part in split_choices(label_set(["chosen by untrusted", "private"]))]
    [['private', 'untrusted'], ['untrusted']]
    >>> split_choices(label_set(["chosen by untrusted", "untrusted"]))[1]
    frozenset()
    """
    kept = _plain.get(id(labels))
    if kept is not None and kept[0] is labels:
        return kept[1], kept[2]
    if not any(label.startswith(CHOSEN_BY) for label in labels):
        found = (labels, NO_LABELS)
    else:
        direct = {label for label in labels if not label.startswith(CHOSEN_BY)}
        by_choice = {label.removeprefix(CHOSEN_BY) for label in labels if label.startswith(CHOSEN_BY)}
        found = (label_set(direct | by_choice), label_set(by_choice - direct))
    _plain[id(labels)] = (labels, *found)
    return found


# The schemas of records and lists a plan builds (`{name: item, rating: $r}`, a `map`'s results), one object
# per shape and labels, kept for the process: the caches keyed by a schema's id stay as small as the plan, and
# a built schema's id names it for good (in the key of a schema built around it).
BUILT = "x-planc-built"  # the key marking a schema planc made for a value the plan built
_built: dict[tuple, Mapping] = {}


def _built_schema(key: tuple, make: Callable[[], Mapping]) -> Mapping:
    found = _built.get(key)
    if found is None:
        found = _built[key] = make()
    return found


def _part_schema(view: LabelView) -> tuple[tuple, Mapping]:
    """A view as the schema of one part of a built value (with its key): its own schema when planc built
    it, else one node carrying everything the view carries."""
    schema = view.schema
    if schema is not None and view.root is None and schema.get(BUILT):
        key: tuple = ("part", view.labels, id(schema))
        return key, _built_schema(key, lambda: {"allOf": [schema], X_LABELS: sorted(view.labels)})
    whole = view.whole()
    key = ("leaf", whole)
    return key, _built_schema(key, lambda: {X_LABELS: sorted(whole)} if whole else {})


def record_view(labels: frozenset[str], fields: Mapping[str, LabelView]) -> LabelView:
    """The labels of a record the plan builds: `labels` for all of it, and each field its own view, so
    that reading `.name` of it carries what `name` was built from and not what its other fields were.

    >>> built = record_view(NO_LABELS, {"name": LabelView(), "rating": LabelView(UNTRUSTED_ONLY)})
    >>> sorted(built.field("name").whole()), sorted(built.field("rating").whole()), sorted(built.whole())
    ([], ['untrusted'], ['untrusted'])
    """
    parts = {name: _part_schema(view) for name, view in fields.items()}
    if not any(subtree_labels(schema) for _, schema in parts.values()):
        return LabelView(labels)
    key = ("record", tuple((name, part_key) for name, (part_key, _) in sorted(parts.items())))
    schema = _built_schema(
        key,
        lambda: {BUILT: True, "type": "object", "properties": {name: schema for name, (_, schema) in parts.items()}},
    )
    return LabelView(labels, schema)


def list_view(labels: frozenset[str], item: LabelView) -> LabelView:
    """The labels of a list the plan builds (a `map`'s results): `labels` for which items it has, how many
    and in what order, and `item` for each of them.

    >>> rows = list_view(NO_LABELS, record_view(NO_LABELS, {"name": LabelView(), "rating": LabelView(UNTRUSTED_ONLY)}))
    >>> sorted(rows.item().field("name").whole()), sorted(rows.members()), sorted(rows.whole())
    ([], [], ['untrusted'])
    """
    part_key, part = _part_schema(item)
    if not subtree_labels(part):
        return LabelView(labels)
    key = ("list", part_key)
    schema = _built_schema(key, lambda: {BUILT: True, "type": "array", "items": part})
    return LabelView(labels, schema)


def merged(views: Iterable[LabelView]) -> LabelView:
    """One view for values each of `views` describes (a `map`'s results, one per item): records the plan
    built with the same fields keep them apart, field by field; anything else carries all of it.

    >>> one = record_view(NO_LABELS, {"name": LabelView(), "rating": LabelView(UNTRUSTED_ONLY)})
    >>> two = record_view(NO_LABELS, {"name": LabelView(label_set(["private"])), "rating": LabelView()})
    >>> both = merged([one, two])
    >>> sorted(both.field("name").whole()), sorted(both.field("rating").whole())
    (['private'], ['untrusted'])
    """
    views = list(views)
    records = [found for found in map(_fields_of, views) if found is not None]
    if views and len(records) == len(views) and all(found.keys() == records[0].keys() for found in records):
        fields = {name: merged(found[name] for found in records) for name in records[0]}
        return record_view(union_all(view.labels for view in views), fields)
    return LabelView(union_all(view.whole() for view in views))


def _fields_of(view: LabelView) -> dict[str, LabelView] | None:
    """The fields of a record the plan built, each as a view; None for anything else."""
    schema = view.schema
    if schema is None or view.root is not None or not schema.get(BUILT) or schema.get("type") != "object":
        return None
    return {name: _view_of_part(part) for name, part in schema["properties"].items()}


def _view_of_part(part: Mapping) -> LabelView:
    """The view a part's schema (made by `_part_schema`) stands for."""
    if "allOf" in part:
        return LabelView(node_labels(part), part["allOf"][0])
    return LabelView(node_labels(part))
