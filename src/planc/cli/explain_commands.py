"""`planc explain CODE`: a diagnostic code's entry, as docs/diagnostics.md has it (the wheel has no docs/)."""

from __future__ import annotations

import click

from planc.cli.usage import UsageError


@click.command("explain")
@click.argument("code", required=False)
def explain_command(code: str | None) -> None:
    """Print what the diagnostic CODE means (E300, w501): its messages, an example and what planc says of it.
    Without CODE, every code and its title."""
    from planc.diagnostics.codes import CODES

    if code is None:
        for known in CODES.values():
            click.echo(f"{known.code}  {known.title}")
        return
    wanted = code.strip().upper()
    wanted = wanted[:1] + wanted[1:].replace("O", "0")  # E3O0: a letter O among the digits
    if wanted not in CODES:
        import difflib

        close = difflib.get_close_matches(wanted, list(CODES), n=3, cutoff=0.5)
        meant = f"; did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(f"no diagnostic code {code}{meant} (`planc explain` lists them all)")
    from planc.explain import render_code

    click.echo("\n".join(render_code(CODES[wanted])).rstrip("\n"))
