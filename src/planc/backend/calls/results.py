"""What a tool may return: JSON data. A result is made plain once, where it enters the run.

The run, its events, the run store and a replay all see a result as JSON, so a result that
JSON cannot hold exactly would be recorded as something other than what the run used, or not
at all (after its effect happened). `plain` therefore converts only what has one exact JSON
form, and refuses the rest, naming where in the result the problem is (`$.items[3]`):

- kept: strings, booleans, null, integers of at most `MAX_INT_DIGITS` digits, finite floats,
  lists, and dicts whose keys are strings (in their order);
- converted: a tuple (or any subclass of list) is a list, a subclass of dict is a dict, a
  subclass of str, int or float is its plain value (an enum's member its value);
- refused: a set (its order is not defined), bytes (no one text encoding is theirs), a dict
  key that is not a string (JSON would make `1` and `"1"` one key), NaN and the infinities
  (not JSON), a string that is not valid Unicode (a lone surrogate), a circular reference,
  nesting deeper than `MAX_DEPTH`, an integer too long for a JSON reader to take back, and
  any other object;
- and a result whose JSON is larger than `[limits] result_bytes`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from planc.backend.state.values import ToolFailed

MAX_DEPTH = 256  # far below the interpreter's recursion limit, so JSON writes and reads it back
MAX_INT_DIGITS = 4300  # the longest integer Python reads back from JSON by default
_INT_LIMIT = 10**MAX_INT_DIGITS
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ResultRefused(ToolFailed):
    """A call returned a result that cannot be recorded or used: the call failed, and since it returned
    (its effect happened) its completion is recorded, so that it is never made again."""

    outcome = "refused"  # as the run store records it


def usable(value: object, what: str, limit_bytes: int | None) -> Any:
    """`value`, the result of `what` (`step 2: `search``), as plain JSON data, or ResultRefused saying where
    and what is wrong."""
    try:
        return plain(value, limit_bytes)
    except NotPlain as error:
        raise ResultRefused(
            f"{what} returned a result that cannot be recorded, {error}; the call was made, and is not made again"
        ) from None


class NotPlain(Exception):
    """A value JSON cannot hold exactly: `what` is wrong, at `path` (`$.items[3]`)."""

    def __init__(self, what: str, path: str = "$") -> None:
        super().__init__(f"at {path}: {what}")
        self.what, self.path = what, path


def plain(value: object, limit_bytes: int | None = None) -> Any:
    """`value` as plain JSON data (new lists and dicts where it had others), or NotPlain.

    With `limit_bytes`, a value whose JSON (UTF-8) is larger is refused too.

    >>> plain({"ids": (1, 2), "ok": True})
    {'ids': [1, 2], 'ok': True}
    >>> plain({"tags": {"a"}})
    Traceback (most recent call last):
    ...
    planc.backend.calls.results.NotPlain: at $.tags: a set, whose order is not defined (return a sorted list)
    """
    try:
        converted = _plain(value, 0, set())
    except _Refused as refused:
        raise NotPlain(refused.what, "$" + "".join(reversed(refused.path))) from None
    if limit_bytes is not None:
        size = len(json.dumps(converted, ensure_ascii=False).encode("utf-8"))
        if size > limit_bytes:
            raise NotPlain(f"the result is {size:,} bytes as JSON, more than `[limits] result_bytes` ({limit_bytes:,})")
    return converted


class _Refused(Exception):
    """Raised where the problem is; each container on the way out adds its step to `path` (reversed)."""

    def __init__(self, what: str) -> None:
        self.what, self.path = what, list[str]()


def _plain(value: object, depth: int, open_containers: set[int]) -> Any:
    kind = type(value)
    if value is None or kind is bool:
        return value
    if isinstance(value, str):
        return _text(value if kind is str else str.__str__(value))
    if isinstance(value, int) and not isinstance(value, bool):
        number = value if kind is int else int.__int__(value)
        if not -_INT_LIMIT < number < _INT_LIMIT:
            raise _Refused(f"an integer of more than {MAX_INT_DIGITS:,} digits, which JSON readers cannot take back")
        return number
    if isinstance(value, float):
        real = value if kind is float else float.__float__(value)
        if not math.isfinite(real):
            raise _Refused(f"{real!r}, which JSON cannot hold")
        return real
    if isinstance(value, (list, tuple, dict)):
        if id(value) in open_containers:
            raise _Refused("a circular reference: the value contains itself")
        if depth >= MAX_DEPTH:
            raise _Refused(f"nesting deeper than {MAX_DEPTH} levels")
        open_containers.add(id(value))
        try:
            return _container(value, depth + 1, open_containers)
        finally:
            open_containers.discard(id(value))
    raise _Refused(_what_it_is(value))


def _container(value: list | tuple | dict, depth: int, open_containers: set[int]) -> list | dict:
    if isinstance(value, dict):
        converted = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused(f"a key that is not a string ({key!r}, {type(key).__name__}): JSON keys are strings")
            key = _text(key if type(key) is str else str.__str__(key))
            try:
                converted[key] = _plain(item, depth, open_containers)
            except _Refused as refused:
                refused.path.append(f".{key}" if _NAME.match(key) else f"[{json.dumps(key, ensure_ascii=False)}]")
                raise
        return converted
    items = []
    for index, item in enumerate(value):
        try:
            items.append(_plain(item, depth, open_containers))
        except _Refused as refused:
            refused.path.append(f"[{index}]")
            raise
    return items


def _text(text: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _Refused("a string that is not valid Unicode (it holds a lone surrogate)") from None
    return text


def _what_it_is(value: object) -> str:
    if isinstance(value, (set, frozenset)):
        return "a set, whose order is not defined (return a sorted list)"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes, which have no one text form (decode them, or encode them as base64)"
    return (
        f"an object of type `{type(value).__qualname__}`: a result is JSON data (dicts with string keys, "
        f"lists, strings, numbers, booleans, null)"
    )
