"""The control steps (DESIGN section 3): reserved names the interpreter intercepts.

This is the one place that says which parameters of a control step are
conditions or blocks, and which names a block binds. The resolve pass reads
it to know where `item`, `index`, `accumulator` and bare field names mean
something.
"""

from __future__ import annotations

import attrs

# What a filter condition binds: a bare name there is a field of the current item.
ITEM_FIELDS = "fields of the item"


@attrs.frozen
class ParamScope:
    """How one parameter's value is read: as a condition, a block, and what it binds."""

    kind: str  # "condition", "block" or "template"
    binds: tuple[str, ...] = ()


CONTROL_STEPS: dict[str, dict[str, ParamScope]] = {
    "map": {"do": ParamScope("block", ("item", "index"))},
    "filter": {
        "where": ParamScope("condition", ("item", ITEM_FIELDS)),
        "do": ParamScope("block", ("item", "index")),
        "infer": ParamScope("template", ("item", "index")),
    },
    "reduce": {"do": ParamScope("block", ("item", "index", "accumulator"))},
    "decide": {
        "when": ParamScope("condition"),
        "then": ParamScope("block"),
        "else": ParamScope("block"),
    },
    "exit": {"when": ParamScope("condition")},
    "agent": {},
    "ask": {},
    "reshape": {},
}


def param_scope(tool: str, param: str) -> ParamScope | None:
    """How `tool`'s parameter `param` is read, if it is a control step's condition or block."""
    return CONTROL_STEPS.get(tool, {}).get(param)
