"""`planc policy explain` and `planc registry list/sync/shapes`."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from planc.cli.files import read_plan
from planc.cli.options import CONFIG_OPTION, POLICY_OPTION, PRINCIPAL_OPTION, STORE_OPTION
from planc.cli.printing import console, print_checked, print_wide
from planc.cli.project import find_policy, find_registry, principal_for
from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from planc.registry.loading.registry import Registry
    from planc.registry.tools.learned_shapes import LearnedShape


@click.group("policy")
def policy_group() -> None:
    """The Cedar policy that judges a plan's calls (docs/policy.md)."""


@policy_group.command("explain")
@click.argument("plan")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def policy_explain_command(
    plan: str, config: str | None, policy_file: str | None, principal: str | None, output_format: str
) -> None:
    """Show, per step of PLAN, the policy's decision and the policies that made it.

    Exit 0 when every step is allowed, 1 when one is denied or PLAN has other errors (printed on stderr).
    """
    from planc.passes.check import check

    registry = find_registry(config, plan=plan)
    principal = principal_for(registry, principal)
    policy = find_policy(policy_file, registry, principal)
    if policy is None:
        raise UsageError('no policy: name one with --policy, or with `policy = "..."` in planc.toml')
    result = check(read_plan(plan), registry=registry, policy=policy, principal=principal)
    if result.plan is None:  # syntax errors: there are no steps to explain
        print_checked([(plan, result)])
        sys.exit(1)
    from planc.passes.policy.explain import explain_json, explain_table

    if output_format == "json":
        import json

        click.echo(json.dumps(explain_json(result, policy, principal), ensure_ascii=False))
    else:
        print_wide(console(), explain_table(result, policy, principal))
    others = tuple(d for d in result.diagnostics if d.is_error and d.code != "E400")  # a denial is the table's to say
    if others:
        import attrs

        print_checked([(plan, attrs.evolve(result, diagnostics=others))], stderr=True)
    sys.exit(0 if result.ok else 1)


@click.group("registry")
def registry_group() -> None:
    """The tools a plan may call."""


@registry_group.command("list")
@CONFIG_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def registry_list_command(config: str | None, output_format: str) -> None:
    """List the tools: their parameters and effects."""
    from planc.registry.loading.listing import registry_json, registry_table

    registry = find_registry(config)
    if registry is None:
        raise UsageError("no planc.toml here or above; name one with --config")
    if output_format == "json":
        import json

        click.echo(json.dumps(registry_json(registry), indent=2, ensure_ascii=False))
    else:
        print_wide(console(), registry_table(registry))


@registry_group.command("sync")
@CONFIG_OPTION
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds each MCP server has to start and list its tools.",
)
def registry_sync_command(config: str | None, timeout: float) -> None:
    """Ask each MCP server for its tools and write planc.lock.json. Exit 1 if a server failed."""
    from planc.registry.mcp.mcp_sync import SyncError, sync

    registry = find_registry(config, locked=False)  # the lock is what is being rewritten: it may be stale or broken
    if registry is None:
        raise UsageError("no planc.toml here or above; name one with --config")
    from planc.registry.mcp.mcp_credentials import missing_variable

    missing = missing_variable(registry.servers.values())
    if missing is not None:
        raise UsageError(f"{registry.source}: {missing}")
    try:
        result = sync(registry, timeout=timeout)
    except SyncError as error:
        raise UsageError(str(error)) from None
    for server, count in result.counts.items():
        click.echo(f"{server}: {count} tool{'s' if count != 1 else ''} locked")
        for wire, name in result.renamed.get(server, {}).items():
            click.echo(f"  `{wire}` is `{server}__{name}` in plans")
        for wire in result.unrenamed.get(server, ()):
            click.echo(f"warning: `rename` of [mcp.{server}] names `{wire}`, which is not one of its tools", err=True)
    for failure in result.failures:
        kept = " (its earlier lock entry is kept)" if failure.server in result.kept else ""
        click.echo(f"error: {failure}{kept}", err=True)
    click.echo(f"wrote {result.path}")
    sys.exit(1 if result.failures else 0)


