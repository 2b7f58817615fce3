"""Changes planc makes to a planc.toml a person wrote: one line added, the rest of the text kept as it is.

`with_returns` declares a tool's `returns` (`planc registry shapes --write`), in the tool's own
`[tools.NAME]` table, as one inline table after the table's last line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
HEADER = re.compile(r"\s*\[")  # a line that starts a table (or an array of tables)


class CannotEdit(ValueError):
    """The change cannot be made safely to this text: the message says why and what to do instead."""


def with_returns(text: str, tool: str, schema: Mapping) -> str:
    """`text` (a planc.toml) with `returns = SCHEMA` added to the table `[tools.TOOL]`.

    >>> print(with_returns('[tools.a]\\nprovider = "python:m:a"\\n\\n[tools.b]\\n', "a", {"type": "string"}), end="")
    [tools.a]
    provider = "python:m:a"
    returns = { type = "string" }
    <BLANKLINE>
    [tools.b]
    """
    lines = text.splitlines(keepends=True)
    header = _header_line(lines, tool)
    end = next((number for number in range(header + 1, len(lines)) if HEADER.match(lines[number])), len(lines))
    last = max(
        (number for number in range(header, end) if lines[number].strip() and not lines[number].lstrip().startswith("#")),
        default=header,
    )
    if re.search(r"^\s*returns\s*=", "".join(lines[header + 1 : end]), re.MULTILINE):
        raise CannotEdit(f"`[tools.{tool}]` declares `returns` already")
    if not lines[last].endswith("\n"):
        lines[last] += "\n"
    lines.insert(last + 1, f"returns = {inline_toml(schema)}\n")
    return "".join(lines)


def _header_line(lines: list[str], tool: str) -> int:
    names = {f"tools.{tool}", f'tools."{tool}"', f"tools.'{tool}'"}
    for number, line in enumerate(lines):
        found = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", line)
        if found and re.sub(r"\s*\.\s*", ".", found[1]) in names:
            return number
    raise CannotEdit(
        f"planc.toml has no `[tools.{tool}]` table to declare its `returns` in (a tool of an MCP "
        f"server, or one written another way, takes its `returns` where it is declared): add "
        f"`returns = ...` by hand"
    )


def inline_toml(value: object) -> str:
    """`value` (JSON data) as a TOML inline value.

    >>> inline_toml({"type": ["string", "null"], "x-y": {"n": 1, "ok": True}})
    '{ type = ["string", "null"], x-y = { n = 1, ok = true } }'
    """
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(key)} = {inline_toml(inner)}" for key, inner in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(inline_toml(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise CannotEdit(f"TOML has no null: {value!r} cannot be written")


def _key(key: str) -> str:
    return key if BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)
