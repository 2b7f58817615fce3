"""Real HTTP servers on loopback inside the test process: an ASGI app served by uvicorn in a thread of its own
(`served`), and an MCP server written with the SDK that keeps the headers of every request it receives
(`recording_mcp_app`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

HOST = "127.0.0.1"


@contextlib.contextmanager
def served(make_app):
    """`make_app(base_url)` (an ASGI app) served at `http://127.0.0.1:PORT` while the context lasts; its base URL."""
    import uvicorn

    listener = socket.socket()
    listener.bind((HOST, 0))
    listener.listen(128)  # connections wait from now: the URL may be used as soon as it is yielded
    base = f"http://{HOST}:{listener.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(make_app(base), log_level="warning", lifespan="on"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(sockets=[listener]),), daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join()
        loop.close()
        listener.close()


def recording_mcp_app(received: list[dict]):
    """An MCP server with the tool `echo(text)`, over streamable HTTP at /mcp, that appends each request's headers
    (lower-cased names) to `received`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    mcp = MCPServer("recording", log_level="WARNING")

    @mcp.tool()
    def echo(text: str) -> dict:
        """Say `text` back."""
        return {"echo": text}

    def make(base: str):
        app = mcp.streamable_http_app(transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))

        async def recorded(scope, receive, send):
            if scope["type"] == "http":
                received.append({name.decode().lower(): value.decode() for name, value in scope["headers"]})
            await app(scope, receive, send)

        return recorded

    return make
