"""JSON that planc reads from anywhere (model replies, stored plans, `--answers`, the lock, the run store's
records, batch lines, MCP results), read one way: bounded in depth and size.

Python's reader recurses once per level, so a deeply nested text raises RecursionError, and a value
just shallow enough to be read still breaks every recursive walk after it (a schema check, a
canonical dump). Every reader goes through `read_json`, which makes both one ValueError.

Text planc did not write goes out the other way quoted by `printable_json`: a JSON string whose
every character that is not printable (a line break of any kind, DEL, a lone surrogate) is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 256  # levels of lists and objects: far below the interpreter's recursion limit
MAX_BYTES = 256 * 1024 * 1024  # the largest JSON text planc reads at all; callers may read less


class JsonTooDeep(ValueError):
    """JSON nested deeper than MAX_DEPTH levels, or longer than it may be."""


def read_json(text: str | bytes, *, max_bytes: int = MAX_BYTES, object_pairs_hook: Callable | None = None) -> Any:
    """`text` read as JSON; a ValueError (json's own, or JsonTooDeep) when it is not JSON, is nested deeper
    than MAX_DEPTH levels, or is longer than `max_bytes`.

    >>> read_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> read_json("[" * 100_000 + "]" * 100_000)
    Traceback (most recent call last):
    ...
    planc.syntax.json_input.JsonTooDeep: nested deeper than 256 levels
    """
    if len(text) > max_bytes:
        raise JsonTooDeep(f"longer than {max_bytes:,} bytes")
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise JsonTooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
    if isinstance(value, (list, dict)) and too_deep(value):
        raise JsonTooDeep(f"nested deeper than {MAX_DEPTH} levels")
    return value


def too_deep(value: list | dict) -> bool:
    """Whether `value` (JSON data) nests lists and objects deeper than MAX_DEPTH levels; a walk without recursion."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


def printable_json(text: str) -> str:
    """`text` as a JSON string on one line, every character that is not printable escaped (`\\n`, `\\u2028`,
    `\\u007f`, `\\ud800`), so it cannot end a line, a fence or the string it is in.

    >>> print(printable_json('a"\\n\\u2028\\x7f\\ud800é'))
    "a\\"\\n\\u2028\\u007f\\ud800é"
    """
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in json.dumps(text, ensure_ascii=False))
