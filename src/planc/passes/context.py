"""What every pass may consult besides the tree."""

from __future__ import annotations

import attrs

from planc.registry.registry import Registry


@attrs.frozen
class CheckContext:
    """The inputs of a check. Later passes add the policy and budgets.

    Without a registry only the control steps are known, and a plan may call any
    other tool with any arguments: `planc check` still catches every syntax and
    reference error.
    """

    source: str = ""
    registry: Registry | None = None
