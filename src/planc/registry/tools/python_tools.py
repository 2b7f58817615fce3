"""Python functions as tools: `@planc.tool` derives a Tool from the function's type hints.

    @planc.tool(read_only=True, deterministic=True, pipe="items")
    def summarize(items: list[dict], style: Literal["bullets", "prose"] = "bullets") -> str: ...

Parameters and the result get JSON Schemas from their annotations (str, int,
float, bool, None, list[...], dict[...], Optional/unions, Literal, TypedDict);
a parameter with a default is optional. The parameter that receives each
call's idempotency key (`idempotency_key="request_id"`, or a keyword-only
parameter named `idempotency_key`) is planc's to fill, not a plan's. planc.toml refers to the function as
`provider = "python:module:function"`; when it declares the tool's `params`
itself, checking a plan never imports the module.
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planc.registry.provenance.labels import UNTRUSTED_ONLY
from planc.registry.tools.tool import Cost, Effects, Tool, provider_address

MARK = "__planc_tool__"
KEY_PARAMETER = "idempotency_key"  # a keyword-only parameter of this name receives the call's idempotency key


def tool(
    function: Callable | None = None,
    *,
    name: str | None = None,
    pipe: str | None = None,
    returns_at_most: str | None = None,
    read_only: bool | None = None,
    deterministic: bool | None = None,
    idempotent: bool | None = None,
    destructive: bool | None = None,
    open_world: bool | None = None,
    usd: float = 0.0,
    latency_ms: float = 0.0,
    idempotency_key: str | None = None,
    labels: typing.Iterable[str] | None = None,
) -> Callable:
    """Declare a Python function as a planc tool (usable bare, `@tool`, or with options).

    `labels` are what its results carry (`untrusted` when left out; `labels=[]` declares it trusted).

    A read-only tool is not destructive unless it says so. An effect option left out takes the
    conservative default; a tool given none declares no effects. `idempotency_key` names the parameter
    that receives each call's idempotency key (a keyword-only `idempotency_key` parameter does without
    naming): the tool deduplicates by it, so a resume may call it again with the same key.
    """
    options = (read_only, deterministic, idempotent, destructive, open_world)

    def declare(function: Callable) -> Callable:
        effects = Effects(
            read_only=bool(read_only),
            deterministic=bool(deterministic),
            idempotent=bool(idempotent),
            destructive=(not read_only) if destructive is None else destructive,
            open_world=open_world is not False,
            declared=any(option is not None for option in options),
        )
        setattr(
            function,
            MARK,
            tool_from_function(
                function,
                name=name,
                pipe=pipe,
                returns_at_most=returns_at_most,
                effects=effects,
                cost=Cost(usd=usd, latency_ms=latency_ms),
                idempotency_key=idempotency_key,
                labels=UNTRUSTED_ONLY if labels is None else labels,
            ),
        )
        return function

    return declare(function) if function is not None else declare


def tool_from_function(
    function: Callable,
    *,
    name: str | None = None,
    pipe: str | None = None,
    returns_at_most: str | None = None,
    effects: Effects = Effects(),
    cost: Cost = Cost(),
    idempotency_key: str | None = None,
    labels: typing.Iterable[str] = UNTRUSTED_ONLY,
) -> Tool:
    """The Tool a function declares through its signature and type hints.

    >>> def send(text: str, *, idempotency_key: str) -> dict: ...
    >>> made = tool_from_function(send)
    >>> dict(made.params), made.required, made.idempotency_key
    ({'text': {'type': 'string'}}, ('text',), 'idempotency_key')
    """
    hints = typing.get_type_hints(function, include_extras=False)
    signature = inspect.signature(function)
    key = idempotency_key or key_parameter(signature)
    if key is not None and key not in signature.parameters:
        raise TypeError(f"{function.__qualname__}: `idempotency_key={key!r}` names no parameter")
    params, required = {}, []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name == key:
            continue
        schema = schema_of(hints.get(param.name, typing.Any))
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif _json_value(param.default):
            schema = {**schema, "default": param.default}
        params[param.name] = schema
    for option, value in (("pipe", pipe), ("returns_at_most", returns_at_most)):
        if value is not None and value not in params:
            raise TypeError(f"{function.__qualname__}: `{option}={value!r}` names no parameter")
    returns = schema_of(hints["return"]) if "return" in hints else None
    qualified = f"python:{function.__module__}:{function.__qualname__}"
    return Tool(
        name=name or function.__name__,
        params=params,
        required=tuple(required),
        pipe=pipe,
        returns=returns or None,
        returns_at_most=returns_at_most,
        effects=effects,
        cost=cost,
        description=inspect.getdoc(function) or "",
        provider=qualified,
        idempotency_key=key,
        labels=labels,
    )


def key_parameter(signature: inspect.Signature) -> str | None:
    """`idempotency_key` when the function has a keyword-only parameter of that name: it takes the call's key."""
    param = signature.parameters.get(KEY_PARAMETER)
    return KEY_PARAMETER if param is not None and param.kind is param.KEYWORD_ONLY else None


def schema_of(annotation: Any) -> dict:
    """The JSON Schema for a type annotation; `{}` (anything) where there is none to give.

    >>> schema_of(list[int])
    {'type': 'array', 'items': {'type': 'integer'}}
    >>> schema_of(typing.Optional[str])
    {'anyOf': [{'type': 'string'}, {'type': 'null'}]}
    """
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null", list: "array", dict: "object"}
    if annotation in simple:
        return {"type": simple[annotation]}
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return {"enum": list(arguments)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_of(argument) for argument in arguments]}
    if origin in (list, tuple, set, frozenset, collections.abc.Sequence):
        items = schema_of(arguments[0]) if arguments else {}  # tuple[int, ...] and list[int] alike
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict:
        values = schema_of(arguments[1]) if len(arguments) == 2 else {}
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if typing.is_typeddict(annotation):
        hints = typing.get_type_hints(annotation)
        return {
            "type": "object",
            "properties": {key: schema_of(value) for key, value in hints.items()},
            "required": sorted(annotation.__required_keys__),
        }
    return {}


def import_provider(provider: str, folder: Path | None = None) -> Any:
    """The function that `provider` ("python:module:function") names, imported with `folder` (the
    folder of planc.toml) importable, as it is when a plan runs."""
    if folder is not None:
        entry = str(folder.resolve())
        if entry not in sys.path:
            sys.path.insert(0, entry)
    module_name, _, qualname = provider_address(provider).partition(":")
    target = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def load_function_tool(provider: str, name: str, folder: Path | None = None) -> Tool:
    """The Tool declared by the `@tool` function that `provider` ("python:module:function") names."""
    target = import_provider(provider, folder)
    declared = getattr(target, MARK, None) or tool_from_function(target)
    return Tool(**{**{field: getattr(declared, field) for field in _FIELDS}, "name": name, "provider": provider})


_FIELDS = [field.name for field in Tool.__attrs_attrs__ if field.init]


def _json_value(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, list, dict))
