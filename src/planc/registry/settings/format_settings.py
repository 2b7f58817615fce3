"""`[fmt]` in planc.toml: how `planc fmt` lays out the plans under it.

    [fmt]
    width = 100   # the line width plans are kept within where they can be

The registry reads the table with the rest of planc.toml (a mistake in it is a mistake in the file);
`planc fmt` reads only this table (`cli/project.py`), so formatting loads no tool and no policy.
"""

from __future__ import annotations

from planc.syntax.printer import WIDTH

FMT_KEYS = ("width",)
SMALLEST_WIDTH = 20  # narrower, a step's name and its first argument hardly fit


class FmtTableError(ValueError):
    """A `[fmt]` table that cannot be used; `key` is the key at fault (None: the table itself)."""

    def __init__(self, message: str, key: str | None) -> None:
        super().__init__(message)
        self.message, self.key = message, key


def fmt_width(table: object) -> int:
    """The line width the `[fmt]` table `table` gives (WIDTH when it gives none); FmtTableError otherwise.

    >>> fmt_width({"width": 88}), fmt_width({})
    (88, 100)
    """
    if not isinstance(table, dict):
        raise FmtTableError("`fmt` must be a table, like `[fmt]` with `width = 100`", None)
    for key in table:
        if key not in FMT_KEYS:
            raise FmtTableError(f"unknown key `{key}` in `[fmt]`; the keys are {', '.join(FMT_KEYS)}", key)
    width = table.get("width", WIDTH)
    if isinstance(width, bool) or not isinstance(width, int) or width < SMALLEST_WIDTH:
        raise FmtTableError(f"`width` must be a whole number of at least {SMALLEST_WIDTH}, found {width!r}", "width")
    return width
