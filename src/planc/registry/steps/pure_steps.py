"""The pure steps: numbers, text, lists and dates, computed by planc itself at no cost.

Each is declared once, here: its parameters (a `Tool`, like a control step's), the rule that
gives its result's type from its inputs' types (and the literal values written), and its Python
implementation. The types pass, the cost pass and the interpreter read their tables from
`PURE_STEPS`; nothing else names a pure step. An implementation takes the step's inputs as
keyword arguments (a parameter left out and without a default is absent), which conform to its
parameters (the run checks them first), and raises `PureStepError` for an input it cannot work
with that they do not rule out (an item without the field named); the step then fails with that
message.

Every implementation is linear in its input (`sort` is n log n), so the bound on a step's
input (`[limits] result_bytes`) bounds its work; `replace`, the one whose result can outgrow its
input by a product, and `join`, whose separator repeats, are told that bound and refuse past it;
`matches` refuses a text past it and a pattern longer than `[limits] regex_chars`. `today` is the one that is not a
function of its inputs: it reads the run's clock, and the run records what it read.

>>> PURE_STEPS["split"].run(text="a,b", separator=",")
['a', 'b']
>>> PURE_STEPS["sum"].result({"over": {"type": "array"}}, {"field": "amount"})
{'type': 'number'}
"""

from __future__ import annotations

import datetime
import inspect
import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import attrs

from planc.registry.steps.linear_regex import PatternRefused
from planc.registry.steps.linear_regex import search as regex_search
from planc.registry.tools.tool import Effects, Tool, plain_types

if TYPE_CHECKING:
    from planc.registry.settings.declarations import Limits

N = TypeVar("N", int, float)
# (input types, literal inputs) -> the result's type (None: unknown)
TypeRule = Callable[[Mapping, Mapping], Mapping | None]

FAMILIES = ("numbers", "text", "lists", "dates")

NUMBER = {"type": "number"}
INTEGER = {"type": "integer"}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
LIST = {"type": "array"}
STRINGS = {"type": "array", "items": STRING}
FIELD = {"type": "string", "minLength": 1}
ORDERED = {"type": ["number", "string"]}  # what `min`, `max` and `sort` order: numbers, or strings
DATE = {"type": "string", "format": "date"}
PURE = Effects(read_only=True, deterministic=True, idempotent=True, destructive=False, open_world=False)
CLOCK = Effects(read_only=True, deterministic=False, idempotent=True, destructive=False, open_world=False)


class PureStepError(ValueError):
    """A pure step's input it cannot work with; the message says what, without the step."""


@attrs.frozen
class PureStep:
    """One pure step: its declaration, its result's type rule, its implementation, its family."""

    tool: Tool
    family: str
    result: TypeRule  # (input types, literal inputs) -> result type
    run: Callable[..., object]  # its inputs as keywords -> its result (plain JSON data), or PureStepError
    limited: bool = False  # its implementation takes `limits`, the run's `[limits]`
    defaults: tuple = ()  # (parameter, default value) for each parameter that has a default
    # The type of the values of `over` it works with (each item's `field`, when given): what the types pass
    # holds `over`'s items to, beyond its parameter's `array` (None: any values).
    values: Mapping | None = None
    value_kinds: frozenset = attrs.field(
        init=False,
        default=attrs.Factory(  # `values`' JSON types, made once
            lambda self: frozenset(_kinds(self.values)), takes_self=True
        ),
    )
    # Made once from `tool`, for `surely_valid`: each parameter's plain types (empty: its schema says more
    # than a type).
    kinds: Mapping = attrs.field(
        init=False,
        default=attrs.Factory(
            lambda self: {name: plain_types(schema) or frozenset() for name, schema in self.tool.params.items()}, takes_self=True
        ),
    )
    default_inputs: Mapping = attrs.field(
        init=False,
        default=attrs.Factory(  # `defaults` as one mapping
            lambda self: dict(self.defaults), takes_self=True
        ),
    )
    deterministic: bool = attrs.field(
        init=False, default=attrs.Factory(lambda self: self.tool.effects.deterministic, takes_self=True)
    )

    def surely_valid(self, inputs: Mapping) -> bool:
        """Whether `inputs` conform to the step's parameters, known without a validator: each is a declared
        parameter whose schema is only a `type`, and of it. False says nothing: a validator decides (the
        dispatch's `check_arguments`, which says what is wrong). That no required input is missing is the
        check's to know: it refuses a step that does not write (or pipe) each one, and an argument that
        does not render at run time fails the step before this.

        >>> PURE_STEPS["add"].surely_valid({"a": 1, "b": 2.5}), PURE_STEPS["add"].surely_valid({"a": True, "b": 2})
        (True, False)
        >>> PURE_STEPS["add"].surely_valid({"a": 1, "c": 2}), PURE_STEPS["round"].surely_valid({"value": 1, "digits": 2})
        (False, False)
        """
        kinds = self.kinds
        for name, value in inputs.items():
            if type(value) not in kinds.get(name, ()):
                return False
        return True


