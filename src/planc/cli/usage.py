"""`UsageError`: a problem with the command line or the files it names."""

from __future__ import annotations

import click


class UsageError(click.ClickException):
    """A problem with the command line or its files: one clean message, exit 2."""

    exit_code = 2
