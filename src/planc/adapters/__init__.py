"""A checked plan offered to agent frameworks as one tool: `plan_tool` checks it, `langgraph_tool` and
`openai_agents_tool` give it to LangGraph and to the OpenAI Agents SDK (the `langgraph` and `openai-agents`
extras)."""
