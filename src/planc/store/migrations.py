"""The stored-plan migrations, in order: each turns a stored plan of one version into one of the next.

`MIGRATIONS` maps a version to its migration: `(stored, registry) -> (stored, what changed)`, the
words empty when nothing but the format changed. `stored.migrate` runs them one after the other
and stamps each version reached. A migration that cannot convert a plan unambiguously raises
MigrationRefused, naming what to change; then nothing is stamped and no file is written. A
change of the format adds one entry here, and a fixture compiled before it that must migrate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from planc.registry.steps.builtins import CONTROL_STEPS
from planc.store.plan_hashes import StoredPlanError, fingerprint, tool_hash

if TYPE_CHECKING:
    from planc.registry.loading.registry import Registry
    from planc.syntax import ast


class MigrationRefused(StoredPlanError):
    """A stored plan that no migration can convert unambiguously: the message says what to change."""


def _no_plans_recorded(stored: dict, registry: Registry | None) -> tuple[dict, str]:
    """Version 1 did not record the declared plans' files: `plans` is null, unknown, and loading refuses
    such a plan if it calls any declared plan."""
    return {**stored, "plans": None}, ""


def _no_params_recorded(stored: dict, registry: Registry | None) -> tuple[dict, str]:
    """Version 2 did not record the `params` of a plan compiled from a declared plan's file: `params` is null,
    and the plan's `$args` are as untyped as they were then."""
    return {**stored, "params": None}, ""


def _builtin_names(stored: dict, registry: Registry | None) -> tuple[dict, str]:
    """Version 3 did not record the language's built-in steps, and the language gained some (`count`, `sum`,
    `includes`, ...) while some registries had tools of those names (the incidents example's `count`, now
    `tally`). A call of such a name meant the tool: it is renamed in the text to the registry's tool that
    has the declaration the old name had, when exactly one has it; otherwise the plan is refused."""
    tools = stored["registry"]["tools"]
    clashes = sorted(name for name in tools if name in CONTROL_STEPS)
    if not clashes:
        return {**stored, "builtins": sorted(CONTROL_STEPS)}, ""
    from planc.syntax.parser import parse
    from planc.syntax.steps import walk_steps

    parsed = parse(stored["source"])
    if parsed.plan is None:
        raise MigrationRefused("stored plan's text does not parse: compile the plan again")
    calls = {name: [path for step, path in walk_steps(parsed.plan.pipelines) if step.tool.text == name] for name in clashes}
    if registry is None:
        raise MigrationRefused(
            f"{_calling(clashes[0], calls)}: which tool it became is in a planc.toml: "
            "run `planc migrate` where the plan's planc.toml is, or with --config"
        )
    renames = {name: _renamed(name, tools[name], registry, calls) for name in clashes}
    for name, hashed in tools.items():
        tool = registry.lookup(renames.get(name, name))
        if name not in renames and (tool is None or tool_hash(tool) != hashed):
            raise MigrationRefused(
                f"the tool `{name}` changed or was removed since the plan was compiled, so its "
                "calls cannot be renamed safely: compile the plan again from its text"
            )
    source = _renamed_calls(stored["source"], parsed.plan, renames)
    renamed = {renames.get(name, name): registry.lookup(renames.get(name, name)) for name in tools}
    done = "; ".join(
        f"`{old}` is a built-in step now: its calls (step{'s' if len(calls[old]) > 1 else ''} "
        f"{', '.join(calls[old])}) call `{new}`"
        for old, new in renames.items()
    )
    return {
        **stored,
        **_texts(source),
        "builtins": sorted(CONTROL_STEPS),
        "registry": {
            "fingerprint": fingerprint(renamed),
            "tools": {name: tool_hash(tool) for name, tool in sorted(renamed.items()) if tool is not None},
        },
    }, done  # each is: it was looked up above


def _calling(name: str, calls: dict) -> str:
    where = calls[name]
    steps = f"step{'s' if len(where) > 1 else ''} {', '.join(where)}" if where else "the plan"
    return f"{steps} call{'s' if len(where) == 1 else ''} `{name}`, a tool when the plan was compiled and a built-in step now"


def _renamed(name: str, hashed: str, registry: Registry, calls: dict) -> str:
    """The registry's tool whose declaration is the one `name` had, under its new name; MigrationRefused
    when none or several have it."""
    same = sorted(
        tool.name
        for tool in registry.tools.values()
        if tool.name not in CONTROL_STEPS and tool_hash(attrs.evolve(tool, name=name)) == hashed
    )
    if len(same) == 1:
        return same[0]
    if not same:
        raise MigrationRefused(
            f"{_calling(name, calls)}, and no tool of {registry.source} has the declaration "
            f"`{name}` had: rename the tool in planc.toml (keeping its declaration) and migrate "
            "again, or change the calls in the plan's text and compile it again"
        )
    raise MigrationRefused(
        f"{_calling(name, calls)}, and the tools {', '.join(f'`{n}`' for n in same)} of "
        f"{registry.source} all have the declaration `{name}` had, so which one the plan means "
        "is ambiguous: split them (change or remove all but one), or change the calls in the "
        "plan's text and compile it again"
    )


def _renamed_calls(source: str, plan: ast.Plan, renames: dict[str, str]) -> str:
    """`source` with the tool name of every step that calls a renamed tool replaced, nothing else touched."""
    from planc.syntax.steps import walk_steps

    spans = sorted(
        (step.tool.span.start_offset, step.tool.span.end_offset, renames[step.tool.text])
        for step, _ in walk_steps(plan.pipelines)
        if step.tool.text in renames
    )
    for start, end, name in reversed(spans):
        source = source[:start] + name + source[end:]
    return source


def _texts(source: str) -> dict:
    """The fields of a stored plan that its text decides: the text, its canonical form, its tree."""
    from planc.syntax.data import to_data
    from planc.syntax.parser import parse
    from planc.syntax.printer import print_plan

    plan = parse(source).plan
    assert plan is not None  # a migration writes a text that parses
    return {"source": source, "canonical": print_plan(plan), "ast": to_data(plan, spans=True)}


def _no_planc_version_recorded(stored: dict, registry: object) -> tuple[dict, str]:
    """Version 4 did not record which planc compiled the plan: `planc_version` is null (it is outside the
    content hash, so the plan's hash stays what it was)."""
    return {**stored, "planc_version": None}, ""


# version -> the migration that turns a stored plan of that version into one of the next.
MIGRATIONS: dict[int, Callable[[dict, Registry | None], tuple[dict, str]]] = {
    1: _no_plans_recorded,
    2: _no_params_recorded,
    3: _builtin_names,
    4: _no_planc_version_recorded,
}
