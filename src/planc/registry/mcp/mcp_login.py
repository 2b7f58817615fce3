"""`planc registry login NAME`: a person signs planc in to a remote MCP server once (mcp_oauth.py keeps and
renews what it leaves). The SDK's flow runs as a connection to the server; its authorization URL is printed (and
opened in a browser, when one opens), and the person is sent back to a listener on this machine's loopback
address for the one answer (RFC 8252)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from planc.registry.mcp.mcp_oauth import Logins, OAuthProblem, provider
from planc.registry.settings.declarations import McpServer

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult

LOGIN_TIMEOUT_S = 600.0  # how long a login waits for the person to finish in the browser


class _Callback:
    """The loopback listener the authorization server sends the person back to (RFC 8252): the first request to
    `/callback` gives the code and state, which `wait` returns as the SDK's AuthorizationCodeResult."""

    def __init__(self, server: McpServer) -> None:
        import asyncio
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlsplit

        loop, self.said = asyncio.get_running_loop(), asyncio.get_running_loop().create_future()
        said = self.said

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/callback" or said.done():
                    self.send_error(404)
                    return
                query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                ok = "code" in query
                page = (
                    f"planc is signed in to MCP server `{server.name}`: you may close this page."
                    if ok
                    else f"planc was not signed in to `{server.name}`: {query.get('error', 'no code came back')}"
                )
                body = page.encode("utf-8")
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                loop.call_soon_threadsafe(lambda: None if said.done() else said.set_result(query))

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.uri = f"http://127.0.0.1:{self.http.server_address[1]}/callback"
        self.server = server

    async def wait(self) -> AuthorizationCodeResult:
        import anyio
        from mcp.shared.auth import AuthorizationCodeResult

        try:
            with anyio.fail_after(LOGIN_TIMEOUT_S):
                query = await self.said
        except TimeoutError:
            raise OAuthProblem(f"no sign-in came back within {LOGIN_TIMEOUT_S:g} s") from None
        if "code" not in query:
            described = query.get("error_description")
            raise OAuthProblem(
                f"the authorization server refused the sign-in: {query.get('error', 'no code')}"
                + (f" ({described})" if described else "")
            )
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


async def login(server: McpServer, folder: Path, say: Callable[[str], None], browser: bool = True) -> str:
    """Sign planc in to `server` once, as a person: the SDK's flow, its authorization URL given to `say` (and
    opened in a browser, with `browser`, when one opens); the tokens kept (`Logins`). Where they are kept, in
    words; OAuthProblem, or what the SDK raises, when the flow fails."""
    from planc.registry.mcp.mcp_transport import Link, client_session, connected

    logins = Logins(server)
    callback = _Callback(server)

    async def redirect(url: str) -> None:
        say(f"Sign planc in to MCP server `{server.name}` at this URL:\n  {url}")
        if browser:
            import webbrowser

            with contextlib.suppress(Exception):
                webbrowser.open(url)

    try:
        link = Link(server)
        # A new registration for this listener's redirect: a login starts afresh, whatever was kept before.
        link.auth = provider(
            server, logins, {"url": server.url, "logged_in_at": time.time()}, redirect, callback.wait, callback.uri
        )
        async with connected(server, folder, None, link) as (read, write):
            async with client_session(read, write, server, link.noise) as session:
                await session.initialize()
    finally:
        callback.close()
    return logins.where
