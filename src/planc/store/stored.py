"""Stored plans: `planc compile` writes one, `planc run` loads it.

A stored plan is JSON: the source text, its canonical text, the tree with spans, a
fingerprint of every tool it calls, the hash of the file of every declared plan it can
reach (directly or through other plans), the hash of the policy it was checked under,
and a content hash over all of that. Loading reads it strictly (no duplicate key, every
field of its type: `STORED_PLAN`), verifies the hash, migrates an older version through
`MIGRATIONS`, re-checks the source against the current registry and policy, and refuses
a plan whose tools, declared plans or policy changed since it was compiled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping

from planc.syntax.json_input import read_json

FORMAT = "planc.plan"
VERSION = 3  # 2: `plans`, the files of the declared plans it can reach; 3: `params`, its own declared params


def _no_plans_recorded(stored: dict) -> dict:
    """Version 1 did not record the declared plans' files: `plans` is null, unknown, and loading refuses
    such a plan if it calls any declared plan."""
    return {**stored, "plans": None}


def _no_params_recorded(stored: dict) -> dict:
    """Version 2 did not record the `params` of a plan compiled from a declared plan's file: `params` is null,
    and the plan's `$args` are as untyped as they were then."""
    return {**stored, "params": None}


# version -> the function that turns a stored plan of that version into one of the next
# version. A change of format adds one entry here (and keeps the committed fixtures loading).
MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: _no_plans_recorded, 2: _no_params_recorded}

_DIGEST = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
# What a stored plan of the current version holds; anything else is refused before it is used.
STORED_PLAN = {
    "type": "object",
    "required": ["format", "version", "source", "canonical", "ast", "registry", "policy", "plans", "params", "hash"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "source": {"type": "string"},
        "canonical": {"type": "string"},
        "ast": {"type": "object"},
        "registry": {"type": "object", "required": ["fingerprint", "tools"], "additionalProperties": False,
                     "properties": {"fingerprint": _DIGEST,
                                    "tools": {"type": "object", "additionalProperties": _DIGEST}}},
        "policy": {"anyOf": [_DIGEST, {"type": "null"}]},
        "plans": {"anyOf": [{"type": "object", "additionalProperties": _DIGEST}, {"type": "null"}]},
        # the JSON Schema of each run argument, when the plan is a declared plan's file with `params`
        "params": {"anyOf": [{"type": "object", "additionalProperties": {"type": "object"}}, {"type": "null"}]},
        "hash": _DIGEST,
    },
}


class StoredPlanError(Exception):
    """A stored plan that cannot be loaded: not one, tampered with, too new, or stale."""


# One encoder, made once: json.dumps with options makes a new one each call, which costs more than a
# small value's encoding (every tool call's idempotency key is over its canonical JSON).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def canonical_json(data) -> str:
    """`data` as JSON with sorted keys and no optional whitespace: what the hashes are over."""
    return _CANONICAL.encode(data)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Fields a tool's declaration gained after stored plans existed: hashed only when set, so the plans
# compiled before them stay fresh.
LATER_FIELDS = frozenset({"query", "idempotency_key", "labels"})


def _plain(value):
    """A tool declaration's value as JSON-ready data: attrs classes by field (those equality compares),
    mappings, sequences."""
    import attrs

    if attrs.has(type(value)):
        return {field.name: _plain(getattr(value, field.name)) for field in attrs.fields(type(value))
                if field.eq and not (field.name in LATER_FIELDS and getattr(value, field.name) == field.default)}
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, frozenset):  # a tool's labels
        return sorted(value)
    return value


def tool_hash(tool) -> str:
    """The sha256 of the canonical JSON of every field of `tool`'s declaration."""
    return _sha256(canonical_json(_plain(tool)))


def _used_tools(checked) -> dict:
    """name -> Tool of every registry tool the plan calls (the built-in control steps belong to planc)."""
    tools = checked.resolution.tools.values() if checked.resolution else ()
    return {tool.name: tool for tool in tools if tool.provider != "builtin"}


