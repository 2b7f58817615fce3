"""Diagnostics: what every stage reports, the table of codes it is built from, and the renderers that show it.

Every diagnostic is made by `planc.diagnostics.build.diagnostic(code, form, span, ..., **fields)`,
which words its message with the form's template in the table of codes (`codes.py`). (It is not
exported here: `planc.diagnostics.diagnostic` is the module of the `Diagnostic` type.)

The renderers live in their own modules (`planc.diagnostics.render_text`,
`render_json`, `render_repair`, `render_sarif`, `render_line`) and are
imported only by the command that needs them, so a JSON check never loads rich.
"""

from planc.diagnostics.diagnostic import Diagnostic, Fix, Severity, sort_key
from planc.diagnostics.span import Lines, Position, Span, position_at

__all__ = ["Diagnostic", "Fix", "Lines", "Position", "Severity", "Span", "position_at", "sort_key"]
