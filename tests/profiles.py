"""Hypothesis under named profiles, chosen by the environment variable HYPOTHESIS_PROFILE.

- `dev` (the default): a quick run, a few examples per property, for `make test` at a desk;
- `ci` (`.ci/run` sets it): the full counts the properties are written with.

Neither has a deadline: how long an example takes is never what a test asserts. conftest.py
imports this module, which loads the profile, before any test module is collected. A property
that sets its own `max_examples` asks for `examples(N)`: N under ci, no more than the profile's
few under dev (`examples(N, dev=M)`: at most M, for a property whose every example is slow). A
slow test that is not a property asks `under_ci(full, quick)` for how many of its cases to run.
The example database lives under .pytest_cache (ignored by git, removed by `make clean`), never
in the source tree.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = Path(__file__).resolve().parents[1]
DATABASE = DirectoryBasedExampleDatabase(ROOT / ".pytest_cache" / "hypothesis")
DEV_EXAMPLES = 20

settings.register_profile("ci", deadline=None, database=DATABASE)
settings.register_profile("dev", max_examples=DEV_EXAMPLES, deadline=None, database=DATABASE)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or "dev"
settings.load_profile(PROFILE)


def examples(count: int, dev: int | None = None) -> int:
    """`count` examples under the ci profile; under any other, at most `dev` (a property whose every example
    is slow), by default the profile's own number."""
    return count if PROFILE == "ci" else min(count, settings.default.max_examples if dev is None else dev)


def under_ci(full: int, quick: int) -> int:
    """`full` under the ci profile, `quick` under any other: how many of a slow test's cases (a real model's
    tasks, seeds of random mutations) the dev profile runs, where CI runs them all."""
    return full if PROFILE == "ci" else quick
