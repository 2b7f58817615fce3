"""Whether a JSON Schema is one: jsonschema's check against its metaschema, each answer kept for the process.

A check walks the whole metaschema (milliseconds), and the same few schemas (`{"type": "string"}`) come
back for every parameter of every tool in every planc.toml a process loads, and in plans' output
schemas: the answers are kept by the schema's JSON.
"""

from __future__ import annotations

import functools
import json
from typing import Any


def schema_error(schema: object) -> tuple[str, str] | None:
    """Why `schema` is not a valid JSON Schema (jsonschema's message) and where in it (`.properties.x`);
    None if it is."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (a TOML date in it): nothing to keep it by
        return _checked(schema)
    return _checked_json(text)


@functools.lru_cache(maxsize=4096)
def _checked_json(text: str) -> tuple[str, str] | None:
    return _checked(json.loads(text))


def _checked(schema: Any) -> tuple[str, str] | None:
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as error:
        return error.message, "".join(f".{key}" if isinstance(key, str) else f"[{key}]" for key in error.path)
    return None
