"""`LazyGroup`: a click group whose commands are imported only when one of them is asked for.

Each command is named by "module:attribute"; running `planc fmt` imports the module that defines
`fmt` and no other. Listing the commands (`planc --help`, shell completion) imports them all, for
their short help.
"""

from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    def __init__(self, *args: Any, lazy_commands: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands  # name -> "module:attribute"

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy_commands:
            return super().get_command(ctx, cmd_name)
        module, attribute = self.lazy_commands[cmd_name].split(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise TypeError(f"{self.lazy_commands[cmd_name]} is not the click command {cmd_name!r}")
        return command

    def resolve_command(
        self,
        ctx: click.Context,
        args: list[str],
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as error:
            # click offers the close names among `self.commands`, which holds none of the lazy ones
            raise click.exceptions.NoSuchCommand(error.command_name, possibilities=self.list_commands(ctx), ctx=ctx) from None
