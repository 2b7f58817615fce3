"""A folder with a tools module and the planc.toml that declares it: the project the run tests use."""

from __future__ import annotations

import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def tool_project(folder: Path, prefix: str, tools: str, toml: str, files: dict[str, str] | None = None):
    """Write `tools` as a module named for `folder` (so no two tests share one), `toml` with its
    `{module}` filled in as planc.toml, and `files` (name -> text); yield the module's name, and
    forget the module afterwards."""
    module = f"{prefix}_{folder.name.replace('-', '_')}"
    (folder / f"{module}.py").write_text(tools, encoding="utf-8")
    (folder / "planc.toml").write_text(textwrap.dedent(toml.format(module=module)), encoding="utf-8")
    for name, text in (files or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    try:
        yield module
    finally:
        sys.modules.pop(module, None)


@contextmanager
def spied_project(folder: Path, monkeypatch, prefix: str, tools: str, toml: str, files: dict[str, str] | None = None):
    """`tool_project`, worked in: the working directory is `folder`, the tools' spy writes `spy.log` there
    (`PLANC_TEST_SPY`) and runs are recorded in its `runs.sqlite` (`PLANC_STORE`)."""
    with tool_project(folder, prefix, tools, toml, files):
        monkeypatch.chdir(folder)
        monkeypatch.setenv("PLANC_TEST_SPY", str(folder / "spy.log"))
        monkeypatch.setenv("PLANC_STORE", str(folder / "runs.sqlite"))
        yield folder
