"""Literal arguments: their values, and what is wrong with one against a parameter's JSON Schema.

Validation is jsonschema's, imported only for a value that is invalid or a
schema with keywords beyond the plain ones (`type`, `enum`, bounds, `items`);
a validator is made once per schema (by identity) and reused.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from planc.analysis.schema_words import describe, describe_value
from planc.diagnostics import Fix
from planc.registry.tools.schemas import json_equal, value_kind
from planc.syntax import ast

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

NOT_LITERAL = object()  # the value of an expression only known at run time
# Keys that say nothing about which values a schema allows.
ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"})
# The keywords `_plainly_valid` judges by itself, without jsonschema.
PLAIN = ANNOTATIONS | {
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "items",
}
# The bounds among them, each with the comparison a value (or its length) must pass against the bound.
BOUNDS = {
    "minimum": operator.ge,
    "maximum": operator.le,
    "exclusiveMinimum": operator.gt,
    "exclusiveMaximum": operator.lt,
    "minLength": operator.ge,
    "maxLength": operator.le,
    "minItems": operator.ge,
    "maxItems": operator.le,
}
NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


class Problem(NamedTuple):
    """What is wrong with a literal, at `node` (the part of it that is wrong): a required key it lacks, a key
    it may not have, or else a value that is not what the schema expects (`expected` and `found`, in words)."""

    node: ast.Expr | ast.Entry  # an entry: the key it may not have
    missing_key: str | None = None
    unexpected_key: str | None = None
    expected: str | None = None
    found: str | None = None
    hints: tuple[str, ...] = ()
    fix: Fix | None = None  # the value that is certainly meant, when there is one


def meant_option(options: list, value: object) -> object:
    """The one of `options` (an `enum`) that the string `value` differs from only in case, if exactly one does:
    what `"Prose"` certainly meant among `"bullets"`, `"prose"`; else NOT_LITERAL.

    >>> meant_option(["bullets", "prose"], "Prose"), meant_option(["a", "A"], "a ") is NOT_LITERAL
    ('prose', True)
    """
    close = [
        option
        for option in options
        if isinstance(option, str) and isinstance(value, str) and option.casefold() == value.casefold()
    ]
    return close[0] if len(close) == 1 else NOT_LITERAL


def meant_fix(options: list, value: object, node: ast.Expr) -> tuple[Fix | None, list[str]]:
    """The fix that writes the option `value` (written as `node`) certainly meant, and its did-you-mean hint."""
    meant = meant_option(options, value)
    if meant is NOT_LITERAL:
        return None, []
    written = json.dumps(meant, ensure_ascii=False)
    return Fix(node.span, written), [f"did you mean {written}?"]


def literal_value(expr: ast.Expr) -> Any:
    """The JSON value of `expr` when it holds no reference, hole, block or condition, else NOT_LITERAL.

    >>> from planc.syntax.parser import parse
    >>> literal_value(parse('a(x: [1, {k: "v"}])').plan.pipelines[0].steps[0].args[0].value)
    [1, {'k': 'v'}]
    """
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.String):
        text = expr.text
        return NOT_LITERAL if text is None else text
    if isinstance(expr, ast.ListExpr):
        values = [literal_value(item) for item in expr.items]
        return NOT_LITERAL if any(value is NOT_LITERAL for value in values) else values
    if isinstance(expr, ast.Record):
        record = {entry.key.text: literal_value(entry.value) for entry in expr.entries}
        return NOT_LITERAL if any(value is NOT_LITERAL for value in record.values()) else record
    return NOT_LITERAL


class Validators:
    """jsonschema validators, one per parameter schema, made when a literal first needs one."""

    def __init__(self) -> None:
        self._made: dict[int, tuple] = {}

    def problem(self, schema: Mapping, value: object, expr: ast.Expr) -> Problem | None:
        """What is wrong with `value` (written as `expr`) for `schema`, if anything."""
        if _plainly_valid(schema, value):
            return None
        made = self._made.get(id(schema))
        if made is None:
            from jsonschema.validators import validator_for

            # The schema is kept with its validator so that its id cannot be reused meanwhile.
            made = self._made[id(schema)] = (schema, validator_for(schema)(schema))
        validator = made[1]
        if validator.is_valid(value):
            return None
        from jsonschema.exceptions import relevance

        error = max(validator.iter_errors(value), key=relevance)
        node = _node_at(expr, error.absolute_path)
        return _explain(error, node)


def constrains(schema: Mapping) -> bool:
    """Whether `schema` rejects any value at all (`{}` and bare annotations do not)."""
    return not ANNOTATIONS.issuperset(schema)


def _plainly_valid(schema: object, value: Any) -> bool:
    """Whether `value` is valid for `schema` judged by the few keywords most parameters use.

    False means "ask jsonschema", which is then imported: for an invalid value (to
    word the error) or a schema with any other keyword.
    """
    if not isinstance(schema, Mapping) or not PLAIN.issuperset(schema):
        return False
    kind = value_kind(value)
    declared = schema.get("type")
    if declared is not None and declared != kind and not (declared == "number" and kind == "integer"):
        return False
    for keyword in ("enum", "const"):
        if keyword in schema:
            options = schema["enum"] if keyword == "enum" else [schema["const"]]
            if kind in ("array", "object") or not any(json_equal(value, option) for option in options):
                return False
    if kind in ("integer", "number"):
        return _within(value, schema, NUMBER_BOUNDS)
    if kind == "string":
        return _within(len(value), schema, ("minLength", "maxLength"))
    if kind == "array":
        items = schema.get("items", {})
        return _within(len(value), schema, ("minItems", "maxItems")) and all(_plainly_valid(items, item) for item in value)
    return True


def _within(number: float, schema: Mapping, keywords: tuple[str, ...]) -> bool:
    """Whether `number` keeps the bounds `schema` sets under `keywords` (a bound not a number: no). An
    integer and a float bound compare as numbers (`1` is below `minimum: 2.5`).

    >>> _within(1, {"minimum": 2.5}, NUMBER_BOUNDS), _within(3, {"minimum": 2.5}, NUMBER_BOUNDS)
    (False, True)
    """
    for keyword in keywords:
        if keyword in schema:
            bound = schema[keyword]
            if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not BOUNDS[keyword](number, bound):
                return False
    return True


def _node_at(expr: ast.Expr, path: Iterable[str | int]) -> ast.Expr:
    """The node of `expr` that holds the value at `path` (keys and indices) of its literal value."""
    for key in path:
        if type(expr) is ast.ListExpr and isinstance(key, int) and key < len(expr.items):
            expr = expr.items[key]
        elif type(expr) is ast.Record:
            expr = next((entry.value for entry in expr.entries if entry.key.text == key), expr)
        else:
            break
    return expr


def _explain(error: ValidationError, node: ast.Expr) -> Problem:
    # The failing keyword's subschema and its value: a schema object and what that keyword holds.
    schema: Any = error.schema
    instance, wanted = error.instance, cast(Any, error.validator_value)
    if error.validator == "required" and isinstance(instance, dict):
        missing = [key for key in wanted if key not in instance]
        return Problem(node, missing_key=missing[0])
    if error.validator == "additionalProperties" and isinstance(instance, dict) and type(node) is ast.Record:
        allowed = schema.get("properties") or {}
        patterns = list(schema.get("patternProperties") or {})
        for entry in node.entries:
            key = entry.key.text
            if key not in allowed and not any(re.search(pattern, key) for pattern in patterns):
                known = ", ".join(f"`{name}`" for name in allowed) or "none"
                return Problem(entry, unexpected_key=key, hints=(f"the keys allowed here are {known}",))
    if error.validator in ("enum", "const"):
        options = wanted if error.validator == "enum" else [wanted]
        fix, hints = meant_fix(options if isinstance(options, list) else [], instance, node)
        return Problem(node, expected=describe(schema), found=describe_value(instance), hints=tuple(hints), fix=fix)
    return Problem(node, expected=describe(schema), found=describe_value(instance))
