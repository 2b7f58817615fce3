"""A checked plan as a LangChain tool, for a LangGraph graph (its `ToolNode`, a prebuilt agent): the
`langgraph` extra (`pip install 'planc[langgraph]'`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from planc.adapters.plan_tool import PlanTool

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool


def langgraph_tool(tool: PlanTool) -> StructuredTool:
    """`tool` as a `langchain_core.tools.StructuredTool`: its parameters the plan's run arguments, its result
    the run's (`PlanTool.__call__`) as JSON text."""
    from langchain_core.tools import StructuredTool

    async def run_async(**arguments: object) -> str:
        return json.dumps(await tool.call_async(arguments), ensure_ascii=False)

    return StructuredTool.from_function(
        func=lambda **arguments: json.dumps(tool(arguments), ensure_ascii=False),
        coroutine=run_async,
        name=tool.name,
        description=tool.description,
        args_schema=tool.parameters(),
    )
