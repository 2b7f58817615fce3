"""`planc mcp --http`: the project's tools over streamable HTTP, and who may reach them.

- Without `[mcp_server.auth]` nothing authenticates a client, so it listens on a loopback address
  only, for this machine's own clients.
- With `[mcp_server.auth]` every request carries a bearer token that auth.py verifies; its subject is
  the principal of that client's plans. Listening beyond loopback needs that and TLS as well: its own
  (`--tls-cert`, `--tls-key`) or a proxy's in front of it (`--behind-tls-proxy`), and the URL clients
  reach it at (`[mcp_server] resource_server_url`), which is the tokens' audience by default and what
  its resource metadata announces.
- Every request must name the server in `Host` and, when it has one, `Origin` (`transport_security`):
  a web page that a DNS rebinding points at it sends its own name, and is refused before planc reads it.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from typing import TYPE_CHECKING

import attrs

from planc.project import Project
from planc.registry.mcp.mcp_transport import is_loopback
from planc.registry.settings.declarations import McpServing

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@attrs.frozen
class Tls:
    """How `--http` is reached over TLS: its own certificate and key, or a proxy in front of it; neither: none."""

    cert: str | None = None
    key: str | None = None
    behind_proxy: bool = False

    @property
    def any(self) -> bool:
        return self.cert is not None or self.behind_proxy


class NotServable(ValueError):
    """An address and a configuration `planc mcp --http` will not serve together: said before it listens."""


def serving_problem(host: str, serving: McpServing, tls: Tls) -> str | None:
    """Why `--http` will not listen at `host` as planc.toml and `tls` say; None when it will."""
    if tls.behind_proxy and tls.cert is not None:
        return "--behind-tls-proxy says a proxy holds the TLS certificate: give it or --tls-cert, not both"
    if tls.behind_proxy and serving.resource_server_url is None:
        return (
            "--behind-tls-proxy needs `resource_server_url` in [mcp_server]: the https:// URL clients reach the "
            "proxy at, which their tokens are issued for"
        )
    if is_loopback(host):
        return None
    if serving.auth is None:
        return (
            "planc mcp serves plans that run, and authenticates no client without `[mcp_server.auth]` in "
            "planc.toml, so it listens only on this machine's loopback address (127.0.0.1, localhost or [::1]); "
            "to serve other machines, declare `[mcp_server.auth]` and serve over TLS"
        )
    if not tls.any:
        return (
            "beyond this machine's loopback address planc mcp is served over TLS only, so that no token crosses "
            "the network in the clear: give --tls-cert and --tls-key, or --behind-tls-proxy"
        )
    if serving.resource_server_url is None:
        return (
            "beyond this machine's loopback address planc mcp needs `resource_server_url` in [mcp_server]: the "
            "https:// URL clients reach it at, which their tokens are issued for"
        )
    return None


def canonical_url(host: str, port: int, serving: McpServing, tls: Tls) -> str:
    """The URL clients reach the server at: `resource_server_url`, else where it listens.

    >>> canonical_url("::1", 8000, McpServing(), Tls())
    'http://[::1]:8000/mcp'
    """
    if serving.resource_server_url is not None:
        return serving.resource_server_url
    where = f"[{host}]" if ":" in host else host
    return f"{'https' if tls.cert else 'http'}://{where}:{port}/mcp"


def transport_security(
    host: str,
    port: int,
    serving: McpServing = McpServing(),
    url: str | None = None,
) -> TransportSecuritySettings:
    """What a request must say in `Host` and `Origin`: a loopback name with the bound port (or the bound address,
    or the host of `url`, the canonical URL), or one that `[mcp_server] allowed_hosts` and `allowed_origins` add.
    Anything else is refused (421 for `Host`, 403 for `Origin`); set here, not left to the SDK's default, which
    takes any port.

    >>> transport_security("127.0.0.1", 8000).allowed_hosts
    ['127.0.0.1:8000', 'localhost:8000', '[::1]:8000']
    """
    from urllib.parse import urlsplit

    from mcp.server.transport_security import TransportSecuritySettings

    bound = f"[{host}]" if ":" in host else host
    names = list(LOOPBACK_NAMES) if is_loopback(host) else []
    hosts = [f"{name}:{port}" for name in (names if bound in names else [*names, bound])]
    origins = [f"http://{each}" for each in hosts] + [f"https://{each}" for each in hosts]
    if url is not None:
        parts = urlsplit(url)
        hosts.append(parts.netloc)
        origins.append(f"{parts.scheme}://{parts.netloc}")
    hosts += [each for each in serving.allowed_hosts if each not in hosts]
    origins += [each for each in serving.allowed_origins if each not in origins]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class ClientGone(logging.Filter):
    """Leaves out what the MCP SDK and uvicorn log, with a traceback, of an answer they could not send because
    its client had gone: the connection closed mid-response, or the session's streams closed with it. A
    client that leaves mid-run is no error of the server's: its run is recorded as interrupted, resumable.
    Any other error is logged as it was.

    >>> import anyio
    >>> ClientGone.gone(anyio.ClosedResourceError()), ClientGone.gone(RuntimeError("a bug"))
    (True, False)
    """

    GONE = ("after response already completed", "response already started")

    @classmethod
    def gone(cls, error: BaseException | None) -> bool:
        import anyio

        if isinstance(error, BaseExceptionGroup):
            return all(cls.gone(inner) for inner in error.exceptions)
        return (
            isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError))
            or isinstance(error, RuntimeError)
            and any(words in str(error) for words in cls.GONE)
        )

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and self.gone(record.exc_info[1]))


def tls_problem(tls: Tls) -> str | None:
    """Why the certificate and key cannot be served, before anything listens."""
    import ssl

    if tls.cert is None:
        return None
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(tls.cert, tls.key)
    except (OSError, ssl.SSLError) as error:
        return f"--tls-cert {tls.cert} and --tls-key {tls.key} cannot be served: {error.strerror or error}"
    return None


def serve_http(project: Project, host: str, port: int, tls: Tls = Tls()) -> None:
    """Serve `project` over streamable HTTP at `HOST:PORT/mcp` until stopped; port 0 takes a free one. The URL it
    serves goes to stderr once it listens. NotServable, before it listens, for an address planc.toml and `tls` do
    not let it serve (`serving_problem`); AuthSetupError for `[mcp_server.auth]` without its credentials."""
    import anyio
    import uvicorn

    from planc.mcp_server.auth import auth_settings, token_verifier
    from planc.mcp_server.server import PlancServer

    serving = project.registry.mcp_server if project.registry is not None else McpServing()
    problem = serving_problem(host, serving, tls) or tls_problem(tls)
    if problem is not None:
        raise NotServable(problem)
    for name in ("mcp.server.streamable_http", "uvicorn.error"):
        logging.getLogger(name).addFilter(ClientGone())
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    bound = listener.getsockname()[1]
    url = canonical_url(host, bound, serving, tls)
    auth = serving.auth
    # The verifier is made before the socket listens: credentials it lacks are said, and no client waits.
    verifier = token_verifier(auth, auth.audience or url, os.environ) if auth is not None else None
    server = PlancServer(project, auth=auth_settings(auth, url) if auth is not None else None, verifier=verifier)
    listener.listen(128)  # connections wait from now on, so the line below may be acted on at once
    app = server.mcp.streamable_http_app(
        host=host,
        transport_security=transport_security(
            host, bound, serving, url if serving.resource_server_url is not None or not is_loopback(host) else None
        ),
    )
    config = uvicorn.Config(app, log_level="warning", ssl_certfile=tls.cert, ssl_keyfile=tls.key)
    where = f"[{host}]" if family == socket.AF_INET6 else host
    listening = f"{'https' if tls.cert else 'http'}://{where}:{bound}/mcp"
    print(
        f"planc mcp: listening on {listening}"
        + (f", reached as {url}" if url != listening else "")
        + (", each request's token verified" if auth is not None else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[listener]))
    finally:
        server.close()
