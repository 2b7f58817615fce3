"""`planc mcp`: planc as an MCP server, for agents (docs/mcp.md)."""

from __future__ import annotations

import click

from planc.cli.options import CONFIG_OPTION, STORE_OPTION
from planc.cli.usage import UsageError


@click.command("mcp")
@CONFIG_OPTION
@click.option("--http", "address", metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp rather than standard input and output "
                   "(a loopback address only; port 0: a free one; the address goes to stderr).")
@STORE_OPTION
def mcp_command(config: str | None, address: str | None, store: str | None) -> None:
    """Serve the project of planc.toml to MCP clients: describe, check_plan, run_plan, show_run.

    The registry, policy, principal, budgets and run store are planc.toml's (the store: --store first, as
    for `planc run`); a client chooses none of them. Runs are recorded as `planc run` records them
    (`planc runs`, `show-run`, `resume`).
    """
    project = _project(config, store)  # a mistake is told before the SDK is imported: that takes seconds
    host, port = _address(address) if address is not None else (None, None)
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        raise UsageError("planc mcp needs the MCP SDK: pip install 'planc[mcp]'") from None
    from planc.mcp_server.server import NotLoopback, serve_http, serve_stdio

    if address is None:
        serve_stdio(project)
        return
    try:
        serve_http(project, host, port)
    except NotLoopback as error:
        raise UsageError(f"--http {address}: {error}") from None
    except OSError as error:
        raise UsageError(f"--http {address}: cannot listen there: {error.strerror or error}") from None


def _project(config: str | None, store: str | None):
    """The project planc.toml declares (`--config`, else the nearest above the working directory), its runs
    recorded in `store` when given; a UsageError without one, or when it cannot be used."""
    from pathlib import Path

    from planc.passes.policy.load import PolicyError
    from planc.project import load_project
    from planc.registry.errors import ConfigError

    try:
        project = load_project(Path.cwd(), config=config, store=store)
    except (ConfigError, PolicyError) as error:
        raise UsageError(str(error)) from None
    if project.registry is None:
        raise UsageError("planc mcp serves the project of a planc.toml, and there is none here or above: "
                         "give one with --config, or start it in the project's folder")
    return project


def _address(address: str) -> tuple[str, int]:
    """HOST:PORT (`[::1]:8000` for IPv6) as (host, port); a UsageError otherwise."""
    host, _, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http {address}: give HOST:PORT, like 127.0.0.1:8000 (port 0: a free one)")
    return host, int(port)
