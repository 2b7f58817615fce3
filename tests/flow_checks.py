"""Property 0, shared by the properties that run random plans: the labels a call carries at run time
are within those the check computed for the same step path.

The check knows a step by its path without loop indices (`3/do.1` for the call `3/do.1[2]`). An
agent's tool calls (`4/agent.1/send`, `4/check.1/lookup`, and the steps of a declared plan it calls,
`4/agent.2/plan__sub/1`) and a step's inferences (the pseudo-tool `model:ROLE`: an agent's rounds,
an `infer`) have no step of their own in the plan: the check's bound for them is everything the flow
of the step that makes them holds (what it reads, its control, and what its result may carry, which
for an agent includes every result it may be shown).
"""

from __future__ import annotations

import re

from planc.passes.check import CheckResult

LOOP_INDEX = re.compile(r"\[\d+\]")
AGENT_CALL = re.compile(r"^(.*?)/(?:agent|check)\.\d+/")


def checked_bound(checked: CheckResult, step: str, tool: str = "") -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """What the check says a call of `tool` at the step path `step` (loop indices and all) may
    carry: each argument's labels (`*`: any argument, for a call the plan does not write itself),
    and its control's."""
    path = LOOP_INDEX.sub("", step)
    flows = checked.flow.calls
    if path in flows and not tool.startswith("model:"):
        flow = flows[path]
        return dict(flow.sources), flow.control
    found = AGENT_CALL.match(path)
    maker = found[1] if found is not None else path
    assert maker in flows, (step, tool, sorted(flows))
    flow = flows[maker]
    everything = frozenset().union(*flow.sources.values(), flow.control, flow.result.whole())
    return {"*": everything}, everything


def assert_within_check(checked: CheckResult, step: str, sources: dict, control, context: object = None, tool: str = "") -> None:
    """Property 0 for one call (of `tool`): its run-time `sources` (argument -> labels) and
    `control` are within the check's at its step path."""
    bound, bound_control = checked_bound(checked, step, tool)
    for name, carried in sources.items():
        allowed = bound.get(name, bound.get("*", frozenset()))
        assert frozenset(carried) <= allowed, (
            "argument labels outside the check's",
            context,
            step,
            name,
            sorted(carried),
            sorted(allowed),
        )
    assert frozenset(control) <= bound_control, (
        "control labels outside the check's",
        context,
        step,
        sorted(control),
        sorted(bound_control),
    )
