"""The plain one-line form, `file:line:col: CODE message`, for golden files and grep."""

from __future__ import annotations

from planc.diagnostics.diagnostic import Diagnostic


def render_line(diagnostic: Diagnostic, file: str) -> str:
    start = diagnostic.span.start
    return f"{file}:{start.line}:{start.column}: {diagnostic.code} {diagnostic.message}"
