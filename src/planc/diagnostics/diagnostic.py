"""The one diagnostic type every stage reports with."""

from __future__ import annotations

from enum import Enum

import attrs

from planc.diagnostics.span import Span


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


SEVERITIES = {"E": Severity.ERROR, "W": Severity.WARNING, "N": Severity.NOTE}  # by a code's first letter


@attrs.frozen
class Fix:
    """Replace the text at `span` with `replacement`; an empty span inserts."""

    span: Span
    replacement: str

    def to_json(self) -> dict:
        return {"span": self.span.to_json(), "replacement": self.replacement}


@attrs.frozen
class Diagnostic:
    code: str
    message: str
    span: Span
    step: str | None = None
    hints: tuple[str, ...] = ()
    fix: Fix | None = None

    @property
    def severity(self) -> Severity:
        return SEVERITIES[self.code[0]]

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "span": self.span.to_json(),
            "step": self.step,
            "hints": list(self.hints),
            "fix": self.fix.to_json() if self.fix else None,
        }


def sort_key(diagnostic: Diagnostic) -> tuple:
    return (diagnostic.span.start_offset, diagnostic.span.end_offset, diagnostic.code)
