"""`reshape` at run time: its `value`, with its references and templates filled in.

Its declaration (signature, type, cost and flow rules) is `registry/steps/reshape.py`.
"""

from __future__ import annotations

from planc.backend.run.control_steps import value


async def run_reshape(run, step, path, scope, piped, in_loop, shown):
    return value(step, "value", scope)
