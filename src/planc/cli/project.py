"""What a command checks a plan against: the registry of the planc.toml it finds, the policy, the
plan's declared arguments."""

from __future__ import annotations

from pathlib import Path

from planc.cli.usage import UsageError


def find_registry(config: str | None, locked: bool = True, plan: str | None = None):
    """The registry of `--config`; else of the nearest planc.toml above `plan`'s folder, then
    above the working directory (so `planc run examples/incidents/triage.plan` finds the
    example's); else None."""
    from planc.registry.config import ConfigError, find_config, load_registry

    near_plan = find_config(Path(plan).resolve().parent) if plan and plan != "-" else None
    path = Path(config) if config else near_plan or find_config(Path.cwd())
    if path is None:
        return None
    try:
        return load_registry(path, locked=locked)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def find_policy(policy_file: str | None, registry, principal: str):
    """The policy of `--policy`, or of planc.toml's `policy`, or None; and `principal` checked."""
    from planc.passes.policy.load import PolicyError, check_principal, load_policy

    try:
        check_principal(principal)
        path = Path(policy_file) if policy_file else (registry.policy if registry is not None else None)
        return load_policy(path) if path else None
    except PolicyError as error:
        raise UsageError(str(error)) from None


def plan_arguments(registry, path: str):
    """The `params` of the plan file `path` when planc.toml declares it, which type its `$args`."""
    return registry.plan_arguments(Path(path)) if registry and path != "-" else None


def plan_returns(registry, path: str):
    """The `returns` of the plan file `path` when planc.toml declares it: what its result must conform to."""
    declared = registry.plans.for_file(Path(path)) if registry and path != "-" else None
    return declared.returns if declared is not None else None


def principal_for(registry, principal: str | None) -> str:
    """Who the plan runs for: `--principal`, else planc.toml's `principal`, else anonymous; checked."""
    from planc.passes.policy.load import PolicyError, check_principal, principal_of

    principal = principal_of(principal, registry)
    try:
        check_principal(principal)
    except PolicyError as error:
        raise UsageError(str(error)) from None
    return principal


def store_path(store: str | None, registry=None) -> Path:
    """Where the run store is: `--store` (or $PLANC_STORE), else planc.toml's `store`, else `.planc/runs.sqlite`
    beside the planc.toml in use (the one named or found from the working directory), else under the
    working directory. Finding it needs only `store` of planc.toml: a command that reads the store does
    not load the tools."""
    from planc.store.run_store import DEFAULT_PATH

    if store:
        return Path(store)
    if registry is not None and registry.source is not None:
        return registry.store or registry.folder / DEFAULT_PATH
    from planc.registry.config import find_config

    config = find_config(Path.cwd())
    if config is None:
        return DEFAULT_PATH
    import tomllib

    try:
        declared = tomllib.loads(config.read_text(encoding="utf-8")).get("store")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{config}: cannot read where the run store is: {error}") from None
    return config.parent / (declared if isinstance(declared, str) else DEFAULT_PATH)
