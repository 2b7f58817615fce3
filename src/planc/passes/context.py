"""What every pass may consult besides the tree."""

from __future__ import annotations

import attrs


@attrs.frozen
class CheckContext:
    """The inputs of a check. Later passes add the registry, the policy and budgets."""

    source: str = ""
