"""The tree as plain JSON data: `planc show --format json`, and structural equality."""

from __future__ import annotations

import re
from typing import Any

import attrs

from planc.syntax import ast

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def kind_of(node: object) -> str:
    """`ListExpr` -> `list_expr`."""
    return _SNAKE.sub("_", type(node).__name__).lower()


def to_data(node: Any, *, spans: bool = True, paths: dict | None = None, extra: dict | None = None) -> Any:
    """`node` as JSON-ready data: every node has `kind` (and `span`).

    A Name becomes its text; a step also gets its `path` when `paths` is given,
    and the fields `extra` holds for it (`{step: {"cost": ...}}`).
    `to_data(a, spans=False) == to_data(b, spans=False)` is structural equality.
    """
    if isinstance(node, ast.Name):
        return node.text
    if isinstance(node, tuple):
        return [to_data(child, spans=spans, paths=paths, extra=extra) for child in node]
    if not attrs.has(type(node)):
        return node
    data: dict[str, Any] = {"kind": kind_of(node)}
    if spans:
        data["span"] = node.span.to_json()
    if isinstance(node, ast.Step):
        data["tool"] = node.tool.text
        data["label"] = node.label.text if node.label else None
        if paths is not None:
            data["path"] = paths[node]
        data["args"] = to_data(node.args, spans=spans, paths=paths, extra=extra)
        if extra is not None:
            data.update(extra.get(node, {}))
        return data
    for field in attrs.fields(type(node)):
        if field.name != "span":
            data[field.name] = to_data(getattr(node, field.name), spans=spans, paths=paths, extra=extra)
    if isinstance(node, ast.Literal):
        data["type"] = type(node.value).__name__  # keeps `1` and `true` apart in comparisons
    return data
