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
