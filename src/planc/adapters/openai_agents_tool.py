"""A checked plan as a function tool of an OpenAI Agents SDK `Agent`: the `openai-agents` extra
(`pip install 'planc[openai-agents]'`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from planc.adapters.plan_tool import PlanTool
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from agents import FunctionTool

ARGUMENTS_BYTES = 1024 * 1024  # the most JSON a model's arguments for one run may be


def openai_agents_tool(tool: PlanTool) -> FunctionTool:
    """`tool` as an `agents.FunctionTool`: the model's arguments (JSON text) read bounded, the run's result
    (`PlanTool.__call__`) returned as JSON text."""
    from agents import FunctionTool

    async def invoke(_context: object, text: str) -> str:
        try:
            arguments = read_json(text or "{}", max_bytes=ARGUMENTS_BYTES)
        except ValueError as error:
            return json.dumps({"error": f"the arguments are not JSON: {error}"})
        return json.dumps(await tool.call_async(arguments), ensure_ascii=False)

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.parameters(),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
