"""What a step may do, as far as moving it or reusing its result goes (docs/optimize.md).

A step *changes* something when it, or a step in its blocks, calls a tool not
declared read-only: a tool planc does not know, a declared plan (its calls
are not looked into), or an `agent` that may call such a tool (or has such a
`check`). A step that changes something, may `exit`, or continues an agent's
conversation (whose turns are taken in text order) keeps its place in text order. A tool that
declares no effects at all (or is not in any registry) is *undeclared*:
declaring its effects is what would let the optimizer move or reuse it.
"""

from __future__ import annotations

import attrs

from planc.analysis.agent_tools import agent_check_tool, agent_tools
from planc.registry.loading.registry import Registry
from planc.syntax import ast
from planc.syntax.steps import walk_steps


@attrs.frozen
class StepEffects:
    changes: tuple[str, ...] = ()  # the tools it may call that are not declared read-only, in text order
    undeclared: tuple[str, ...] = ()  # those of `changes` that could be declared read-only: no effects declared
    exits: bool = False  # an `exit` in it may end the plan
    continues: bool = False  # an agent in it continues a conversation: the turns of one are taken in text order

    def changing(self, if_declared: bool = False) -> tuple[str, ...]:
        """The tools in `changes`; with `if_declared`, less those that could be declared read-only."""
        return tuple(name for name in self.changes if name not in self.undeclared) if if_declared else self.changes

    def ordered(self, if_declared: bool = False) -> bool:
        """It keeps its place: it waits for every step before it, and every step after it waits for it."""
        return bool(self.changing(if_declared)) or self.exits or self.continues


def step_effects(step: ast.Step, tools: dict, registry: Registry | None) -> StepEffects:
    """What `step` and the steps in its blocks may do; `tools` is the resolve pass's step -> Tool.

    >>> from planc.passes.check import check
    >>> result = check('decide(when: true, then: { send(to: "x") })')
    >>> step_effects(result.plan.pipelines[0].steps[0], result.resolution.tools, None)
    StepEffects(changes=('send',), undeclared=('send',), exits=False, continues=False)
    """
    changes: dict[str, None] = {}
    undeclared: dict[str, None] = {}
    exits = continues = False
    for inner, _ in walk_steps([ast.Pipeline((step,), step.span)]):
        name = inner.tool.text
        tool = tools.get(inner)
        if tool is None or (not tool.effects.declared and tool.kind not in ("plan", "pure", "control")):
            changes[name] = undeclared[name] = None
        elif tool.kind == "control" and name == "agent":
            may_call = agent_tools(inner, registry)
            check = agent_check_tool(inner, registry)
            for called in (*may_call, *([check] if check else [])) if may_call is not None else ():
                if not called.effects.declared:
                    changes[called.name] = undeclared[called.name] = None
                elif not called.effects.read_only:
                    changes[called.name] = None
            if may_call is None:
                changes["agent"] = None  # it may call tools planc cannot name before it runs
            continues = continues or inner.arg("continue") is not None
        elif not tool.effects.read_only:
            changes[name] = None
        exits = exits or (name == "exit" and tool is not None and tool.kind == "control")
    return StepEffects(tuple(changes), tuple(undeclared), exits, continues)
