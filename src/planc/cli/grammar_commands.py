"""`planc grammar`: the plan language's grammar for constrained decoders (docs/grammar.md)."""

from __future__ import annotations

import click

from planc.cli.options import CONFIG_OPTION
from planc.cli.project import find_registry
from planc.cli.usage import UsageError


@click.command("grammar")
@CONFIG_OPTION
@click.option("--format", "output_format", type=click.Choice(["lark", "gbnf"]), default="lark", show_default=True,
              help="lark: the Lark dialect of llguidance (OpenAI custom tools, vLLM); gbnf: llama.cpp's GBNF.")
@click.option("--full", is_flag=True, help="Every text the parser takes (comments, any spacing), for highlighters "
                                           "and tools that must accept any valid file; not for a model to write.")
def grammar_command(config: str | None, output_format: str, full: bool) -> None:
    """Print the grammar of plans for a constrained decoder.

    It is the language as a model should write it: plans as `planc fmt` prints them, without
    comments, at least one step, ending with the newline after the last pipeline; `--full` gives
    every text the parser takes.

    With a planc.toml (the nearest one above the working directory, or --config), a step can only
    call its tools and the control steps, with their own parameters, and a literal given to a
    parameter of a plain type (string, integer, number, boolean, enum) has that type; without one,
    the whole language. The rest is still `planc check`'s (docs/grammar.md).
    """
    from planc.decoding import GrammarError, export_grammar

    registry = find_registry(config)
    try:
        text = export_grammar(registry, format=output_format, full=full)
    except GrammarError as error:
        raise UsageError(str(error)) from None
    click.echo(text, nl=False)
