"""`--arg NAME=VALUE` and `--arg-json NAME=JSON`: the run arguments of the command line.

`--arg` gives text, read as the parameter's declared type: a parameter declared a string keeps
the text as it was typed (`--arg city=42` is "42"), one declared a number or a list reads it as
JSON. A parameter the plan does not declare takes the JSON reading when the text is JSON, else
the text.
`--arg-json` always reads JSON, and says so when the text is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from planc.backend.calls.results import NotPlain, plain
from planc.syntax.json_input import read_json

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_arguments(pairs: Iterable[str], json_pairs: Iterable[str] = (), params: Mapping[str, Mapping] | None = None) -> dict:
    """The arguments of `pairs` (`--arg`) and `json_pairs` (`--arg-json`), each `params` declares read
    as its JSON Schema says; ValueError names a bad pair.

    >>> parse_arguments(["limit=5", "team=ENG", 'tags=["a"]', "empty="])
    {'limit': 5, 'team': 'ENG', 'tags': ['a'], 'empty': ''}
    >>> parse_arguments(["city=42", "limit=5"], params={"city": {"type": "string"}, "limit": {"type": "integer"}})
    {'city': '42', 'limit': 5}
    >>> parse_arguments([], ['city="42"'])
    {'city': '42'}
    >>> parse_arguments([], ["city=Paris"])
    Traceback (most recent call last):
    ...
    ValueError: --arg-json city: `Paris` is not JSON (Expecting value); give text with --arg city=...
    >>> parse_arguments(["score=NaN"])
    Traceback (most recent call last):
    ...
    ValueError: --arg score: at $: nan, which JSON cannot hold
    """
    arguments: dict = {}
    for option, given in (("--arg", pairs), ("--arg-json", json_pairs)):
        for pair in given:
            name, equals, text = pair.partition("=")
            if not equals or not NAME.match(name):
                raise ValueError(f"{option} {pair!r} is not NAME=VALUE")
            if name in arguments:
                raise ValueError(f"{option} {name}: the argument `{name}` is given twice")
            value = _json(name, text) if option == "--arg-json" else _typed(text, (params or {}).get(name))
            try:  # what the run store can record and a replay read back, as a tool's result must be
                arguments[name] = plain(value)
            except NotPlain as error:
                raise ValueError(f"{option} {name}: {error}") from None
    return arguments


def _json(name: str, text: str) -> Any:
    try:
        return read_json(text)
    except ValueError as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        raise ValueError(f"--arg-json {name}: `{text}` is not JSON ({reason}); give text with --arg {name}=...") from None


def _typed(text: str, schema: Mapping | None) -> Any:
    """`text` as the parameter `schema` declares takes it: the text as typed when it may be a string,
    else its JSON reading (an invalid one is refused by the run, saying why). Undeclared: the JSON
    reading, else the text."""
    try:
        value = read_json(text)
    except ValueError:  # not JSON (or nested past what planc reads): the text
        return text
    if schema is None:
        return value
    from jsonschema.validators import validator_for

    validator = validator_for(schema)(schema)
    if _names_string(schema) and validator.is_valid(text):
        return text
    return value if validator.is_valid(value) or not validator.is_valid(text) else text


def _names_string(schema: Mapping) -> bool:
    kind = schema.get("type")
    return (
        kind == "string"
        or (isinstance(kind, list) and "string" in kind)
        or "type" not in schema
        and any(isinstance(choice, str) for choice in schema.get("enum", ()))
    )