@registry_group.command("login")
@click.argument("server")
@CONFIG_OPTION
@click.option("--no-browser", is_flag=True, help="Print the sign-in URL only; open no browser.")
def registry_login_command(server: str, config: str | None, no_browser: bool) -> None:
    """Sign planc in to the MCP server SERVER (an [mcp.SERVER] with `url` and `oauth`) with OAuth, once: the URL
    to sign in at goes to stderr (and to a browser), and the tokens are kept in the keyring, else in
    $XDG_CONFIG_HOME/planc/tokens/SERVER (mode 0600). Syncs and runs refresh them. Exit 1 if the sign-in fails."""
    import asyncio

    registry = find_registry(config, locked=False)
    if registry is None:
        raise UsageError("no planc.toml here or above; name one with --config")
    declared = registry.servers.get(server)
    if declared is None or declared.oauth is None:
        with_oauth = sorted(name for name, each in registry.servers.items() if each.oauth is not None)
        raise UsageError(
            f"{registry.source}: no [mcp.{server}] with `url` and `oauth = true`; "
            + (
                f"the servers that sign in with OAuth are {', '.join(with_oauth)}"
                if with_oauth
                else "no server here signs in with OAuth"
            )
        )
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UsageError("`planc registry login` needs the MCP SDK: pip install 'planc[mcp]'") from None
    from planc.registry.mcp.mcp_credentials import CredentialProblem
    from planc.registry.mcp.mcp_login import login
    from planc.registry.mcp.mcp_transport import Link

    def say(text: str) -> None:
        click.echo(text, err=True)

    try:
        where = asyncio.run(login(declared, registry.folder, say, browser=not no_browser))
    except CredentialProblem as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    except Exception as error:  # noqa: BLE001 - the flow's failure, said in one line
        click.echo(
            f"error: MCP server `{server}` ({declared.url}): the sign-in failed: {Link(declared).failure(error, 0)}", err=True
        )
        sys.exit(1)
    click.echo(f"signed in to `{server}`: its tokens are kept in {where}", err=True)


@registry_group.command("shapes")
@CONFIG_OPTION
@STORE_OPTION
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--write",
    "tool",
    metavar="TOOL",
    help="Declare TOOL's learned shape as its `returns` in planc.toml (the rest of the file is kept).",
)
def registry_shapes_command(config: str | None, store: str | None, output_format: str, tool: str | None) -> None:
    """List the shapes the run store learned of trusted tools' results (types, fields, lengths; never a value),
    each with how many calls it was learned from. A tool that declares `returns` is checked by that instead."""
    from planc.cli.project import store_path
    from planc.store.run_store import RunStoreError, learned_shapes

    registry = find_registry(config)
    try:
        shapes = learned_shapes(store_path(store, registry))
    except RunStoreError as error:
        raise UsageError(str(error)) from None
    if tool is not None:
        _write_returns(registry, shapes, tool)
        return
    declared = registry.tools if registry is not None else {}
    if output_format == "json":
        import json

        click.echo(
            json.dumps(
                [
                    {
                        "tool": name,
                        "calls": shape.calls,
                        "schema": shape.schema,
                        "used": name in declared and declared[name].learns,
                    }
                    for name, shape in shapes.items()
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if not shapes:
        click.echo(
            "no shapes learned yet: a trusted tool (`labels = []`) without `returns` teaches its shape "
            "with each call that succeeds",
            err=True,
        )
        return
    from planc.registry.tools.signatures import type_text

    for name, shape in shapes.items():
        used = (
            ""
            if name in declared and declared[name].learns
            else "  (not used: the tool declares `returns`, is not trusted, or is not declared)"
        )
        click.echo(f"{name}: {shape.calls} call{'s' if shape.calls != 1 else ''}: {type_text(shape.schema)}{used}")


def _write_returns(registry: Registry | None, shapes: Mapping[str, LearnedShape], tool: str) -> None:
    """`--write TOOL`: planc.toml with TOOL's learned shape as its `returns`, checked to load before it is written."""
    from planc.registry.loading.config import ConfigError, registry_from_text
    from planc.registry.loading.config_edit import CannotEdit, with_returns

    if registry is None or registry.source is None:
        raise UsageError("no planc.toml here or above; name one with --config")
    if tool not in shapes:
        raise UsageError(f"no shape of `{tool}` is learned in the run store (`planc registry shapes` lists them)")
    path = registry.source
    try:
        text = with_returns(path.read_text(encoding="utf-8"), tool, shapes[tool].returns)
        registry_from_text(text, path)
    except CannotEdit as error:
        raise UsageError(f"{path}: {error}") from None
    except ConfigError as error:
        raise UsageError(f"{path}: the shape of `{tool}` cannot be declared as its `returns`: {error}") from None
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror or error}") from None
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror or error}") from None
    calls = shapes[tool].calls
    click.echo(f"wrote {path}: `{tool}` returns the shape learned from {calls} call{'s' if calls != 1 else ''}", err=True)
