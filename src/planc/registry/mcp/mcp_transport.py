"""How planc reaches an MCP server, for a sync and for a run alike: started over stdio, or at its URL.

A server with a `command` is started over stdio with the official `mcp` SDK (imported here only, so
planc works without it until a server is needed), in the folder of planc.toml, with its `env` over a
minimal inherited environment. A server with a `url` is spoken to over streamable HTTP, or SSE where
its `transport` says so, with its `headers` read from the environment when planc connects
(mcp_credentials.py) and, where it has `oauth`, the tokens `planc registry login` keeps (mcp_oauth.py).
Only https:// is sent beyond this machine: a credential sent over plain http:// to another machine is
a credential given to the network.

The session declares the same client capabilities for both (`client_session`), since a server may
offer some tools only to clients that can answer its requests: roots (when the server's table
declares some), elicitation and sampling.

A `Link` is what planc knows of one connection while it is open: what it sends that is secret (taken
out of anything the server says, `Link.redact`), the last HTTP status the server refused a request
with, and what a server started over stdio wrote where it should not. `Link.failure` says, in one line,
why a server could not be used: a server that refuses planc's token is named with the HTTP status.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from planc.registry.mcp.mcp_credentials import (
    CredentialProblem,
    header_secrets,
    redact_credentials,
    redact_value,
    resolved_headers,
)
from planc.registry.settings.declarations import McpServer

if TYPE_CHECKING:
    import logging

    import httpx2
    from mcp import ClientSession, StdioServerParameters
    from mcp.client import ClientRequestContext

    from planc.backend.calls.mcp_runtime import McpRuntime

SHOWN_DETAIL = 200  # the most of a refusal's own words a message quotes


def is_loopback(host: str) -> bool:
    """Whether `host` is an address of this machine that no other machine can reach.

    >>> [is_loopback(host) for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2", "0.0.0.0", "::", "example.org")]
    [True, True, True, True, False, False, False]
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_problem(url: str) -> str | None:
    """What is wrong with `url` as a remote MCP server's, or None.

    >>> url_problem("https://example.org/mcp"), url_problem("http://127.0.0.1:8000/mcp")
    (None, None)
    >>> print(url_problem("http://example.org/mcp"))
    must be https:// unless the server is on this machine (http://127.0.0.1, localhost or [::1]): over plain http:// its credentials cross the network in the clear
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as error:
        return f"is not a URL ({error})"
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return 'must be an https:// URL, like "https://example.org/mcp"'
    if parts.username is not None or parts.password is not None:
        return "holds a user or password: give credentials in `headers`, read from the environment"
    if parts.fragment:
        return "has a fragment (`#...`), which no server receives"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return (
            "must be https:// unless the server is on this machine (http://127.0.0.1, localhost or [::1]): over "
            "plain http:// its credentials cross the network in the clear"
        )
    return None


class Link:
    """One connection to `server`, while it is open: its secrets, the refusal it answered, its stdout noise."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.noise = StdoutNoise()
        self.sent: list[str] = []  # the secrets of the headers sent
        self.auth: Any = None  # the OAuth provider (mcp_oauth.py), whose tokens (`secrets()`) are secrets too
        self.refused: tuple[int, str] | None = None  # the endpoint's last status >= 400, and what it said

    def secrets(self) -> list[str]:
        return self.sent + (self.auth.secrets() if self.auth is not None else [])

    def redact(self, text: str) -> str:
        return redact_credentials(text, self.secrets())

    def redact_value(self, value: Any) -> Any:
        return redact_value(value, self.secrets())

    async def saw(self, response: httpx2.Response) -> None:
        """A response of the server's endpoint (httpx's response hook): a refusal is kept, with what it says."""
        if _endpoint(str(response.request.url)) != _endpoint(self.server.url or ""):
            return
        if response.status_code < 400:
            self.refused = None
            return
        said = response.headers.get("www-authenticate", "")
        with contextlib.suppress(Exception):
            await response.aread()
            body = response.json()
            if isinstance(body, dict) and isinstance(body.get("error"), str):
                described = body.get("error_description")
                said = body["error"] + (f": {described}" if isinstance(described, str) and described else "")
        self.refused = (response.status_code, said[:SHOWN_DETAIL])

    def failure(self, error: BaseException, timeout: float, errlog: TextIO | None = None) -> str:
        """Why the server could not be used, in one line (then the last of its stderr), its secrets redacted."""
        while isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
        if isinstance(error, CredentialProblem):
            said = str(error)
        elif self.refused is not None:
            status, detail = self.refused
            what = "refused planc's credentials" if status in (401, 403) else "answered"
            said = f"it {what}: HTTP {status}" + (f" ({detail})" if detail else "")
        elif self.server.url is not None and _unreachable(error):
            said = f"cannot reach {self.server.url}: {_one_line(error)}"
        else:
            said = describe(error, self.server.command[0] if self.server.command else "", timeout)
        if self.server.url is None:
            said += self.noise.said() + (tail(errlog) if errlog is not None else "")
        return self.redact(said)


def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port}{parts.path.rstrip('/')}"


def _unreachable(error: BaseException) -> bool:
    import httpx2

    return isinstance(error, (httpx2.TransportError, OSError)) and not isinstance(error, TimeoutError)


def _one_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


