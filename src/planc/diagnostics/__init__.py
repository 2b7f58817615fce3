"""Diagnostics: what every stage reports, and the renderers that show it.

The renderers live in their own modules (`planc.diagnostics.render_text`,
`render_json`, `render_repair`, `render_sarif`, `render_line`) and are
imported only by the command that needs them, so a JSON check never loads rich.
"""

from planc.diagnostics.diagnostic import Diagnostic, Fix, Severity, sort_key
from planc.diagnostics.span import Lines, Position, Span, position_at

__all__ = ["Diagnostic", "Fix", "Lines", "Position", "Severity", "Span", "position_at", "sort_key"]
