"""`map` at run time: the block `do` once per item, up to `concurrency` items at once.

Its declaration (signature, type, cost and flow rules) is `registry/steps/map.py`.
"""

from __future__ import annotations

from planc.backend.run.control_steps import carried, each_item, items, labels_of, value
from planc.backend.state.values import Labelled


async def run_map(run, step, path, scope, piped, in_loop, shown):
    over = items(step, path, scope, piped)
    item_view = labels_of(step, "over", scope, piped).item()
    results = await each_item(run, step, path, scope, over, item_view, value(step, "concurrency", scope))
    return Labelled([result.value for result in results], carried(results))
