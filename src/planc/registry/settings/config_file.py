"""Where a project's planc.toml is: the nearest one at or above a folder, found without reading it."""

from __future__ import annotations

from pathlib import Path

CONFIG_NAME = "planc.toml"


def find_config(start: Path) -> Path | None:
    """The nearest planc.toml in `start` or a folder above it."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None
