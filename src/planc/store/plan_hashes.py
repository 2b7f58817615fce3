"""What a stored plan's hashes are over: canonical JSON, and a tool's declaration as data.

A stored plan keeps the hash of every tool it calls, a fingerprint of them all, and a content hash
over itself; loading and migrating it compare them with the registry of now.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planc.registry.tools.tool import Tool


class StoredPlanError(Exception):
    """A stored plan that cannot be loaded: not one, tampered with, too new, or stale."""


# One encoder, made once: json.dumps with options makes a new one each call, which costs more than a
# small value's encoding (every tool call's idempotency key is over its canonical JSON).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def canonical_json(data: object) -> str:
    """`data` as JSON with sorted keys and no optional whitespace: what the hashes are over."""
    return _CANONICAL.encode(data)


def sha256(text: str) -> str:
    """The hex sha256 of `text` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Fields a tool's declaration gained after stored plans existed: hashed only when set, so the plans
# compiled before them stay fresh.
LATER_FIELDS = frozenset({"query", "idempotency_key", "labels"})


def _plain(value: Any) -> object:
    """A tool declaration's value as JSON-ready data: attrs classes by field (those equality compares),
    mappings, sequences."""
    import attrs

    if attrs.has(type(value)):
        return {
            field.name: _plain(getattr(value, field.name))
            for field in attrs.fields(type(value))
            if field.eq and not (field.name in LATER_FIELDS and getattr(value, field.name) == field.default)
        }
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, frozenset):  # a tool's labels
        return sorted(value)
    return value


def tool_hash(tool: Tool) -> str:
    """The sha256 of the canonical JSON of every field of `tool`'s declaration."""
    return sha256(canonical_json(_plain(tool)))


def fingerprint(tools: Mapping) -> str:
    """The sha256 over the declarations of `tools` (name -> Tool), in the order of their names."""
    return sha256(canonical_json([_plain(tools[name]) for name in sorted(tools)]))


# The fields of a stored plan its content hash is not over: the hash itself, and which planc wrote the file
# (a plan compiled again by a newer planc is the same plan).
UNHASHED = frozenset({"hash", "planc_version"})


def content_hash(stored: Mapping) -> str:
    """The sha256 over every field of the stored plan `stored` but those of UNHASHED."""
    return sha256(canonical_json({key: value for key, value in stored.items() if key not in UNHASHED}))