def _fingerprint(tools: Mapping) -> str:
    return _sha256(canonical_json([_plain(tools[name]) for name in sorted(tools)]))


def _policy_hash(policy) -> str | None:
    return _sha256(policy.text) if policy is not None else None


def _content_hash(stored: Mapping) -> str:
    return _sha256(canonical_json({key: value for key, value in stored.items() if key != "hash"}))


def _plan_files(checked, registry) -> dict:
    """name -> the hash of the file of every declared plan `checked` can reach."""
    plans = checked.context.plans if checked.context is not None else {}
    return {name: _sha256(registry.plans.file(name).text or "") for name in sorted(plans)}


def save_plan(checked, *, registry=None, policy=None) -> dict:
    """The stored form of `checked` (a CheckResult without errors), compiled against `registry` and `policy`."""
    from planc.syntax.data import to_data
    from planc.syntax.printer import print_plan

    if not checked.ok:
        raise StoredPlanError("only a plan without errors can be stored: check it first")
    tools = _used_tools(checked)
    stored = {
        "format": FORMAT,
        "version": VERSION,
        "source": checked.source,
        "canonical": print_plan(checked.plan),
        "ast": to_data(checked.plan, spans=True),
        "registry": {"fingerprint": _fingerprint(tools),
                     "tools": {name: tool_hash(tools[name]) for name in sorted(tools)}},
        "policy": _policy_hash(policy),
        "plans": _plan_files(checked, registry),
        "params": dict(checked.context.arguments) if checked.context and checked.context.arguments is not None
        else None,
    }
    # The hash is over the JSON as it is read back, so a value JSON changes (a tuple) still verifies.
    stored = json.loads(canonical_json(stored))
    stored["hash"] = _content_hash(stored)
    return stored


