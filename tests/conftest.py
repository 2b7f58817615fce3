"""Shared set-up: the test modules import helpers (`strategies`, `cli`, `profiles`) from this folder.

pytest runs with `--import-mode=importlib`, which does not put the test folder
on `sys.path`, so it is added here. The hypothesis profile (`profiles.py`,
HYPOTHESIS_PROFILE: `dev` by default, `ci` for the full counts) is loaded before
any test module is collected.
"""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import profiles  # noqa: E402,F401  (registers and loads the hypothesis profile)


# Runs record into a store of the test session's own, never into the working directory's .planc.
import os  # noqa: E402
import tempfile  # noqa: E402

os.environ["PLANC_STORE"] = str(Path(tempfile.mkdtemp(prefix="planc-store-")) / "runs.sqlite")


def pytest_configure(config):
    config.addinivalue_line("markers", "last: run after every other test (it checks what the others left)")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)  # stable: the rest keep their order
