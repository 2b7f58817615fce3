"""Stored plans: `planc compile` writes one, `planc run` loads it.

A stored plan is JSON: the source text, its canonical text, the tree with spans, a
fingerprint of every tool it calls, the hash of the file of every declared plan it can
reach (directly or through other plans), the hash of the policy it was checked under,
the names of the built-in steps of the language it was written in, and a content hash over
all of that; and the version of planc that compiled it, outside the hash (the same plan compiled by
two versions is the same plan). Loading reads it strictly (no duplicate key, every field of its type:
`STORED_PLAN`), verifies the hash, re-checks the source against the current registry and
policy, and refuses a plan whose tools, declared plans or policy changed since it was compiled.

A plan of an older version is refused to run (`OlderPlan`) until `planc migrate` rewrites its
file through `MIGRATIONS`, in order, each stamping the version it reaches (`migrations.py`). The
plans a run store recorded are records, not files: they are brought up to date in memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from planc.registry.steps.builtins import CONTROL_STEPS
from planc.store.migrations import MIGRATIONS
from planc.store.plan_hashes import StoredPlanError, canonical_json, content_hash, fingerprint, sha256, tool_hash
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from planc.passes.check import CheckResult
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry

FORMAT = "planc.plan"
# 2: `plans`, the files of the declared plans it can reach; 3: `params`, its own declared params;
# 4: `builtins`, the names of the built-in steps when it was compiled; 5: `planc_version`, which planc compiled it
VERSION = 5

_DIGEST = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
# What a stored plan of the current version holds; anything else is refused before it is used.
STORED_PLAN = {
    "type": "object",
    "required": [
        "format",
        "version",
        "source",
        "canonical",
        "ast",
        "registry",
        "policy",
        "plans",
        "params",
        "builtins",
        "planc_version",
        "hash",
    ],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "source": {"type": "string"},
        "canonical": {"type": "string"},
        "ast": {"type": "object"},
        "registry": {
            "type": "object",
            "required": ["fingerprint", "tools"],
            "additionalProperties": False,
            "properties": {"fingerprint": _DIGEST, "tools": {"type": "object", "additionalProperties": _DIGEST}},
        },
        "policy": {"anyOf": [_DIGEST, {"type": "null"}]},
        "plans": {"anyOf": [{"type": "object", "additionalProperties": _DIGEST}, {"type": "null"}]},
        # the JSON Schema of each run argument, when the plan is a declared plan's file with `params`
        "params": {"anyOf": [{"type": "object", "additionalProperties": {"type": "object"}}, {"type": "null"}]},
        # the names of the built-in steps of the language the plan was compiled in: a name that is one
        # now and was not then was a tool of the registry, and `planc migrate` says which one it became
        "builtins": {"type": "array", "items": {"type": "string"}},
        # the version of planc that compiled it (null: compiled before version 5 recorded it); not hashed
        "planc_version": {"type": ["string", "null"]},
        "hash": _DIGEST,
    },
}


class OlderPlan(StoredPlanError):
    """A stored plan of an older version than this planc's, given to run: `planc migrate` brings it up to date."""

    def __init__(self, version: int) -> None:
        self.older = f"stored plan is version {version}, and this planc runs version {VERSION}"
        super().__init__(f"{self.older}: `planc migrate` rewrites its file, each migration stamping the version it reaches")


def _used_tools(checked: CheckResult) -> dict:
    """name -> Tool of every registry tool the plan calls (the built-in control steps belong to planc)."""
    tools = checked.resolution.tools.values() if checked.resolution else ()
    return {tool.name: tool for tool in tools if not tool.builtin}


def _policy_hash(policy: Policy | None) -> str | None:
    return sha256(policy.text) if policy is not None else None


def _plan_files(checked: CheckResult, registry: Registry | None) -> dict:
    """name -> the hash of the file of every declared plan `checked` can reach."""
    plans = checked.context.plans if checked.context is not None else {}
    if not plans:
        return {}
    assert registry is not None  # declared plans are a registry's
    return {name: sha256(registry.plans.file(name).text or "") for name in sorted(plans)}


def save_plan(checked: CheckResult, *, registry: Registry | None = None, policy: Policy | None = None) -> dict:
    """The stored form of `checked` (a CheckResult without errors), compiled against `registry` and `policy`."""
    from planc.syntax.data import to_data
    from planc.syntax.printer import print_plan
    from planc.version import installed_version

    if not checked.ok:
        raise StoredPlanError("only a plan without errors can be stored: check it first")
    assert checked.plan is not None  # it has no errors
    tools = _used_tools(checked)
    stored = {
        "format": FORMAT,
        "version": VERSION,
        "source": checked.source,
        "canonical": print_plan(checked.plan),
        "ast": to_data(checked.plan, spans=True),
        "registry": {"fingerprint": fingerprint(tools), "tools": {name: tool_hash(tools[name]) for name in sorted(tools)}},
        "policy": _policy_hash(policy),
        "plans": _plan_files(checked, registry),
        "params": dict(checked.context.arguments) if checked.context and checked.context.arguments is not None else None,
        "builtins": sorted(CONTROL_STEPS),
        "planc_version": installed_version(),
    }
    # The hash is over the JSON as it is read back, so a value JSON changes (a tuple) still verifies.
    stored = json.loads(canonical_json(stored))
    stored["hash"] = content_hash(stored)
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
        raise StoredPlanError(f'not a stored plan: `format` is {json.dumps(found)}, not "{FORMAT}"')
    version = stored.get("version")
    readable = f"this planc reads versions {', '.join(map(str, _readable()))}"
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoredPlanError(f"stored plan has no valid `version` ({json.dumps(version)}); {readable}")
    if version > VERSION:
        raise StoredPlanError(
            f"stored plan is version {version}, newer than this planc: {readable} (upgrade planc, or compile the plan again)"
        )
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


