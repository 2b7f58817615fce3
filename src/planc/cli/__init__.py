"""The `planc` command: parse arguments, call the library, render. Nothing else.

This module holds the `planc` group and the name of every command. A command's module is
imported only when that command runs (`lazy_group.py`), so `planc fmt` never loads the passes
and `planc check` never loads the interpreter. The commands share what they need from the small
modules beside them: `usage.py` (UsageError, exit 2), `files.py` (reading plan files),
`options.py` (the common options), `project.py` (planc.toml, the policy), `printing.py` (the
console, check results), `plans.py` (a plan parsed, checked or optimized, or exit) and `runs.py`
(the run store and the end of a run).
"""

from __future__ import annotations

import click

from planc.cli.lazy_group import LazyGroup

# Each command, by name: the module that defines it and the click command in it.
COMMANDS = {
    "check": "planc.cli.plan_commands:check_command",
    "fmt": "planc.cli.plan_commands:fmt_command",
    "show": "planc.cli.plan_commands:show_command",
    "corpus": "planc.cli.plan_commands:corpus_command",
    "diff": "planc.cli.diff_commands:diff_command",
    "optimize": "planc.cli.optimize_commands:optimize_command",
    "run": "planc.cli.run_commands:run_command",
    "compile": "planc.cli.run_commands:compile_command",
    "migrate": "planc.cli.run_commands:migrate_command",
    "batch": "planc.cli.batch_commands:batch_command",
    "runs": "planc.cli.store_commands:runs_command",
    "stats": "planc.cli.stats_commands:stats_command",
    "show-run": "planc.cli.store_commands:show_run_command",
    "replay": "planc.cli.store_commands:replay_command",
    "resume": "planc.cli.store_commands:resume_command",
    "approve": "planc.cli.store_commands:approve_command",
    "init": "planc.cli.init_commands:init_command",
    "prompt": "planc.cli.planning_commands:prompt_command",
    "plan": "planc.cli.planning_commands:plan_command",
    "policy": "planc.cli.registry_commands:policy_group",
    "registry": "planc.cli.registry_commands:registry_group",
    "lsp": "planc.cli.lsp_commands:lsp_command",
    "mcp": "planc.cli.mcp_commands:mcp_command",
    "grammar": "planc.cli.grammar_commands:grammar_command",
    "explain": "planc.cli.explain_commands:explain_command",
}


def _print_version(ctx: click.Context, _param: click.Parameter, asked: bool) -> None:
    if asked and not ctx.resilient_parsing:
        from planc.version import installed_version

        click.echo(f"planc {installed_version()}")
        ctx.exit()


@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version, help="Print planc's version and exit."
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour in the output: on a terminal (auto), always, or never. NO_COLOR set means never, unless --color always.",
)
def main(color: str) -> None:
    """planc: a compiler toolchain for agent plans."""
    from planc.cli import printing

    printing.COLOR = color
