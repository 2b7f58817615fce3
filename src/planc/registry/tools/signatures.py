"""A tool as a signature in the plan language's own syntax: what a person or a model needs to call it.

    search(query: string, limit: integer 1..100 = 20) -> list[{id: string, title: string}]

A parameter with no default and not required is marked `?`; a required one is bare. The piped
parameter says `(piped)`. Types are compact: `string`, `integer >= 1`, `"low" | "high"`,
`list[string]`, `{id: string}`, `block`, `condition`, `any`.

>>> from planc.registry.steps.builtins import CONTROL_STEPS
>>> signature(CONTROL_STEPS["map"])
'map(over: list (piped), do: block, concurrency: integer >= 1 = 1)'
>>> type_text({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}})
'list[{id: string}]'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from planc.registry.tools.tool import Tool

SHOWN_FIELDS = 6  # an object type lists this many fields at most


def signature(tool: Tool) -> str:
    """`name(param: type, ...) -> returns`, with the one-of groups after it when the tool has some."""
    params = ", ".join(parameter(tool, name) for name in tool.params)
    text = f"{tool.name}({params})"
    if tool.returns is not None:
        text += f" -> {type_text(tool.returns)}"
    return text


def parameter(tool: Tool, name: str) -> str:
    schema = tool.params[name]
    optional = name not in tool.required and "default" not in schema and not _in_group(tool, name)
    text = f"{name}{'?' if optional else ''}: {type_text(schema)}"
    if "default" in schema:
        text += f" = {json.dumps(schema['default'], ensure_ascii=False)}"
    if name == tool.pipe:
        text += " (piped)"
    return text


def groups(tool: Tool) -> list[str]:
    """The rules a signature cannot show, as sentences: `Give exactly one of `when` and `infer`.`"""
    found = [f"Give exactly one of {_names(group)}." for group in tool.one_of]
    found += [f"Give at most one of {_names(group)}." for group in tool.at_most_one]
    found += [f"`{needed}` is required when `{param}` is {json.dumps(value)}." for param, value, needed in tool.required_when]
    return found


def _names(group: Iterable[str]) -> str:
    quoted = [f"`{name}`" for name in group]
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _in_group(tool: Tool, name: str) -> bool:
    return any(name in group for group in tool.one_of)


def type_text(schema: object) -> str:
    """A JSON Schema as a compact type."""
    if not isinstance(schema, Mapping) or not schema:
        return "any"
    mark = schema.get("x-planc")
    if mark is not None:
        return str(mark)
    if "enum" in schema:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(dict.fromkeys(type_text(option) for option in schema[key]))
    kind: Any = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(type_text({**schema, "type": one}) for one in kind)
    if kind == "array":
        items = schema.get("items")
        return f"list[{type_text(items)}]" if isinstance(items, Mapping) and items else "list"
    if kind == "object":
        return _object(schema)
    if kind in ("integer", "number"):
        return kind + _bounds(schema)
    return {"string": "string", "boolean": "boolean", "null": "null"}.get(kind, "any")


def _object(schema: Mapping) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "record"
    fields = [f"{name}: {type_text(value)}" for name, value in list(properties.items())[:SHOWN_FIELDS]]
    if len(properties) > SHOWN_FIELDS:
        fields.append("...")
    return "{" + ", ".join(fields) + "}"


def _bounds(schema: Mapping) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f" {low}..{high}"
    if low is not None:
        return f" >= {low}"
    if high is not None:
        return f" <= {high}"
    return ""


# Strings for parameters whose schema offers no example, by their format or their name.
PLAUSIBLE_FORMATS = {
    "email": "oncall@example.com",
    "uri": "https://example.com/status",
    "date": "2024-05-01",
    "date-time": "2024-05-01T09:00:00Z",
}
PLAUSIBLE_STRINGS = {
    "query": "database timeout",
    "q": "database timeout",
    "id": "INC-1042",
    "to": "oncall@example.com",
    "email": "oncall@example.com",
    "subject": "Incident update",
    "title": "Open incidents",
    "text": "The database is back to normal.",
    "message": "The database is back to normal.",
    "body": "The database is back to normal.",
    "content": "The database is back to normal.",
    "note": "Fixed by a restart.",
    "channel": "#general",
    "name": "web",
    "service": "web",
    "url": "https://example.com/status",
    "path": "README.md",
    "repo_path": ".",
    "team": "platform",
}


def example_call(tool: Tool, given: dict[str, str | None] | None = None) -> str:
    """`tool(...)` with its required parameters, each a plausible literal of its type, or as `given`
    (None: left out, as a piped parameter is)."""
    given = given or {}
    args = [
        f"{name}: {given[name] if name in given else _example_value(tool.params[name], name)}"
        for name in tool.params
        if (name in tool.required or name in given) and given.get(name, "") is not None
    ]
    return f"{tool.name}({', '.join(args)})"


def _example_value(schema: Mapping, name: str) -> str:
    """A plausible literal for the parameter `name`: one its schema offers (an example, the default, an
    enum member), else one its type, format or name suggests: never the parameter's own name, which
    a small model copies as if it were the value to give."""
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return json.dumps(schema["examples"][0], ensure_ascii=False)
    if "default" in schema:
        return json.dumps(schema["default"], ensure_ascii=False)
    if "enum" in schema and schema["enum"]:
        return json.dumps(schema["enum"][0], ensure_ascii=False)
    kind = schema.get("type")
    if kind == "integer" or kind == "number":
        return json.dumps(schema.get("minimum", 1))
    if kind == "boolean":
        return "true"
    if kind == "array":
        return "[]"
    if kind == "object":
        return "{}"
    if kind == "string" and "pattern" in schema and schema["pattern"].startswith("^#"):
        return '"#general"'  # a channel, as the pattern says
    if kind == "string" and schema.get("format") in PLAUSIBLE_FORMATS:
        return json.dumps(PLAUSIBLE_FORMATS[schema["format"]])
    return json.dumps(PLAUSIBLE_STRINGS.get(name.lower(), "web"))
