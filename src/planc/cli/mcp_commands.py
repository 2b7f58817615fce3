"""`planc mcp`: planc as an MCP server, for agents (docs/mcp.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from planc.cli.options import CONFIG_OPTION, STORE_OPTION
from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.project import Project


@click.command("mcp")
@CONFIG_OPTION
@click.option(
    "--http",
    "address",
    metavar="HOST:PORT",
    help="Serve streamable HTTP at HOST:PORT/mcp rather than standard input and output (port 0: a free "
    "one; the URL goes to stderr). Beyond loopback only with [mcp_server.auth] and TLS.",
)
@click.option(
    "--tls-cert", type=click.Path(dir_okay=False), help="With --http: serve HTTPS with this certificate (PEM), and --tls-key."
)
@click.option("--tls-key", type=click.Path(dir_okay=False), help="With --http: the private key of --tls-cert (PEM).")
@click.option(
    "--behind-tls-proxy", is_flag=True, help="With --http: a proxy in front serves TLS, at [mcp_server] resource_server_url."
)
@STORE_OPTION
def mcp_command(
    config: str | None, address: str | None, tls_cert: str | None, tls_key: str | None, behind_tls_proxy: bool, store: str | None
) -> None:
    """Serve the project of planc.toml to MCP clients: describe, check_plan, run_plan, show_run, list_runs,
    approve_run, resume_run.

    The registry, policy, budgets and run store are planc.toml's (the store: --store first, as for `planc run`);
    a client chooses none of them. Over HTTP with [mcp_server.auth], each request's bearer token is verified and
    names the principal its plans are judged and recorded under; otherwise the principal is planc.toml's. Runs
    are recorded as `planc run` records them (`planc runs`, `show-run`, `resume`).
    """
    project = _project(config, store)  # a mistake is told before the SDK is imported: that takes seconds
    host, port = _address(address) if address is not None else (None, None)
    if address is None and (tls_cert or tls_key or behind_tls_proxy):
        raise UsageError("--tls-cert, --tls-key and --behind-tls-proxy are read with --http only")
    if (tls_cert is None) != (tls_key is None):
        raise UsageError("--tls-cert and --tls-key are given together: the certificate and its private key")
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        raise UsageError("planc mcp needs the MCP SDK: pip install 'planc[mcp]'") from None
    if address is None:
        from planc.mcp_server.server import serve_stdio

        serve_stdio(project)
        return
    from planc.mcp_server.auth import AuthSetupError
    from planc.mcp_server.http import NotServable, Tls, serve_http

    assert host is not None and port is not None  # --http ADDRESS gives both
    try:
        serve_http(project, host, port, Tls(tls_cert, tls_key, behind_tls_proxy))
    except (NotServable, AuthSetupError) as error:
        raise UsageError(f"--http {address}: {error}") from None
    except OSError as error:
        raise UsageError(f"--http {address}: cannot listen there: {error.strerror or error}") from None


def _project(config: str | None, store: str | None) -> Project:
    """The project planc.toml declares (`--config`, else the nearest above the working directory), its runs
    recorded in `store` when given; a UsageError without one, or when it cannot be used."""
    from pathlib import Path

    from planc.passes.policy.load import PolicyError
    from planc.project import load_project
    from planc.registry.settings.errors import ConfigError

    try:
        project = load_project(Path.cwd(), config=config, store=store)
    except (ConfigError, PolicyError) as error:
        raise UsageError(str(error)) from None
    if project.registry is None:
        raise UsageError(
            "planc mcp serves the project of a planc.toml, and there is none here or above: "
            "give one with --config, or start it in the project's folder"
        )
    return project


def _address(address: str) -> tuple[str, int]:
    """HOST:PORT (`[::1]:8000` for IPv6) as (host, port); a UsageError otherwise."""
    host, _, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http {address}: give HOST:PORT, like 127.0.0.1:8000 (port 0: a free one)")
    return host, int(port)
