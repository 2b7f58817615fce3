"""What a command checks a plan against: the registry of the planc.toml it finds, the policy, the
plan's declared arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry


def find_registry(config: str | None, locked: bool = True, plan: str | None = None) -> Registry | None:
    """The registry of `--config`; else of the nearest planc.toml above `plan`'s folder, then
    above the working directory (so `planc run examples/incidents/triage.plan` finds the
    example's); else None. Opened as `planc.load_project` opens it (`planc.project`)."""
    from planc import project
    from planc.registry.loading.config import ConfigError

    try:
        return project.find_registry(config, plan, locked=locked)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def fmt_width(plan: str) -> int:
    """The line width `planc fmt` keeps `plan` (a file, or `-`) within: `[fmt] width` of the nearest planc.toml
    above it (of the working directory for `-`), read without loading the registry; else 100."""
    from planc.registry.settings.config_file import find_config
    from planc.syntax.printer import WIDTH

    config = find_config(Path.cwd() if plan == "-" else Path(plan).resolve().parent)
    if config is None:
        return WIDTH
    import tomllib

    from planc.registry.settings.format_settings import FmtTableError
    from planc.registry.settings.format_settings import fmt_width as width_of

    try:
        return width_of(tomllib.loads(config.read_text(encoding="utf-8")).get("fmt", {}))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, FmtTableError):
        find_registry(str(config), locked=False)  # said as every command says it: `planc.toml:LINE: message`
        raise  # not reached: the registry refuses what this refuses


def with_learned_shapes(registry: Registry | None, store: str | None) -> Registry | None:
    """`registry` with the shapes the run store (`--store`, else the project's) learned of its tools' results,
    which the check warns by and the planner is shown (`planc.project.with_learned_shapes`)."""
    if registry is None or not any(tool.learns for tool in registry.tools.values()):
        return registry  # nothing to learn: the store is not looked for (nor SQLite loaded)
    from planc import project
    from planc.store.run_store import RunStoreError

    try:
        return project.with_learned_shapes(registry, store_path(store, registry))
    except RunStoreError as error:
        raise UsageError(str(error)) from None


def find_policy(
    policy_file: str | None, registry: Registry | None, principal: str, principals: Sequence[Mapping] = ()
) -> Policy | None:
    """The policy of `--policy`, or of planc.toml's `policy`, or None, judging with planc.toml's `[principals]`
    and `principals` (`--principal-json`'s); and `principal` checked."""
    from planc import project
    from planc.passes.policy.load import PolicyError

    try:
        return project.find_policy(policy_file, registry, principal, principals)
    except PolicyError as error:
        raise UsageError(str(error)) from None


def plan_arguments(registry: Registry | None, path: str) -> Mapping[str, Mapping] | None:
    """The `params` of the plan file `path` when planc.toml declares it, which type its `$args`."""
    return registry.plan_arguments(Path(path)) if registry and path != "-" else None


def plan_returns(registry: Registry | None, path: str) -> Mapping | None:
    """The `returns` of the plan file `path` when planc.toml declares it: what its result must conform to."""
    declared = registry.plans.for_file(Path(path)) if registry and path != "-" else None
    return declared.returns if declared is not None else None


def principal_for(registry: Registry | None, principal: str | Mapping | None) -> str:
    """Who the plan runs for: `--principal`, else planc.toml's `principal`, else anonymous; checked."""
    from planc import project
    from planc.passes.policy.load import PolicyError

    try:
        return project.principal_for(registry, principal)
    except PolicyError as error:
        raise UsageError(str(error)) from None


def principal_given(principal: str | None, principal_json: str | None) -> tuple[str | None, tuple]:
    """`--principal`, and the principal with attributes and groups of `--principal-json` (Cedar's entity JSON, whose
    `uid` is then who the plan runs for): a UsageError when the JSON is not one, or names someone else than
    `--principal`; a warning on standard error for the old names of its parts (`attributes`, `groups`)."""
    import warnings

    from planc import project
    from planc.passes.policy.load import PolicyError
    from planc.syntax.json_input import read_json

    if principal_json is None:
        return principal, ()
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", DeprecationWarning)
            uid, given = project.given_principal(read_json(principal_json, max_bytes=1024 * 1024))
    except (ValueError, PolicyError) as error:
        raise UsageError(f"--principal-json: {error}") from None
    for warning in said:  # a user of the command is told, as a program using the API is by the warning
        click.echo(f"warning: --principal-json: {warning.message}", err=True)
    if principal is not None and principal != uid:
        raise UsageError(f"--principal {principal} and --principal-json's uid {uid} name two principals: give one")
    return uid, given


def store_path(store: str | Path | None, registry: Registry | None = None) -> Path:
    """Where the run store is (`planc.project.store_path`): `--store` (or $PLANC_STORE), else planc.toml's
    `store`, else `.planc/runs.sqlite` beside the planc.toml in use, else under the working directory."""
    from planc import project
    from planc.registry.loading.config import ConfigError

    try:
        return project.store_path(store, registry)
    except ConfigError as error:
        raise UsageError(str(error)) from None
