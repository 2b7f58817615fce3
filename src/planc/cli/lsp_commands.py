"""`planc lsp`: the language server, for editors."""

from __future__ import annotations

import sys

import click

from planc.cli.usage import UsageError


@click.command("lsp")
@click.option(
    "--stdio",
    is_flag=True,
    help="Talk over standard input and output (the default and only way; accepted because many clients pass it).",
)
def lsp_command(stdio: bool) -> None:
    """Run the language server for plan files over standard input and output (docs/editor.md)."""
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        raise UsageError("planc lsp needs pygls and lsprotocol: pip install 'planc[lsp]'") from None
    from planc.lsp.server import serve

    sys.exit(serve())