@contextlib.asynccontextmanager
async def connected(server: McpServer, folder: Path, errlog: TextIO | None, link: Link) -> AsyncIterator[tuple]:
    """The SDK's (read, write) streams to `server`: started over stdio in `folder` (its stderr into `errlog`), or
    reached at its URL. MissingVariable for a header the environment does not give, OAuthProblem for a login
    that is missing or cannot be renewed; the rest as the SDK raises it (`link.failure` says what it means)."""
    if server.url is None:
        from mcp.client.stdio import stdio_client

        assert errlog is not None  # a server planc starts writes its stderr there (a login is only at a URL)
        async with stdio_client(server_parameters(server, folder), errlog=errlog) as (read, write):
            yield read, write
        return
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    headers = resolved_headers(server)
    link.sent = header_secrets(server, headers)
    if server.oauth is not None and link.auth is None:  # a login gives its own
        from planc.registry.mcp.mcp_oauth import run_auth

        link.auth = run_auth(server)

    def client(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            event_hooks={"response": [link.saw]},
            timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        )

    if server.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(server.url, headers=headers, auth=link.auth, httpx_client_factory=client) as streams:
            yield streams
        return
    from mcp.client.streamable_http import streamable_http_client

    async with client(headers, auth=link.auth) as http, streamable_http_client(server.url, http_client=http) as streams:
        yield streams


def client_session(
    read: Any, write: Any, server: McpServer, noise: StdoutNoise, requests: McpRuntime | None = None
) -> ClientSession:
    """The SDK's session with `server`, declaring planc's client capabilities: roots (only when the server's
    `roots` names some: a server such as the reference filesystem server replaces the folders it was started
    on with its client's roots), elicitation and sampling. `requests` (a backend.calls.mcp_runtime.McpRuntime)
    answers the server's elicitation and sampling requests during a run's calls; without it (a sync, which calls
    no tool) they are refused."""
    from mcp import ClientSession, types

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        # pydantic reads the URI's string as its FileUrl
        return types.ListRootsResult(
            roots=[
                types.Root(
                    uri=root.path.as_uri(),  # type: ignore[arg-type]
                    name=root.path.name or root.written,
                )
                for root in server.roots
            ]
        )

    async def elicitation(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        if requests is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="planc answers no request while it lists tools")
        return await requests.elicit(server, params)

    async def sampling(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        if requests is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="planc answers no request while it lists tools")
        return await requests.sample(server, params)

    return ClientSession(
        read,
        write,
        message_handler=noise,
        list_roots_callback=roots if server.roots else None,
        elicitation_callback=elicitation,
        sampling_callback=sampling,
    )


def server_parameters(server: McpServer, folder: Path) -> StdioServerParameters:
    """How the SDK starts `server` over stdio: its command, in the folder of planc.toml, with its `env`."""
    from mcp import StdioServerParameters

    command = server.command
    return StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(server.env) or None, cwd=str(folder))


async def all_tools(session: ClientSession, link: Link) -> list[dict]:
    """Every tool the server lists, following pagination, as wire-format JSON (camelCase keys), with planc's
    credentials for it redacted (a description that quotes one would write it into the lock)."""
    tools, result = [], await session.list_tools()
    while True:
        tools += [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]
        cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
        if not cursor:
            return link.redact_value(tools)
        from mcp.types import PaginatedRequestParams

        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))


class StdoutNoise:
    """A session's `message_handler` that keeps what a server wrote on its standard output that is not MCP.

    The SDK logs every such line with a traceback; planc says it once, in the server's error, instead.
    """

    SHOWN = 3

    def __init__(self) -> None:
        _quiet_sdk_parse_errors()
        self.lines: list[str] = []
        self.count = 0

    async def __call__(self, message: object) -> None:
        if isinstance(message, Exception):
            self.count += 1
            if len(self.lines) < self.SHOWN:
                self.lines.append(_bad_line(message))

    def said(self) -> str:
        if not self.count:
            return ""
        shown = ", ".join(f"`{line}`" for line in self.lines) + (", ..." if self.count > self.SHOWN else "")
        return (
            f"; it wrote {self.count} line{'s' if self.count > 1 else ''} that {'are' if self.count > 1 else 'is'}"
            f" not MCP on its standard output ({shown}): a server writes only protocol messages there, and its "
            "logs on standard error"
        )


def _bad_line(error: Exception) -> str:
    errors = getattr(error, "errors", None)
    found = errors()[0].get("input") if callable(errors) and errors() else None
    text = found if isinstance(found, str) else str(error)
    return text if len(text) <= 60 else text[:57] + "..."


def _quiet_sdk_parse_errors() -> None:
    """Drop the SDK's log record (with a traceback) for each line of a server's stdout that is not MCP."""
    import logging

    stdio = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(each, _NoParseErrors) for each in stdio.filters):
        stdio.addFilter(_NoParseErrors())


class _NoParseErrors:
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


def describe(error: BaseException, program: str, timeout: float) -> str:
    """One line for an exception, looking inside exception groups (anyio task groups raise them)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, FileNotFoundError):
        return f"cannot start it: `{program}` not found"
    if isinstance(error, PermissionError):
        return f"cannot start it: `{program}` is not executable"
    if isinstance(error, OSError) and error.strerror:
        return f"cannot start it: {error.strerror}"
    return _one_line(error)


def tail(errlog: TextIO, lines: int = 5) -> str:
    """The last lines the server wrote on its standard error, if any."""
    try:
        errlog.flush()
        errlog.seek(0)
        text = errlog.read().strip()
    except OSError:
        return ""
    if not text:
        return ""
    return "\n  stderr: " + "\n  stderr: ".join(text.splitlines()[-lines:])
