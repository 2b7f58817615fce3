"""`planc mcp`: planc as an MCP server, for agents that speak MCP (docs/mcp.md).

It serves the project of one planc.toml: its registry, policy, principal, `[budget]` and run store,
none of which a client can choose. `server.py` holds the tools (`describe`, `check_plan`, `run_plan`,
`show_run`) and the transports (stdio, streamable HTTP); `asking.py` what a run asks its client (an
effectful call's approval, as MCP elicitation) and tells it (progress, one notification per event
`planc run` prints a line for).
"""
