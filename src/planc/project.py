"""A project: what a plan is checked and run against, opened one way for the command line and for Python.

A project is the planc.toml found for a path (the one named, else the nearest at or above it), and what
it says: the registry, the policy it names (loaded, so no check forgets it), who plans run for, the
`[budget]`, and where the run store is. `planc check`, `planc run` and the other commands open it
through the functions here (`cli/project.py` only turns their errors into messages), and
`planc.load_project` gives the same to a program:

    >>> import planc
    >>> project = planc.load_project("examples/incidents")
    >>> project.policy is not None, project.principal
    (True, 'User::"anonymous"')
    >>> project.check('search(query: "disk", limit: 5)').ok
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from planc.passes.cost.budget import Budget
from planc.passes.policy.load import Policy, PolicyError, check_principal, load_policy, principal_of
from planc.passes.policy.principals import merged, principal_from_json
from planc.registry.loading.config import find_config, load_registry
from planc.registry.loading.registry import Registry
from planc.registry.settings.declarations import STORE_PATH
from planc.registry.settings.errors import ConfigError

if TYPE_CHECKING:
    from planc.backend.calls.hooks import Hooks
    from planc.backend.run.interpreter import RunResult
    from planc.passes.check import CheckResult


def find_registry(config: str | Path | None, near: str | Path | None = None, *, locked: bool = True) -> Registry | None:
    """The registry of the planc.toml `config`; else of the nearest planc.toml above `near` (a plan file or
    a folder), then above the working directory; else None. A ConfigError when it cannot be loaded."""
    path = Path(config) if config else None
    if path is None and near is not None and str(near) != "-":
        near = Path(near).resolve()
        path = find_config(near if near.is_dir() else near.parent)
    path = path or find_config(Path.cwd())
    return load_registry(path, locked=locked) if path is not None else None


def find_policy(
    policy_file: str | Path | None, registry: Registry | None, principal: str, principals: Sequence[Mapping] = ()
) -> Policy | None:
    """The policy of `policy_file`, else the one planc.toml names, else None; `principal` checked. It judges
    with planc.toml's `[principals]` and `principals` (a run's own, which replace those of the same uid). A
    PolicyError when any of them cannot be used."""
    check_principal(principal)
    path = Path(policy_file) if policy_file else (registry.policy if registry is not None else None)
    declared = registry.principals if registry is not None else ()
    return load_policy(path, merged(declared, principals)) if path else None


def principal_for(registry: Registry | None, principal: str | Mapping | None) -> str:
    """Who plans run for: `principal` (an entity, or a principal with attributes: `given_principal`), else
    planc.toml's, else anonymous; a PolicyError when it is not an entity."""
    principal = principal_of(given_principal(principal)[0], registry)
    check_principal(principal)
    return principal


def given_principal(principal: str | Mapping | None) -> tuple[str | None, tuple[dict, ...]]:
    """Who a caller says a run is for, and the principal with attributes it gives, if any: `principal` is an
    entity (`User::"alice"`) or Cedar's entity JSON, `{"uid": ..., "attrs": ..., "parents": ...}`
    (`principals.principal_from_json`). A PolicyError when it is neither.

    >>> given_principal({"uid": {"type": "User", "id": "bo"}, "attrs": {"org": "acme"}})
    ('User::"bo"', ({'uid': 'User::"bo"', 'attributes': {'org': 'acme'}, 'groups': []},))
    """
    if principal is None or isinstance(principal, str):
        return principal, ()
    try:
        data = principal_from_json(principal)
    except ValueError as error:
        raise PolicyError(None, None, str(error)) from None
    return data["uid"], (data,)


def store_path(store: str | Path | None, registry: Registry | None = None) -> Path:
    """Where the run store is: `store` (`--store`, $PLANC_STORE), else planc.toml's `store`, else
    `.planc/runs.sqlite` beside the planc.toml in use, else under the working directory ("postgresql:$NAME":
    a PostgreSQL store, the DSN in $NAME). Without a registry only `store` of the nearest planc.toml is read
    (its tools are not loaded); a ConfigError when it cannot be."""
    if store:
        return Path(store)
    if registry is not None and registry.source is not None:
        return registry.store or registry.folder / STORE_PATH
    config = find_config(Path.cwd())
    return STORE_PATH if config is None else store_of(config)


def store_of(config: Path) -> Path:
    """Where the run store of the planc.toml `config` is, its `store` read without loading the rest of it; a
    ConfigError when it cannot be read."""
    import tomllib

    try:
        declared = tomllib.loads(config.read_text(encoding="utf-8")).get("store")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(config, None, f"cannot read where the run store is: {error}") from None
    if isinstance(declared, str) and declared.startswith("postgresql:"):  # a database, not a file beside it
        return Path(declared)
    return config.parent / (declared if isinstance(declared, str) else STORE_PATH)


# How far below a folder `stores_below` looks, and at most how many folders: a hint, never a long search.
BELOW_DEPTH, BELOW_FOLDERS = 3, 2000


def stores_below(folder: Path) -> list[Path]:
    """The run store files that exist of the planc.toml files below `folder` (not in it), those of the nearest
    first: where runs are when a command run in `folder` finds none there (the demo's, from the repository).
    Hidden folders and node_modules are not looked in; a planc.toml that cannot be read is passed over."""
    level, visited = [folder], 0
    for _ in range(BELOW_DEPTH):
        level = [child for parent in level for child in _subfolders(parent)][: max(BELOW_FOLDERS - visited, 0)]
        visited += len(level)
        found = [store for store in map(_existing_store, level) if store is not None]
        if found or not level:
            return found
    return []


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(
            entry
            for entry in folder.iterdir()
            if entry.is_dir() and not entry.name.startswith(".") and entry.name not in ("node_modules", "__pycache__")
        )
    except OSError:
        return []