def _kinds(schema: Mapping | None) -> set[str]:
    """The JSON types `schema` (a `values`) names, "integer" with "number"."""
    named = (schema or {}).get("type", ())
    found = {named} if isinstance(named, str) else set(named)
    return found | {"integer"} if "number" in found else found


# --- reading inputs


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PureStepError(f"{what} must be a number, found {_kind(value)}")
    return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string" if len(value) > 40 else f"the string {json.dumps(value)}"
    return "a list" if isinstance(value, list) else "an object"


def _values(over: list, field: str | None) -> list:
    """The items of `over`, or each item's `field`."""
    if field is None:
        return list(over)
    values = []
    for index, item in enumerate(over):
        if not isinstance(item, dict) or field not in item:
            raise PureStepError(f"item {index} has no field `{field}`: it is {_kind(item)}")
        values.append(item[field])
    return values


def _numbers(over: list, field: str | None) -> list:
    return [
        _number(value, f"item {index}" + (f"'s `{field}`" if field else "")) for index, value in enumerate(_values(over, field))
    ]


def _comparable(values: list, field: str | None) -> list:
    """`values` when they are all numbers or all strings (what can be ordered)."""
    what = f"`{field}` of every item" if field else "every item"
    if all(isinstance(value, str) for value in values):
        return values
    if all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        return values
    raise PureStepError(f"{what} must be a number, or {what} a string, to be ordered")


