"""`agent`: a model doing a task with the registry's tools, answering to an output schema.

Its signature, and its type, cost and flow rules; its handler is `backend/run/steps/agent.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from planc.registry.provenance.labels import LabelView, union, union_all
from planc.registry.steps.control import ANY, LIST, STRING, ControlStep, signature
from planc.registry.tools.tool import Effects
from planc.syntax import ast

if TYPE_CHECKING:  # the cost pass's walk, which a cost rule is handed; the flow pass's, a flow rule
    from planc.passes.cost.cost import Coster, Run
    from planc.passes.flow.flow import PlanEnv, Walk

TOOL_CALLED = {
    "type": "object",
    "properties": {"tool": {"type": "string"}, "round": {"type": "integer", "minimum": 1}},
    "required": ["tool", "round"],
    "additionalProperties": False,
}
AGENT_FIELDS = {
    "iterations": {"type": "integer", "minimum": 0},
    "tools_called": {**LIST, "items": TOOL_CALLED},
    "final": {"type": "boolean"},
}

TOOL = signature(
    "agent",
    "Asks a model (the role `model`) to do `prompt`, calling the registry's tools (those "
    "`tools` names or matches: all by default, none with `tools: []`) for up to `max_iterations` rounds, and to answer with "
    "an object that conforms to `output_schema`. The result is `{output, iterations, tools_called, "
    "final}`; `final` is false, and `output` `{}`, when the rounds ran out. `system_prompt` is added "
    "to the built-in one. `continue: $step` sends the prompt into the conversation of an earlier "
    "agent step instead of a new one (same model and system prompt; `tools` may only narrow its "
    "tools). `check` names a tool or `plan__NAME` called with the answer; when it fails, its "
    "problems go back into the conversation, up to `repairs` times, and then the step fails.",
    {
        "context": ANY,
        "prompt": STRING,
        "output_schema": {"type": "object"},
        "tools": {"type": "array", "items": STRING},
        "max_iterations": {"type": "integer", "minimum": 1, "default": 8},
        "model": {"type": "string", "default": "chat"},
        "system_prompt": STRING,
        "continue": ANY,
        "check": STRING,
        "repairs": {"type": "integer", "minimum": 0, "default": 2},
    },
    required=["prompt", "output_schema"],
    pipe="context",
    effects=Effects(),
)


def result(inputs: Mapping, literals: Mapping) -> Mapping | None:
    return {
        "type": "object",
        "properties": {"output": literals.get("output_schema") or {}, **AGENT_FIELDS},
        "required": ["output", *AGENT_FIELDS],
        "additionalProperties": False,
    }


def cost(coster: Coster, step: ast.Step) -> Run:
    return coster.agent(step)  # its rounds, its tools' calls, its check: what the cost pass knows of them


def flow_agent(
    walk: Walk, step: ast.Step, env: PlanEnv, views: Mapping[str, LabelView], control: frozenset[str]
) -> frozenset[str]:
    read = walk.may_read(step, env.targets)
    earlier = continued(step, env.targets)
    if earlier is not None:  # the conversation it continues: all that agent was shown
        read = union(read, env.results.get(earlier, LabelView()).whole())
    given = union(union_all(view.whole() for view in views.values()), control)
    return union(read, walk.agent_calls(step, env.targets, union(read, given)))


def continued(step: ast.Step, targets: Mapping) -> ast.Step | None:
    """The agent step that `step`'s `continue` refers to (`continue: $review`), when it is one."""
    arg = step.arg("continue") if step.tool.text == "agent" else None
    if arg is None or type(arg.value) is not ast.Ref or arg.value.accessors:
        return None
    target = targets.get(arg.value)
    return target if isinstance(target, ast.Step) and target.tool.text == "agent" else None


STEP = ControlStep(TOOL, result, cost, flow_agent, rank=5)
