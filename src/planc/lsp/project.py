"""What a document is checked against: the nearest planc.toml above its file and that file's policy,
as `planc check FILE` finds them (but never the server's working directory, which an editor picks).

A planc.toml is loaded once, and again when it, its lock file or its policy file changes on disk:
the check on every keystroke then costs a few `stat` calls, and an edit to planc.toml shows in the
next check of every plan under it. A planc.toml or policy that cannot be used does not stop the
check: the document is checked without it, and `problem` says why, for the editor to show.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path

import attrs

from planc.passes.policy.load import Policy, PolicyError, load_policy
from planc.registry.loading.config import find_config, load_registry
from planc.registry.loading.registry import Registry
from planc.registry.mcp.lock import lock_path
from planc.registry.settings.errors import ConfigError


@attrs.frozen
class Project:
    registry: Registry | None = None
    policy: Policy | None = None
    problem: str | None = None  # why planc.toml or its policy is left out, `file:line: message`
    policy_file: Path | None = None  # the policy planc.toml names, watched even when it is left out

    def arguments(self, document: Path | None) -> Mapping[str, Mapping] | None:
        """The `params` that type the document's `$args`, when planc.toml declares it as a plan."""
        return self.registry.plan_arguments(document) if self.registry and document else None


NO_PROJECT = Project()


class Projects:
    """The projects of the documents open, by planc.toml, each with the files it was loaded from."""

    def __init__(self) -> None:
        self._loaded: dict[Path, tuple[dict[Path, tuple | None], Project]] = {}

    def for_document(self, document: Path | None) -> Project:
        """The project of the file `document` (None: a document with no file, checked on its own)."""
        config = find_config(document.parent) if document is not None else None
        if config is None:
            return NO_PROJECT
        loaded = self._loaded.get(config)
        if loaded is not None and all(_stamp(path) == stamp for path, stamp in loaded[0].items()):
            return loaded[1]
        project = _load(config)
        watched = [config, lock_path(config)]
        if project.policy_file is not None:
            watched.append(project.policy_file)
        self._loaded[config] = ({path: _stamp(path) for path in watched}, project)
        return project


def _stamp(path: Path) -> tuple | None:
    """When `path` last changed and its size (None: it does not exist), to tell when to load it again."""
    try:
        status = path.stat()
        return status.st_mtime_ns, status.st_size
    except OSError:
        return None


# The largest planc.toml, lock or policy the server reads; past it, or not a regular file (a FIFO, a
# device), it is not read at all: nothing may stall the server.
MAX_FILE_BYTES = 8 * 1024 * 1024


def _unreadable(path: Path) -> str | None:
    """Why the server does not read `path` (None: it may, or it is absent and its reader says so)."""
    try:
        status = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return f"{path}: not a regular file, so it is not read"
    if status.st_size > MAX_FILE_BYTES:
        return f"{path}: {status.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} the language server reads"
    return None


def _load(config: Path) -> Project:
    problem = _unreadable(config) or _unreadable(lock_path(config))
    if problem is not None:
        return Project(problem=problem)
    try:
        registry = load_registry(config)
    except ConfigError as error:
        return Project(problem=str(error))
    if registry.policy is None:
        return Project(registry)
    named = registry.policy
    # A policy that cannot be used is shown, and the document checked without it (the registry too, so
    # that `check` does not load it again).
    problem = _unreadable(named)
    if problem is not None:
        return Project(attrs.evolve(registry, policy=None), problem=problem, policy_file=named)
    try:
        return Project(registry, load_policy(named, registry.principals), policy_file=named)
    except PolicyError as error:
        return Project(attrs.evolve(registry, policy=None), problem=str(error), policy_file=named)