def _key(value: object) -> str:
    """`value` as canonical text: two values are the same when their JSON is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _finite(value: N) -> N:
    if isinstance(value, float) and not math.isfinite(value):
        raise PureStepError("the result is not a finite number")
    return value


# --- numbers


def _sum(over: list, field: str | None = None) -> float:
    values = _numbers(over, field)
    return _finite(math.fsum(values)) if any(isinstance(value, float) for value in values) else sum(values)


def _extreme(pick: Callable[[list], Any]) -> Callable[..., Any]:
    def run(over: list, field: str | None = None) -> Any:
        values = _comparable(_values(over, field), field)
        if not values:
            raise PureStepError("the list is empty")
        return pick(values)

    return run


def _average(over: list, field: str | None = None) -> float:
    values = _numbers(over, field)
    if not values:
        raise PureStepError("the list is empty")
    return _finite(math.fsum(values) / len(values))


def _count(over: list, field: str | None = None) -> int:
    if field is None:
        return len(over)
    return sum(1 for item in over if isinstance(item, dict) and item.get(field) is not None)


def _round(value: float, digits: int = 0) -> float:
    return round(value) if digits == 0 else _finite(float(round(value, digits)))  # round(x) is an int


def _arithmetic(operation: Callable[[float, float], float]) -> Callable[[float, float], float]:
    def run(a: float, b: float) -> float:
        result = operation(a, b)
        if isinstance(result, int) and abs(result) > 2**53:
            raise PureStepError("the result is too large to be exact")
        return _finite(result)

    return run


def _divide(a: float, b: float) -> float:
    if b == 0:
        raise PureStepError("division by zero")
    return _finite(a / b)


# --- text


def _replace(text: str, old: str, new: str, limits: Limits) -> str:
    grown = len(text) + text.count(old) * (len(new) - len(old))
    if grown > limits.result_bytes:
        raise PureStepError(
            f"the result would have {grown} characters, more than `[limits] result_bytes` ({limits.result_bytes})"
        )
    return text.replace(old, new)


def _join(over: list[str], separator: str = "", *, limits: Limits) -> str:
    length = sum(map(len, over)) + len(separator) * max(len(over) - 1, 0)
    if length > limits.result_bytes:
        raise PureStepError(
            f"the result would have {length} characters, more than `[limits] result_bytes` ({limits.result_bytes})"
        )
    return separator.join(over)


def _matches(text: str, pattern: str, limits: Limits) -> bool:
    if len(text) > limits.result_bytes:
        raise PureStepError(f"`text` has {len(text)} characters, more than `[limits] result_bytes` ({limits.result_bytes})")
    if len(pattern) > limits.regex_chars:
        raise PureStepError(f"`pattern` has {len(pattern)} characters, more than `[limits] regex_chars` ({limits.regex_chars})")
    try:
        return regex_search(pattern, text)
    except PatternRefused as error:
        raise PureStepError(f"`pattern` is refused: {error}") from None


def _slice(value: str | list, start: int = 0, end: int | None = None) -> str | list:
    return value[start:end]


def _parse_json(text: str) -> Any:
    def refuse(constant: str) -> NoReturn:
        raise PureStepError(f"`{constant}` is not JSON")

    try:
        return json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as error:
        raise PureStepError(f"`text` is not JSON: {error}") from None
    except RecursionError:
        raise PureStepError("`text` nests too deeply") from None


# --- lists


def _sort(over: list, field: str | None = None, descending: bool = False) -> list:
    keys = _comparable(_values(over, field), field)
    order = sorted(range(len(over)), key=keys.__getitem__, reverse=descending)
    return [over[index] for index in order]


def _unique(over: list, field: str | None = None) -> list:
    seen: set[str] = set()
    kept = []
    for item, value in zip(over, _values(over, field)):
        key = _key(value)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _flatten(over: list) -> list:
    flat = []
    for index, item in enumerate(over):
        if not isinstance(item, list):
            raise PureStepError(f"item {index} is not a list: it is {_kind(item)}")
        flat.extend(item)
    return flat


def _group_by(over: list, field: str) -> list[dict]:
    groups: dict[str, dict] = {}
    for item, value in zip(over, _values(over, field)):
        groups.setdefault(_key(value), {"key": value, "items": []})["items"].append(item)
    return list(groups.values())


# --- dates


def _date(text: object, what: str) -> datetime.date:
    if not isinstance(text, str):
        raise PureStepError(f'{what} must be a date like "2024-05-31", found {_kind(text)}')
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise PureStepError(f'{what} must be a date like "2024-05-31", found {_kind(text)}') from None


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def _parse_date(text: str, format: str | None = None) -> str:
    try:
        if format is not None:
            return datetime.datetime.strptime(text, format).date().isoformat()
        return datetime.datetime.fromisoformat(text).date().isoformat()
    except ValueError as error:
        raise PureStepError(f"{_kind(text)} is not a date{'' if format is None else ' in that format'}: {error}") from None


def _add_days(date: str, days: int) -> str:
    try:
        return (_date(date, "`date`") + datetime.timedelta(days=days)).isoformat()
    except OverflowError:
        raise PureStepError("the date is out of range") from None


def _format_date(date: str, format: str) -> str:
    return _date(date, "`date`").strftime(format)


# --- the type rules


def _items(schema: object) -> Mapping | None:
    items = schema.get("items") if isinstance(schema, Mapping) else None
    return items if isinstance(items, Mapping) else None


def _field_type(inputs: Mapping, literals: Mapping, over: str = "over") -> Mapping | None:
    """The type of `field` of `over`'s items; the items' own type without `field`; None when unknown."""
    items = _items(inputs.get(over))
    if "field" not in inputs:
        return items
    properties = items.get("properties") if items is not None else None
    field = literals.get("field")
    return properties.get(field) if isinstance(properties, Mapping) and isinstance(field, str) else None


def _same_list(name: str = "over") -> TypeRule:
    """The rule of a step whose result is some of its list's items: the list's type, without a least length."""

    def rule(inputs: Mapping, literals: Mapping) -> Mapping | None:
        schema = inputs.get(name)
        if not isinstance(schema, Mapping):
            return None
        return {key: value for key, value in schema.items() if key not in ("minItems", "prefixItems")}

    return rule


def _list_of(items: Mapping | None, *bounded_by: object) -> Mapping:
    """A list of `items`, with no more items than the shortest of the lists typed `bounded_by` (when known)."""
    result = {"type": "array", "items": items} if items is not None else dict(LIST)
    bounds = [
        schema["maxItems"] for schema in bounded_by if isinstance(schema, Mapping) and isinstance(schema.get("maxItems"), int)
    ]
    if bounds:
        result["maxItems"] = min(bounds)
    return result


def _both_integers(inputs: Mapping, literals: Mapping) -> Mapping:
    integers = all(isinstance(inputs.get(name), Mapping) and inputs[name].get("type") == "integer" for name in "ab")
    return INTEGER if integers else NUMBER


def _always(schema: Mapping) -> TypeRule:
    return lambda inputs, literals: schema


def _group_type(inputs: Mapping, literals: Mapping) -> Mapping:
    group = {
        "type": "object",
        "properties": {"key": _field_type(inputs, literals) or {}, "items": _same_list()(inputs, literals) or LIST},
        "required": ["key", "items"],
        "additionalProperties": False,
    }
    return _list_of(group, inputs.get("over"))


def _zip_type(inputs: Mapping, literals: Mapping) -> Mapping:
    pair = {
        "type": "object",
        "properties": {side: _items(inputs.get(side)) or {} for side in ("left", "right")},
        "required": ["left", "right"],
        "additionalProperties": False,
    }
    return _list_of(pair, inputs.get("left"), inputs.get("right"))


# --- the declarations


def _pure(
    family: str,
    name: str,
    description: str,
    params: dict,
    result: TypeRule,
    run: Callable[..., object],
    required: list[str] | None = None,
    pipe: str | None = None,
    effects: Effects = PURE,
    values: Mapping | None = None,
) -> PureStep:
    required = [key for key, schema in params.items() if "default" not in schema] if required is None else required
    tool = Tool(
        name=name,
        params=params,
        required=tuple(required),
        pipe=pipe,
        effects=effects,
        provider="pure",
        description=description,
        labels=(),
    )  # its result carries its arguments' labels, none of its own
    return PureStep(
        tool,
        family,
        result,
        run,
        "limits" in inspect.signature(run).parameters,
        tuple((key, schema["default"]) for key, schema in params.items() if "default" in schema),
        values,
    )


def _over(field_says: str) -> dict:
    return {"over": LIST, "field": {**FIELD, "description": field_says}}


_STEPS = (
    _pure(
        "numbers",
        "sum",
        "The sum of the numbers in `over`, or of each item's `field`; 0 for no items.",
        _over("the field to add up"),
        _always(NUMBER),
        _sum,
        required=["over"],
        pipe="over",
        values=NUMBER,
    ),
    _pure(
        "numbers",
        "min",
        "The least of the numbers (or strings) in `over`, or of each item's `field`.",
        _over("the field to compare"),
        _field_type,
        _extreme(min),
        required=["over"],
        pipe="over",
        values=ORDERED,
    ),
    _pure(
        "numbers",
        "max",
        "The greatest of the numbers (or strings) in `over`, or of each item's `field`.",
        _over("the field to compare"),
        _field_type,
        _extreme(max),
        required=["over"],
        pipe="over",
        values=ORDERED,
    ),
    _pure(
        "numbers",
        "average",
        "The mean of the numbers in `over`, or of each item's `field`.",
        _over("the field to average"),
        _always(NUMBER),
        _average,
        required=["over"],
        pipe="over",
        values=NUMBER,
    ),
    _pure(
        "numbers",
        "count",
        "How many items `over` has; with `field`, how many have that field, not null.",
        _over("the field to count"),
        _always({"type": "integer", "minimum": 0}),
        _count,
        required=["over"],
        pipe="over",
    ),
    _pure(
        "numbers",
        "round",
        "`value` rounded to `digits` decimal places (halves to even).",
        {"value": NUMBER, "digits": {"type": "integer", "minimum": 0, "maximum": 15, "default": 0}},
        lambda inputs, literals: INTEGER if literals.get("digits", 0) == 0 else NUMBER,
        _round,
        pipe="value",
    ),
    _pure(
        "numbers", "add", "`a` plus `b`.", {"a": NUMBER, "b": NUMBER}, _both_integers, _arithmetic(lambda a, b: a + b), pipe="a"
    ),
    _pure(
        "numbers",
        "subtract",
        "`a` minus `b`.",
        {"a": NUMBER, "b": NUMBER},
        _both_integers,
        _arithmetic(lambda a, b: a - b),
        pipe="a",
    ),
    _pure(
        "numbers",
        "multiply",
        "`a` times `b`.",
        {"a": NUMBER, "b": NUMBER},
        _both_integers,
        _arithmetic(lambda a, b: a * b),
        pipe="a",
    ),
    _pure(
        "numbers",
        "divide",
        "`a` divided by `b`; fails when `b` is 0.",
        {"a": NUMBER, "b": NUMBER},
        _always(NUMBER),
        _divide,
        pipe="a",
    ),
    _pure(
        "text",
        "split",
        "`text` cut at each `separator`: a list of strings.",
        {"text": STRING, "separator": {"type": "string", "minLength": 1}},
        _always(STRINGS),
        lambda text, separator: text.split(separator),
        pipe="text",
    ),
    _pure(
        "text",
        "join",
        "The strings of `over` joined into one, with `separator` between them.",
        {"over": STRINGS, "separator": {"type": "string", "default": ""}},
        _always(STRING),
        _join,
        pipe="over",
    ),
    _pure(
        "text",
        "lines",
        "The lines of `text`, without their line ends.",
        {"text": STRING},
        _always(STRINGS),
        lambda text: text.splitlines(),
        pipe="text",
    ),
    _pure("text", "lower", "`text` in lower case.", {"text": STRING}, _always(STRING), lambda text: text.lower(), pipe="text"),
    _pure("text", "upper", "`text` in upper case.", {"text": STRING}, _always(STRING), lambda text: text.upper(), pipe="text"),
    _pure(
        "text",
        "trim",
        "`text` without white space at either end.",
        {"text": STRING},
        _always(STRING),
        lambda text: text.strip(),
        pipe="text",
    ),
    _pure(
        "text",
        "replace",
        "`text` with every `old` replaced by `new`.",
        {"text": STRING, "old": {"type": "string", "minLength": 1}, "new": STRING},
        _always(STRING),
        _replace,
        pipe="text",
    ),
    _pure(
        "text",
        "includes",
        "Whether `part` occurs in `text` (as the condition `text contains part` says).",
        {"text": STRING, "part": STRING},
        _always(BOOLEAN),
        lambda text, part: part in text,
        pipe="text",
    ),
    _pure(
        "text",
        "starts_with",
        "Whether `text` begins with `prefix`.",
        {"text": STRING, "prefix": STRING},
        _always(BOOLEAN),
        lambda text, prefix: text.startswith(prefix),
        pipe="text",
    ),
    _pure(
        "text",
        "matches",
        "Whether the regular expression `pattern` matches somewhere in `text` (in time "
        "linear in the text: no backreferences, lookarounds or flags).",
        {"text": STRING, "pattern": STRING},
        _always(BOOLEAN),
        _matches,
        pipe="text",
    ),
    _pure(
        "text",
        "slice",
        "The characters of `value` (or the items, of a list) from `start` up to, not "
        "including, `end`; a negative position counts from the end.",
        {"value": {"type": ["string", "array"]}, "start": {"type": "integer", "default": 0}, "end": {"type": "integer"}},
        _same_list("value"),
        _slice,
        required=["value"],
        pipe="value",
    ),
    _pure(
        "text",
        "parse_json",
        "The value the JSON `text` holds.",
        {"text": STRING},
        lambda inputs, literals: None,
        _parse_json,
        pipe="text",
    ),
    _pure(
        "lists",
        "sort",
        "The items of `over` in order (of each item's `field`), `descending` if asked; items that tie keep their order.",
        {**_over("the field to order by"), "descending": {"type": "boolean", "default": False}},
        _same_list(),
        _sort,
        required=["over"],
        pipe="over",
        values=ORDERED,
    ),
    _pure(
        "lists",
        "take",
        "The first `count` items of `over`.",
        {"over": LIST, "count": {"type": "integer", "minimum": 0}},
        _same_list(),
        lambda over, count: over[:count],
        pipe="over",
    ),
    _pure(
        "lists",
        "skip",
        "The items of `over` after the first `count`.",
        {"over": LIST, "count": {"type": "integer", "minimum": 0}},
        _same_list(),
        lambda over, count: over[count:],
        pipe="over",
    ),
    _pure(
        "lists",
        "unique",
        "The items of `over` without repeats (the same `field`, with `field`), first kept.",
        _over("the field that tells items apart"),
        _same_list(),
        _unique,
        required=["over"],
        pipe="over",
    ),
    _pure(
        "lists",
        "flatten",
        "The items of the lists in `over`, in one list.",
        {"over": {"type": "array", "items": LIST}},
        lambda inputs, literals: _list_of(_items(_items(inputs.get("over")))),
        _flatten,
        pipe="over",
    ),
    _pure(
        "lists",
        "group_by",
        "The items of `over` in groups of the same `field`: a list of `{key, items}`, in the order each key first occurs.",
        _over("the field to group by"),
        _group_type,
        _group_by,
        required=["over", "field"],
        pipe="over",
    ),
    _pure(
        "lists",
        "pluck",
        "Each item's `field`, in a list.",
        _over("the field to take"),
        lambda inputs, literals: _list_of(_field_type(inputs, literals), inputs.get("over")),
        _values,
        required=["over", "field"],
        pipe="over",
    ),
    _pure(
        "lists",
        "zip",
        "The items of `left` and `right` side by side: a list of `{left, right}`, as long as the shorter.",
        {"left": LIST, "right": LIST},
        _zip_type,
        lambda left, right: [{"left": a, "right": b} for a, b in zip(left, right)],
        pipe="left",
    ),
    _pure(
        "dates",
        "today",
        "Today's date (UTC) as the run's clock says, like \"2024-05-31\"; a replay gives the date the run read.",
        {},
        _always(DATE),
        _today,
        effects=CLOCK,
    ),
    _pure(
        "dates",
        "parse_date",
        'The date `text` names, like "2024-05-31": ISO 8601 (a date or a date and time), or as `format` says (`%d/%m/%Y`).',
        {"text": STRING, "format": STRING},
        _always(DATE),
        _parse_date,
        required=["text"],
        pipe="text",
    ),
    _pure(
        "dates",
        "add_days",
        "The date `days` days after `date` (before, when negative).",
        {"date": DATE, "days": INTEGER},
        _always(DATE),
        _add_days,
        pipe="date",
    ),
    _pure(
        "dates",
        "days_between",
        "How many days from `start` to `end` (negative when `end` is earlier).",
        {"start": DATE, "end": DATE},
        _always(INTEGER),
        lambda start, end: (_date(end, "`end`") - _date(start, "`start`")).days,
        pipe="start",
    ),
    _pure(
        "dates",
        "format_date",
        '`date` written as `format` says (`%d %B %Y`: "31 May 2024").',
        {"date": DATE, "format": STRING},
        _always(STRING),
        _format_date,
        pipe="date",
    ),
)

PURE_STEPS: dict[str, PureStep] = {step.tool.name: step for step in _STEPS}
