"""A real MCP server over stdio (the official SDK) for the idempotency-key tests.

Its tool `send(text)` appends the request's text and `_meta` to KEYED_LOG (every request it is
given), and has its effect, a line in KEYED_SENT, once per idempotency key (`_meta`'s
"planc/idempotency_key"); a request without a key acts every time. While the file KEYED_HOLD
exists, a call that has had its effect writes its process id to KEYED_HELD and waits for KEYED_HOLD
to go: a test kills planc there, mid-call, after the effect.
"""

from __future__ import annotations

import json
import os
import time

try:
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # the SDK before 2.0
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as Server

KEY = "planc/idempotency_key"
server = Server("keyed")


@server.tool()
def send(text: str, ctx: Context) -> dict:
    """Send `text`, once per idempotency key."""
    meta = dict(ctx.request_context.meta or {})
    with open(os.environ["KEYED_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"text": text, "meta": meta}, default=str) + "\n")
    key, sent = meta.get(KEY), os.environ["KEYED_SENT"]
    done = [json.loads(line)["key"] for line in open(sent, encoding="utf-8")] if os.path.exists(sent) else []
    if key is None or key not in done:
        with open(sent, "a", encoding="utf-8") as effect:
            effect.write(json.dumps({"key": key, "text": text}) + "\n")
    hold = os.environ.get("KEYED_HOLD")
    if hold and os.path.exists(hold):
        with open(os.environ["KEYED_HELD"], "w", encoding="utf-8") as held:
            held.write(str(os.getpid()))
        while os.path.exists(hold):  # the test lets go by removing it, once it has killed planc
            time.sleep(0.01)
    return {"sent": text}


if __name__ == "__main__":
    server.run()
