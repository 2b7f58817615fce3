"""Diagnostics: what every stage reports, and the renderers that show it.

The renderers live in their own modules (`planc.diagnostics.render_text`,
`render_json`, `render_repair`, `render_sarif`, `render_line`) and are
imported only by the command that needs them, so a JSON check never loads rich.
"""

from planc.diagnostics.diagnostic import Diagnostic, Fix, Severity, sort_key
from planc.diagnostics.span import Position, Span, advance, position_at, span_between

__all__ = [
    "Diagnostic",
    "Fix",
    "Position",
    "Severity",
    "Span",
    "advance",
    "position_at",
    "sort_key",
    "span_between",
]
