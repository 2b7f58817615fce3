"""The one way a diagnostic is made: a code of the table, one of its message forms, and the form's fields.

    diagnostic("E204", "no_step", span, step="2", hints=[...], written="$7", count=3)

The message is the form's template (`planc.diagnostics.codes`) filled in with the
fields, so every message planc reports is written in the table, next to its code.
A code, form or field the table does not have is a mistake of planc's, not of a
plan's: it raises ValueError.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Iterable

from planc.diagnostics.diagnostic import Diagnostic, Fix
from planc.diagnostics.span import Span


def diagnostic(
    code: str,
    form: str,
    span: Span,
    *,
    step: str | None = None,
    hints: Iterable[str] = (),
    fix: Fix | None = None,
    **fields: object,
) -> Diagnostic:
    """The diagnostic `code` in the form `form`, its message filled in with `fields`.

    >>> from planc.diagnostics import Position
    >>> at = Span(Position(9, 2, 9), Position(14, 2, 14))
    >>> diagnostic("E204", "no_step", at, step="2", written="$7", count=3).message
    "`$7` refers to no step: the plan's steps are numbered 1 to 3"
    >>> diagnostic("E204", "no_such_form", at)
    Traceback (most recent call last):
    ...
    ValueError: E204 has no message form `no_such_form`; its forms are hidden_label, no_step, unknown_label
    """
    template = _template(code, form)
    if fields.keys() != _fields(template):
        raise ValueError(f"{code} `{form}` takes the fields {sorted(_fields(template))}, given {sorted(fields)}")
    return Diagnostic(code, template.format_map(fields), span, step, tuple(hints), fix)


def _template(code: str, form: str) -> str:
    # Imported here: the table costs about a millisecond to import, which a plan without
    # diagnostics (and `planc check` on one) never needs to pay.
    from planc.diagnostics.codes import CODES

    described = CODES.get(code)
    if described is None:
        raise ValueError(f"{code} is not a diagnostic code of the table (planc.diagnostics.codes)")
    template = described.messages.get(form)
    if template is None:
        raise ValueError(f"{code} has no message form `{form}`; its forms are {', '.join(sorted(described.messages))}")
    return template


@functools.cache
def _fields(template: str) -> frozenset[str]:
    """The names of the fields `template` fills in (`{limit:g}` is the field `limit`)."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)
