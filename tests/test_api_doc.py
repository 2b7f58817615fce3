"""docs/api.md runs as it reads: each example is a doctest, run from the repository's root against the
embedded example (its database a temporary one)."""

from __future__ import annotations

import doctest
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_api_page_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PLANC_INCIDENTS_DB", str(tmp_path / "incidents.sqlite"))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the page puts the example's folder on it
    failures, tried = doctest.testfile(
        str(ROOT / "docs" / "api.md"), module_relative=False, report=True, optionflags=doctest.ELLIPSIS
    )
    assert tried > 10 and failures == 0
    sys.modules.pop("plan_demo", None)
    assert os.getcwd() == str(ROOT)