def dump(stored: Mapping) -> str:
    """`stored` as its file's text: canonical JSON (sorted keys, UTF-8), one newline at the end."""
    return json.dumps(stored, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def _read(text: str) -> dict:
    try:
        stored = read_json(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise StoredPlanError(f"not a stored plan: not JSON ({error})") from None
    except ValueError as error:  # a duplicate key: which of its values would count is anybody's guess
        raise StoredPlanError(f"not a stored plan: {error}") from None
    if not isinstance(stored, dict) or stored.get("format") != FORMAT:
        found = stored.get("format") if isinstance(stored, dict) else None
        raise StoredPlanError(f"not a stored plan: `format` is {json.dumps(found)}, not \"{FORMAT}\"")
    version = stored.get("version")
    readable = f"this planc reads versions {', '.join(map(str, _readable()))}"
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoredPlanError(f"stored plan has no valid `version` ({json.dumps(version)}); {readable}")
    if version > VERSION:
        raise StoredPlanError(f"stored plan is version {version}, newer than this planc: {readable} "
                              "(upgrade planc, or compile the plan again)")
    return stored


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    found: dict = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {json.dumps(key)} appears twice in one object")
        found[key] = value
    return found


def _check_fields(stored: dict) -> None:
    """Every field of `stored` (of the current version) of its type, before any is used."""
    from jsonschema.validators import validator_for

    error = next(iter(validator_for(STORED_PLAN)(STORED_PLAN).iter_errors(stored)), None)
    if error is not None:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
        raise StoredPlanError(f"not a valid stored plan: at `{where or '.'}`: {error.message}")


def _readable() -> list[int]:
    return sorted({*MIGRATIONS, VERSION})


def migrate(stored: dict) -> dict:
    """`stored` brought to the current version, one migration at a time; the hash is checked before each."""
    while stored["version"] < VERSION:
        version = stored["version"]
        if version not in MIGRATIONS:
            raise StoredPlanError(f"stored plan is version {version}, which this planc cannot read: "
                                  f"it reads versions {', '.join(map(str, _readable()))}")
        _verify_hash(stored)
        stored = MIGRATIONS[version](stored)
        stored["version"] = version + 1
        stored["hash"] = _content_hash(stored)
    return stored


def _verify_hash(stored: Mapping) -> None:
    found = _content_hash(stored)
    if stored.get("hash") != found:
        raise StoredPlanError(f"stored plan was modified after it was compiled: its content hash does not match "
                              f"(expected {stored.get('hash')}, found {found})")


def stored_source(text: str) -> str:
    """The plan text a stored plan holds, once it is read strictly and its hash verified: what `planc check`,
    `show`, `optimize` and `policy explain` read from a compiled plan (a StoredPlanError otherwise)."""
    stored = migrate(_read(text))
    _check_fields(stored)
    _verify_hash(stored)
    return stored["source"]


def load_plan(text: str, *, registry=None, policy=None, principal: str | None = None, arguments=None,
              approvals: bool = False, written_by=frozenset(), **limits):
    """The CheckResult of the stored plan `text`, re-checked against the current `registry` and `policy`.

    Refused with StoredPlanError when it is not a stored plan, is of an unknown version, was
    modified, has errors now, or a tool it calls or the policy changed since it was compiled. Its run
    arguments are `arguments` (the JSON Schema of each) when given, else the `params` it was compiled with.
    `limits` are the budgets of `check` (`max_usd`, `max_calls`, `max_inferences`); `approvals` and
    `written_by` as `check` takes them.
    """
    from planc.passes.check import check, named_policy

    policy = named_policy(policy, registry)
    stored = migrate(_read(text))
    _check_fields(stored)
    _verify_hash(stored)
    declared = stored["registry"]["tools"]
    stale = []
    for name in sorted(declared):
        tool = registry.lookup(name) if registry is not None else None
        if tool is None:
            stale.append(f"tool `{name}` was removed from the registry")
        elif tool_hash(tool) != declared[name]:
            stale.append(f"the declaration of tool `{name}` changed")
    if stored["policy"] != _policy_hash(policy):
        stale.append("the policy was added" if stored["policy"] is None
                     else "the policy was removed" if policy is None else "the policy changed")
    if stale:
        raise StoredPlanError(f"stored plan is stale: {'; '.join(stale)} since it was compiled; compile it again")
    arguments = arguments if arguments is not None else stored["params"]
    checked = check(stored["source"], registry=registry, policy=policy, arguments=arguments, approvals=approvals,
                    principal=principal, written_by=written_by, **limits)
    errors = [d for d in checked.diagnostics if d.is_error]
    if checked.plan is None or errors:
        listed = "; ".join(f"{d.code} {d.span.start.line}:{d.span.start.column} {d.message}" for d in errors)
        raise StoredPlanError(f"stored plan has errors against the current registry and policy: {listed}")
    files = _plan_files(checked, registry)
    if stored["plans"] is None and files:
        raise StoredPlanError(f"stored plan is stale: it calls the declared plans {', '.join(files)}, and it was "
                              "compiled by a planc that did not record their files; compile it again")
    changed = [name for name in sorted({*files, *(stored["plans"] or {})})
               if stored["plans"] is not None and files.get(name) != stored["plans"].get(name)]
    if changed:
        raise StoredPlanError(f"stored plan is stale: the file of the declared plan{'s' if len(changed) > 1 else ''} "
                              f"{', '.join(f'`{name}`' for name in changed)} changed since it was compiled; "
                              "compile it again")
    now = _used_tools(checked)
    if set(now) != set(declared):  # a name that was a control step, or the other way round
        raise StoredPlanError("stored plan is stale: it calls tools "
                              f"{', '.join(sorted(now)) or '(none)'} now, and called "
                              f"{', '.join(sorted(declared)) or '(none)'} when it was compiled; compile it again")
    return checked
