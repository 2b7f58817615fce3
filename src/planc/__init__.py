"""planc: a compiler toolchain for agent plans.

The library API is what the `planc` command calls:

    >>> import planc
    >>> result = planc.check('search(query: "outages", limit: 5) |> summarize(style: "bullets")')
    >>> result.ok, result.steps
    (True, 2)
"""

from planc.passes.check import CheckResult, check
from planc.diagnostics import Diagnostic, Fix, Position, Severity, Span
from planc.registry.python_tools import tool
from planc.syntax.extract import extract
from planc.syntax.parser import ParseResult, parse
from planc.syntax.printer import print_plan

__all__ = [
    "CheckResult",
    "Diagnostic",
    "Fix",
    "ParseResult",
    "Position",
    "Severity",
    "Span",
    "check",
    "extract",
    "parse",
    "load_plan",
    "print_plan",
    "save_plan",
    "tool",
]


def __getattr__(name: str):
    """`planc.save_plan` and `planc.load_plan` (stored plans), imported when first used."""
    if name in ("save_plan", "load_plan"):
        from planc.store import stored

        return getattr(stored, name)
    raise AttributeError(f"module 'planc' has no attribute {name!r}")
