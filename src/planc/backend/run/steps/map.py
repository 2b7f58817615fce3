"""`map` at run time: the block `do` once per item, up to `concurrency` items at once.

Its declaration (signature, type, cost and flow rules) is `registry/steps/map.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planc.backend.run.control_steps import each_item, items, labels_of, value
from planc.backend.state.values import Labelled, Scope
from planc.registry.provenance.control import loop_over
from planc.registry.provenance.labels import merged
from planc.syntax import ast

if TYPE_CHECKING:
    from planc.backend.run.interpreter import Run


async def run_map(run: Run, step: ast.Step, path: str, scope: Scope, piped: object, in_loop: bool, shown: dict) -> Any:
    over = items(step, path, scope, piped)
    loop = loop_over(labels_of(step, "over", scope, piped))
    results = await each_item(run, step, path, scope, over, loop, value(step, "concurrency", scope))
    return Labelled([result.value for result in results], merged(result.view for result in results))
