"""Reading the files a command names: plan text, or a stored plan (`planc compile`'s JSON)."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from planc.cli.usage import UsageError


def read_file(path: str) -> str:
    """The text of `path` (`-`: standard input), or a UsageError saying why it cannot be read."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", newline="") as file:  # keep \r\n: spans are offsets into the file
            return file.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a plan file") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror}") from None


def plan_paths(arguments: Iterable[str]) -> list[str]:
    """The plan files `arguments` name: each file as given, each folder's `*.plan` files (in it and below,
    sorted); `-` is standard input."""
    from pathlib import Path

    paths = []
    for argument in arguments:
        folder = Path(argument)
        if argument != "-" and folder.is_dir():
            found = sorted(str(path) for path in folder.rglob("*.plan") if path.is_file())
            if not found:
                raise UsageError(f"{argument}: a folder with no .plan file")
            paths += found
        else:
            paths.append(argument)
    return paths


def read_plan(path: str) -> str:
    """The plan text of `path`: the file's text, or the source of the stored plan it is (`planc compile`'s
    output, read strictly); a UsageError when neither can be read."""
    text = read_file(path)
    if not is_stored_plan(text):
        return text
    from planc.store.stored import StoredPlanError, stored_source

    try:
        return stored_source(text)
    except StoredPlanError as error:
        raise UsageError(f"{path}: {error}") from None


def is_stored_plan(text: str) -> bool:
    """Whether `text` is a stored plan (`planc compile`'s JSON) rather than plan text."""
    if not text.lstrip().startswith("{"):
        return False
    from planc.syntax.json_input import read_json

    try:
        data = read_json(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("format") == "planc.plan"
