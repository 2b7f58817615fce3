"""A run store that cannot be opened, read or written: one line that names the store and says why.

SQLite's own words ("database is locked", "file is not a database") are kept in parentheses
after planc's, which say what they mean for the user: another process holds the store, the disk
is full, the file is read-only, or it is not a run store (or is damaged).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from planc.run_error import RunError

BUSY_TIMEOUT_S = 5.0  # how long a write waits for another process that holds the store


class RunStoreError(RunError):
    """A run store that cannot be opened, read or written, or a run it does not hold. During a run it
    fails the run like any other error: nothing starts after it."""


class RunLeased(RunStoreError):
    """Another live process records into the run (store/lease.py)."""


def refuse_newer(found: int, current: int, where: object) -> None:
    """A RunStoreError when the store at `where` has schema version `found`, above this planc's `current`:
    this planc can neither read nor migrate it, and must not write to it."""
    if found > current:
        raise RunStoreError(
            f"{where}: a newer planc wrote this run store (its schema is version {found}; this "
            f"planc reads up to version {current}): it is left untouched; use that planc, "
            "or another --store"
        )


def store_failure(path: Path, doing: str, error: Exception) -> RunStoreError:
    """`error` (SQLite's, the file system's, or PostgreSQL's), met trying to `doing` ("open", "read", "write to")
    the store at `path`, as one line."""
    if cannot_write(error) and _on_read_only_filesystem(path):  # SQLite says only that it cannot open it
        return RunStoreError(f"{path}: cannot {doing} the run store: it is on a read-only filesystem ({error})")
    return RunStoreError(f"{path}: cannot {doing} the run store: {why(error)}")


def _on_read_only_filesystem(path: Path) -> bool:
    for place in (path, *path.parents):
        if place.exists():
            try:
                return bool(os.statvfs(place).f_flag & os.ST_RDONLY)
            except OSError:
                return False
    return False


def why(error: Exception) -> str:
    if isinstance(error, OSError):
        return error.strerror or str(error)
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        meaning = f"another process is writing to it, and has held it for more than {BUSY_TIMEOUT_S:g} s"
    elif name == "SQLITE_FULL":
        meaning = "the disk is full"
    elif name == "SQLITE_READONLY_DIRECTORY":
        meaning = "its folder is read-only"
    elif name.startswith("SQLITE_READONLY"):
        meaning = "it is read-only"
    elif name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        meaning = "it is not a planc run store, or it is damaged"
    elif name.startswith("SQLITE_CANTOPEN"):
        meaning = "it cannot be opened"
    elif name.startswith("SQLITE_IOERR"):
        meaning = "the disk failed to read or write it"
    else:
        return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())  # PostgreSQL's: lines
    return f"{meaning} ({error})"


def cannot_write(error: Exception) -> bool:
    """Whether `error` says the store (or its folder) cannot be written, where it could still be read."""
    if isinstance(error, OSError):
        return error.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    return (getattr(error, "sqlite_errorname", "") or "").startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))
