"""`--arg NAME=VALUE`: a run argument is JSON when it parses as JSON, else a string."""

from __future__ import annotations

import json
import re

from planc.backend.results import NotPlain, plain

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_arguments(pairs) -> dict:
    """`["limit=5", "team=ENG"]` -> `{"limit": 5, "team": "ENG"}`; ValueError names a bad pair.

    >>> parse_arguments(["limit=5", "team=ENG", 'tags=["a"]', "empty="])
    {'limit': 5, 'team': 'ENG', 'tags': ['a'], 'empty': ''}
    >>> parse_arguments(["score=NaN"])
    Traceback (most recent call last):
    ...
    ValueError: --arg score: at $: nan, which JSON cannot hold
    """
    arguments = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        if not equals or not NAME.match(name):
            raise ValueError(f"--arg {pair!r} is not NAME=VALUE")
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON (or nested past what Python reads): the text
            value = text
        try:  # what the run store can record and a replay read back, as a tool's result must be
            arguments[name] = plain(value)
        except NotPlain as error:
            raise ValueError(f"--arg {name}: {error}") from None
    return arguments
