"""`planc grammar`: the plan language's grammar for constrained decoders (docs/grammar.md)."""

from __future__ import annotations

import click

from planc.cli.options import CONFIG_OPTION, POLICY_OPTION, PRINCIPAL_OPTION
from planc.cli.project import find_policy, find_registry, principal_for
from planc.cli.usage import UsageError


@click.command("grammar")
@CONFIG_OPTION
@POLICY_OPTION
@PRINCIPAL_OPTION
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["lark", "gbnf"]),
    default="lark",
    show_default=True,
    help="lark: the Lark dialect of llguidance (OpenAI custom tools, vLLM); gbnf: llama.cpp's GBNF.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Every text the parser takes (comments, any spacing), for highlighters "
    "and tools that must accept any valid file; not for a model to write.",
)
def grammar_command(config: str | None, policy_file: str | None, principal: str | None, output_format: str, full: bool) -> None:
    """Print the grammar of plans for a constrained decoder.

    It is the language as a model should write it: plans as `planc fmt` prints them, without
    comments, at least one step, ending with the newline after the last pipeline; `--full` gives
    every text the parser takes.

    With a planc.toml (the nearest one above the working directory, or --config), a step can only
    call its tools and the control steps, with their own parameters, and a literal given to a
    parameter of a plain type (string, integer, number, boolean, enum) has that type; without one,
    the whole language. The tools the policy forbids the principal whatever their arguments are left
    out, as `planc prompt` and `planc plan` leave them out (stderr names them, with the policy's
    reason); `--full` keeps them, since a plan that calls one still parses. The rest is still
    `planc check`'s (docs/grammar.md).
    """
    from planc.decoding import GrammarError, export_grammar
    from planc.planning.prompt import forbidden

    registry = find_registry(config)
    if registry is not None and not full:
        principal = principal_for(registry, principal)
        refused = forbidden(list(registry.tools.values()), find_policy(policy_file, registry, principal), principal)
        for name, reason in sorted(refused.items()):
            click.echo(f"left out: {name}, which the policy forbids ({reason})", err=True)
        registry = registry.without(refused)
    try:
        text = export_grammar(registry, format=output_format, full=full)
    except GrammarError as error:
        raise UsageError(str(error)) from None
    click.echo(text, nl=False)
