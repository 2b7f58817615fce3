"""planc's version: the installed package's, from its metadata, the one every report of it reads.

`planc --version`, `planc.__version__`, the `initialize` of `planc mcp` and `planc lsp`, and every stored
plan (`compiled_by`, outside its hashes) say this version; pyproject.toml is where it is set.
"""

from __future__ import annotations

import functools


@functools.cache
def installed_version() -> str:
    """The version of the installed planc package (reading the metadata looks through the installed
    distributions: done once, when first asked for, never at import)."""
    from importlib.metadata import version

    return version("planc")
