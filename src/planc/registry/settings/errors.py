"""What goes wrong reading a project's files: planc.toml and its lock."""

from __future__ import annotations

from pathlib import Path


class ConfigError(Exception):
    """A planc.toml (or its lock) that cannot be used: `file:line: message`."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")