def migrate(stored: dict, registry: Registry | None = None) -> tuple[dict, list[str]]:
    """`stored` brought to the current version, one migration at a time, each stamping the version it reaches
    (the hash is checked before each, and made again after), and what each changed, in words. A migration
    that cannot convert the plan unambiguously raises MigrationRefused, and nothing is stamped."""
    said = []
    while stored["version"] < VERSION:
        version = stored["version"]
        if version not in MIGRATIONS:
            raise StoredPlanError(
                f"stored plan is version {version}, which this planc cannot read: "
                f"it reads versions {', '.join(map(str, _readable()))}"
            )
        _verify_hash(stored)
        stored, changed = MIGRATIONS[version](stored, registry)
        stored["version"] = version + 1
        stored["hash"] = content_hash(stored)
        said.append(f"version {version} -> {version + 1}" + (f": {changed}" if changed else ""))
    return stored, said


def migrate_plan(text: str, registry: Registry | None = None) -> tuple[str, list[str]]:
    """The text of the stored plan `text` brought to the current version (`planc migrate`), and what each
    migration changed; `registry` is the planc.toml it runs against (a migration may need its tools).
    A StoredPlanError (MigrationRefused for a plan no migration can convert unambiguously) otherwise."""
    stored, said = migrate(_read(text), registry)
    _check_fields(stored)
    _verify_hash(stored)
    return dump(stored), said


def _verify_hash(stored: Mapping) -> None:
    found = content_hash(stored)
    if stored.get("hash") != found:
        raise StoredPlanError(
            f"stored plan was modified after it was compiled: its content hash does not match "
            f"(expected {stored.get('hash')}, found {found})"
        )


def stored_source(text: str) -> str:
    """The plan text a stored plan holds, once it is read strictly and its hash verified: what `planc check`,
    `show`, `optimize` and `policy explain` read from a compiled plan (a StoredPlanError otherwise)."""
    stored, _ = migrate(_read(text))
    _check_fields(stored)
    _verify_hash(stored)
    return stored["source"]


def load_plan(
    text: str,
    *,
    registry: Registry | None = None,
    policy: Policy | None = None,
    principal: str | None = None,
    arguments: Mapping | None = None,
    approvals: bool = False,
    written_by: frozenset[str] = frozenset(),
    recorded: bool = False,
    **limits: Any,
) -> CheckResult:
    """The CheckResult of the stored plan `text`, re-checked against the current `registry` and `policy`.

    Refused with StoredPlanError when it is not a stored plan, is of an unknown version, was
    modified, has errors now, or a tool it calls or the policy changed since it was compiled; with
    OlderPlan when it is of an older version, unless it is `recorded` (a run store's record of the plan
    a run ran, which is brought up to date in memory: a record is never rewritten). Its run
    arguments are `arguments` (the JSON Schema of each) when given, else the `params` it was compiled with.
    `limits` are the budgets of `check` (`max_usd`, `max_calls`, `max_inferences`); `approvals` and
    `written_by` as `check` takes them.
    """
    from planc.passes.check import check, named_policy

    policy = named_policy(policy, registry)
    stored = _read(text)
    if stored["version"] < VERSION and not recorded:
        _verify_hash(stored)
        raise OlderPlan(stored["version"])
    stored, _ = migrate(stored, registry)
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
        stale.append(
            "the policy was added"
            if stored["policy"] is None
            else "the policy was removed"
            if policy is None
            else "the policy changed"
        )
    if stale:
        raise StoredPlanError(f"stored plan is stale: {'; '.join(stale)} since it was compiled; compile it again")
    arguments = arguments if arguments is not None else stored["params"]
    checked = check(
        stored["source"],
        registry=registry,
        policy=policy,
        arguments=arguments,
        approvals=approvals,
        principal=principal,
        written_by=written_by,
        **limits,
    )
    errors = [d for d in checked.diagnostics if d.is_error]
    if checked.plan is None or errors:
        listed = "; ".join(f"{d.code} {d.span.start.line}:{d.span.start.column} {d.message}" for d in errors)
        raise StoredPlanError(f"stored plan has errors against the current registry and policy: {listed}")
    files = _plan_files(checked, registry)
    if stored["plans"] is None and files:
        raise StoredPlanError(
            f"stored plan is stale: it calls the declared plans {', '.join(files)}, and it was "
            "compiled by a planc that did not record their files; compile it again"
        )
    changed = [
        name
        for name in sorted({*files, *(stored["plans"] or {})})
        if stored["plans"] is not None and files.get(name) != stored["plans"].get(name)
    ]
    if changed:
        raise StoredPlanError(
            f"stored plan is stale: the file of the declared plan{'s' if len(changed) > 1 else ''} "
            f"{', '.join(f'`{name}`' for name in changed)} changed since it was compiled; "
            "compile it again"
        )
    now = _used_tools(checked)
    if set(now) != set(declared):  # a name that was a control step, or the other way round
        raise StoredPlanError(
            "stored plan is stale: it calls tools "
            f"{', '.join(sorted(now)) or '(none)'} now, and called "
            f"{', '.join(sorted(declared)) or '(none)'} when it was compiled; compile it again"
        )
    return checked
