"""The control steps at run time: one module each, named after its step, holding its handler
`run_<name>` (its declaration is `registry/steps/<name>.py`); `CONTROL_HANDLERS` gathers them, with
`run_pure` for every pure step. tests/test_architecture.py holds this folder's steps to the
registry's.
"""

from __future__ import annotations

import importlib
import pkgutil

from planc.backend.run.control_steps import Handler, run_pure
from planc.registry.steps.pure_steps import PURE_STEPS


def handlers() -> dict[str, Handler]:
    """The handler of each control step this folder has a module for, by its name."""
    found: dict[str, Handler] = {}
    for module in pkgutil.iter_modules(__path__):
        handler = getattr(importlib.import_module(f"{__name__}.{module.name}"), f"run_{module.name}")
        found[module.name] = handler
    return found


# The handler of each built-in step.
CONTROL_HANDLERS: dict[str, Handler] = {**handlers(), **dict.fromkeys(PURE_STEPS, run_pure)}
