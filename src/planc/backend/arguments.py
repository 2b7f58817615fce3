"""`--arg NAME=VALUE`: a run argument is JSON when it parses as JSON, else a string."""

from __future__ import annotations

import json
import re

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_arguments(pairs) -> dict:
    """`["limit=5", "team=ENG"]` -> `{"limit": 5, "team": "ENG"}`; ValueError names a bad pair.

    >>> parse_arguments(["limit=5", "team=ENG", 'tags=["a"]', "empty="])
    {'limit': 5, 'team': 'ENG', 'tags': ['a'], 'empty': ''}
    """
    arguments = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        if not equals or not NAME.match(name):
            raise ValueError(f"--arg {pair!r} is not NAME=VALUE")
        try:
            arguments[name] = json.loads(text)
        except ValueError:
            arguments[name] = text
    return arguments