def _existing_store(folder: Path) -> Path | None:
    """The run store file of the planc.toml in `folder`, when both exist."""
    config = folder / "planc.toml"
    try:
        store = store_of(config) if config.is_file() else None
    except ConfigError:
        return None
    return store if store is not None and not str(store).startswith("postgresql:") and store.is_file() else None


def with_learned_shapes(registry: Registry | None, store: Path) -> Registry | None:
    """`registry` with the shapes the run store at `store` learned of its tools' results (none when there is
    no store there: nothing is made). A RunStoreError when the store cannot be read."""
    if registry is None or not any(tool.learns for tool in registry.tools.values()):
        return registry
    from planc.store.run_store import learned_shapes

    return registry.learning(learned_shapes(store))


@attrs.frozen
class Project:
    """What a planc.toml says a plan is checked and run against: `planc check` and `planc run` use the same."""

    registry: Registry | None
    policy: Policy | None
    principal: str
    budget: Budget
    store: Path

    def arguments(self, path: str | Path | None) -> Mapping[str, Mapping] | None:
        """The `params` of the plan file `path` when planc.toml declares it (`[plans.NAME]`), which type `$args`."""
        return self.registry.plan_arguments(Path(path)) if self.registry is not None and path else None

    def check(
        self,
        text: str,
        *,
        path: str | Path | None = None,
        extract_plan: bool = False,
        max_usd: float | None = None,
        max_calls: int | None = None,
        max_inferences: int | None = None,
        approvals: bool = False,
        written_by: frozenset[str] = frozenset(),
    ) -> CheckResult:
        """`text` checked as `planc check` checks it (read from `path`, which gives a declared plan its
        `params`): with the registry, policy and principal of the project, and its `[budget]` where
        `max_usd`, `max_calls` and `max_inferences` (the commands' `--max-*`) say nothing. `approvals` and
        `written_by` as `planc.check` takes them."""
        from planc.passes.check import check

        return check(
            text,
            extract_plan=extract_plan,
            registry=self.registry,
            arguments=self.arguments(path),
            policy=self.policy,
            principal=self.principal,
            max_usd=max_usd,
            max_calls=max_calls,
            max_inferences=max_inferences,
            approvals=approvals,
            written_by=written_by,
        )

    def run(
        self,
        checked: CheckResult,
        *,
        arguments: Mapping | None = None,
        hooks: Hooks | None = None,
        record: bool = True,
        **options: Any,
    ) -> RunResult:
        """Run `checked` as `planc run` does: recorded in the project's run store (unless `record` is false),
        with its registry, policy and principal. `options` go to `planc.run` (schedule, executor, ...)."""
        from planc.backend.run.launch import run

        return run(checked, **self._run_options(arguments, hooks, record, options))

    async def run_async(
        self,
        checked: CheckResult,
        *,
        arguments: Mapping | None = None,
        hooks: Hooks | None = None,
        record: bool = True,
        **options: Any,
    ) -> RunResult:
        """`run`, awaited in the running event loop (`planc.run_async`: `approve=True` makes every effectful
        call wait in the run store for `approve_async`)."""
        from planc.backend.run.launch import run_async

        return await run_async(checked, **self._run_options(arguments, hooks, record, options))

    async def approve_async(
        self, run: str, *, deny: bool = False, call: int | None = None, hooks: Hooks | None = None
    ) -> RunResult:
        """Answer the call run `run` waits on in the project's run store, and continue the run
        (`planc.approve_async`, with the project's registry and policy)."""
        from planc.backend.calls.hooks import Hooks
        from planc.backend.run.approved_run import approve_async

        return await approve_async(
            run, store=self.store, deny=deny, call=call, hooks=hooks or Hooks(), registry=self.registry, policy=self.policy
        )

    def _run_options(self, arguments: Mapping | None, hooks: Hooks | None, record: bool, options: dict) -> dict:
        from planc.backend.calls.hooks import Hooks

        return {
            "arguments": arguments,
            "hooks": hooks or Hooks(),
            "registry": self.registry,
            "policy": self.policy,
            "principal": self.principal,
            "store": self.store if record else None,
            **options,
        }


def load_project(
    path: str | Path = ".",
    *,
    config: str | Path | None = None,
    policy: str | Path | None = None,
    principal: str | Mapping | None = None,
    store: str | Path | None = None,
) -> Project:
    """The project of `path` (a planc.toml, a plan file or a folder: the nearest planc.toml at or above
    it), as the commands open it; `config`, `policy`, `principal` (an entity, or a principal with attributes
    and groups, as `--principal-json` gives it) and `store` as their options say otherwise; its tools with
    the shapes its run store learned (`with_learned_shapes`). A ConfigError or PolicyError when planc.toml or
    the policy cannot be used, a RunStoreError when the store cannot be read."""
    path = Path(path)
    registry = find_registry(config or (path if path.is_file() and path.suffix == ".toml" else None), path)
    uid, given = given_principal(principal)
    who = principal_for(registry, uid)
    runs = store_path(store, registry)
    found = find_policy(policy, registry, who, given)
    return Project(
        with_learned_shapes(registry, runs),
        found,
        who,
        Budget.of(None, None, None, registry.budget if registry is not None else None),
        runs,
    )
