"""The files planc keeps for the user outside any project: under `$XDG_CONFIG_HOME/planc`
(`~/.config/planc` by default), each readable by the user alone.

A private file is written with mode 0600 in a folder of mode 0700, and refused when it is read if
anyone else may read or change it: what it holds (a login's tokens, the redaction key) must not be
known to others.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class PrivateFileProblem(ValueError):
    """A private file that cannot be used: what is wrong with it, in words."""


class ExposedFile(PrivateFileProblem):
    """A private file others may read or change: it is refused, never read."""


def config_folder() -> Path:
    """`$XDG_CONFIG_HOME/planc`, `~/.config/planc` by default."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "planc"


def read_private(path: Path) -> str | None:
    """The text of the private file `path`, None when there is none; PrivateFileProblem for one
    others can read or change, or that cannot be read."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PrivateFileProblem(f"{path}: cannot read it: {error.strerror}") from None
    with os.fdopen(handle, encoding="utf-8") as file:
        status = os.fstat(file.fileno())
        if status.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or status.st_uid != os.getuid():
            mode = stat.S_IMODE(status.st_mode)
            raise ExposedFile(f"{path}: others can read or change it (mode {mode:04o}), so it is refused")
        try:
            return file.read()
        except (OSError, UnicodeDecodeError) as error:
            raise PrivateFileProblem(f"{path}: cannot read it: {error}") from None


def write_private(path: Path, text: str, *, replace: bool = True) -> bool:
    """Write `text` to the private file `path` whole (a reader never sees part of it); with
    `replace` false, only when there is no such file yet. Whether it was written."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)  # whatever the umask
            file.write(text)
        if replace:
            os.replace(partial, path)
            return True
        try:
            os.link(partial, path)  # fails when another process made it first: its text stands
        except FileExistsError:
            return False
        return True
    finally:
        partial.unlink(missing_ok=True)
