"""JSON Schemas and values in words, for messages that say what was expected and what was found."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from planc.registry.tools.schemas import Missing, kinds

NOUNS = {
    "string": ("a string", "strings"),
    "integer": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "array": ("a list", "lists"),
    "object": ("an object", "objects"),
    "boolean": ("true or false", "booleans"),
    "null": ("null", "nulls"),
}
SHOWN = 6  # values or fields listed before "..."


def describe(schema: object) -> str:
    """What a value of `schema` is, in words.

    >>> describe({"type": "integer", "minimum": 1, "maximum": 100})
    'an integer from 1 to 100'
    >>> describe({"type": "array", "items": {"type": "string"}, "minItems": 1})
    'a non-empty list of strings'
    >>> describe({"enum": ["low", "high"]})
    'one of "low", "high"'
    """
    return _describe(schema, plural=False)


def describe_value(value: object) -> str:
    """A value as a message names what it found.

    >>> describe_value("ten")
    'the string "ten"'
    >>> describe_value([1, 2])
    'a list of 2 items'
    """
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {json.dumps(value)}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, list):
        return "an empty list" if not value else f"a list of {len(value)} item{'s' if len(value) > 1 else ''}"
    if isinstance(value, dict):
        return "an empty object" if not value else f"an object with {_listed(value, 'the key', 'the keys')}"
    return type(value).__name__


def means_length(key: str | int, missing: Missing) -> bool:
    """Whether `.key`, read from a list or a string (which have no fields but `.length`), surely means `.length`:
    another language's word for it, or a slip of the keys (`lenght`, `lengh`).

    >>> means_length("lenght", Missing("a list")), means_length("size", Missing("a string"))
    (True, True)
    >>> means_length("title", Missing("a list")), means_length("lenght", Missing("an object", ("id",)))
    (False, False)
    """
    if missing.what not in ("a list", "a string") or not isinstance(key, str):
        return False
    if key.lower() in ("count", "size", "len"):
        return True
    import difflib  # only a plan with this error pays for it

    return difflib.SequenceMatcher(None, key.lower(), "length").ratio() >= 0.8


def missing_hints(written: str, key: str | int, missing: Missing) -> list[str]:
    """The hints for reading `.key` (or `[key]`) from `written`, which has nothing there.

    >>> missing_hints("$1", "titel", Missing("an object", ("id", "title")))
    ['did you mean `title`?', 'the fields of `$1` are `id`, `title`']
    >>> missing_hints("$1", "id", Missing("an object", ("ID", "name")))[0]
    'did you mean `ID`?'
    >>> missing_hints("$a", "lenght", Missing("a list"))
    ['did you mean `$a.length`?']
    """
    if isinstance(key, int):
        return []
    if missing.fields:
        import difflib  # only a plan with this error pays for it

        # Compared without case, so `ID` is offered for `id` as `title` is for `titel`.
        lowered = {field.lower(): field for field in reversed(missing.fields)}
        close = [lowered[found] for found in difflib.get_close_matches(key.lower(), lowered, n=3, cutoff=0.6)]
        hints = [f"did you mean {' or '.join(f'`{name}`' for name in close)}?"] if close else []
        hints.append(f"the fields of `{written}` are {_names(missing.fields, limit=20)}")
        return hints
    if means_length(key, missing):
        return [f"did you mean `{written}.length`?"]
    if missing.what == "a list":
        return [f"`{written}[0].{key}` reads the first item's `{key}`; `map` over `{written}` reads it from every item"]
    return []


def _describe(schema: object, plural: bool) -> str:
    if not isinstance(schema, Mapping):
        return "values" if plural else "any value"
    mark = schema.get("x-planc")
    if mark == "condition":
        return "conditions" if plural else "a condition"
    if mark == "block":
        return "blocks of steps" if plural else "a block of steps `{ ... }`"
    if "const" in schema:
        return ("values equal to " if plural else "exactly ") + json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list):
        return ("values, each " if plural else "") + _one_of(schema["enum"])
    declared = schema.get("type")
    if isinstance(declared, list) and declared:
        return " or ".join(_describe({**schema, "type": kind}, plural) for kind in _nulls_last(declared))
    branches = schema.get("anyOf") or schema.get("oneOf")
    if declared is None and isinstance(branches, list) and branches:
        return " or ".join(dict.fromkeys(_describe(branch, plural) for branch in branches))
    found = kinds(schema)
    if declared is None and found is not None and len(found - {"integer"}) == 1:
        declared = next(iter(found - {"integer"})) if found != {"integer"} else "integer"
    if not isinstance(declared, str) or declared not in NOUNS:
        return "values" if plural else "any value"
    noun = NOUNS[declared][plural]
    if declared in ("integer", "number"):
        return _with(noun, _bounds(schema))
    if declared == "string":
        return _with(noun, _string_limits(schema))
    if declared == "array":
        return _list_words(schema, plural)
    if declared == "object":
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            return f"{noun} with {_listed(properties, 'the field', 'the fields')}"
    return noun


def _with(noun: str, detail: str) -> str:
    return f"{noun} {detail}" if detail else noun


def _bounds(schema: Mapping) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    numbers = (int, float)
    if isinstance(low, numbers) and isinstance(high, numbers):
        words = f"from {low} to {high}"
    else:
        parts = []
        if isinstance(low, numbers):
            parts.append(f"at least {low}")
        elif isinstance(above, numbers) and not isinstance(above, bool):
            parts.append(f"greater than {above}")
        if isinstance(high, numbers):
            parts.append(f"at most {high}")
        elif isinstance(below, numbers) and not isinstance(below, bool):
            parts.append(f"less than {below}")
        words = " and ".join(parts)
        if words.startswith("at"):
            words = "of " + words
    step = schema.get("multipleOf")
    if isinstance(step, numbers):
        words = f"{words}, a multiple of {step}" if words else f"that is a multiple of {step}"
    return words


def _string_limits(schema: Mapping) -> str:
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    parts = []
    if isinstance(shortest, int) and isinstance(longest, int):
        parts.append(f"of {shortest} to {longest} characters")
    elif isinstance(longest, int):
        parts.append(f"of at most {longest} characters")
    elif isinstance(shortest, int) and shortest > 1:
        parts.append(f"of at least {shortest} characters")
    elif shortest == 1:
        parts.append("that is not empty")
    if isinstance(schema.get("pattern"), str):
        parts.append(f"matching `{schema['pattern']}`")
    if isinstance(schema.get("format"), str):
        parts.append(f"in the format {schema['format']}")
    return " ".join(parts)


def _list_words(schema: Mapping, plural: bool) -> str:
    items = schema.get("items")
    what = _describe(items, plural=True) if isinstance(items, Mapping) and items else "items"
    shortest, longest = schema.get("minItems"), schema.get("maxItems")
    if isinstance(shortest, int) and isinstance(longest, int):
        count = f"{shortest} " if shortest == longest else f"{shortest} to {longest} "
    elif isinstance(longest, int):
        count = f"at most {longest} "
    elif isinstance(shortest, int) and shortest > 1:
        count = f"at least {shortest} "
    else:
        count = ""
    if shortest == 1 and longest is None:
        return f"non-empty lists of {what}" if plural else f"a non-empty list of {what}"
    if what == "items" and not count:
        return "lists" if plural else "a list"
    return f"lists of {count}{what}" if plural else f"a list of {count}{what}"


def _one_of(values: list) -> str:
    shown = ", ".join(json.dumps(value, ensure_ascii=False) for value in values[:SHOWN])
    if len(values) == 1:
        return f"exactly {shown}"
    return f"one of {shown}" + (", ..." if len(values) > SHOWN else "")


def _listed(keys: Iterable[str], one: str, many: str) -> str:
    names = list(keys)
    return f"{one if len(names) == 1 else many} {_names(names)}"


def _names(names: Iterable[str], limit: int = SHOWN) -> str:
    names = list(names)
    return ", ".join(f"`{name}`" for name in names[:limit]) + (", ..." if len(names) > limit else "")


def _nulls_last(declared: list) -> list:
    return [kind for kind in declared if kind != "null"] + [kind for kind in declared if kind == "null"]
