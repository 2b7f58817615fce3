"""planc: a compiler toolchain for agent plans.

The library API is what the `planc` command calls:

    >>> import planc
    >>> result = planc.check('search(query: "outages", limit: 5) |> summarize(style: "bullets")')
    >>> result.ok, result.steps
    (True, 2)

Each name is imported from its module when first used (`from planc import check` as well), so
importing `planc`, or one of its modules such as `planc.syntax.parser`, loads none of the passes.
`planc.__version__` is the installed package's version, read from its metadata when first asked for:
the one version `planc --version`, `planc mcp`, `planc lsp` and every stored plan report.
"""

from typing import TYPE_CHECKING

# Each name of the API, and the module it comes from.
_API = {
    "CheckResult": "planc.passes.check",
    "Diagnostic": "planc.diagnostics",
    "Fix": "planc.diagnostics",
    "ParseResult": "planc.syntax.parser",
    "Position": "planc.diagnostics",
    "Severity": "planc.diagnostics",
    "Span": "planc.diagnostics",
    "check": "planc.passes.check",
    "export_grammar": "planc.decoding",
    "extract": "planc.syntax.extract",
    "parse": "planc.syntax.parser",
    "load_plan": "planc.store.stored",
    "print_plan": "planc.syntax.printer",
    "save_plan": "planc.store.stored",
    "tool": "planc.registry.tools.python_tools",
    "load_registry": "planc.registry.loading.config",
    "load_policy": "planc.passes.policy.load",
    "load_project": "planc.project",
    "Project": "planc.project",
    "render_repair": "planc.diagnostics.render_repair",
    "run": "planc.backend.run.launch",
    "ArgumentsRefused": "planc.backend.run.launch",
    "run_async": "planc.backend.run.launch",
    "approve": "planc.backend.run.approved_run",
    "approve_async": "planc.backend.run.approved_run",
    "AwaitingApproval": "planc.backend.calls.approvals",
    "NotWaiting": "planc.store.run_store",
    "RunResult": "planc.backend.run.interpreter",
    "Hooks": "planc.backend.calls.hooks",
    "plan": "planc.planning.planner",
    "plan_async": "planc.planning.planner",
    "Planned": "planc.planning.planner",
    "system_prompt": "planc.planning.prompt",
}

__all__ = list(_API)

if TYPE_CHECKING:
    __version__: str
    from planc.backend.calls.approvals import AwaitingApproval
    from planc.backend.calls.hooks import Hooks
    from planc.backend.run.approved_run import approve, approve_async
    from planc.backend.run.interpreter import RunResult
    from planc.backend.run.launch import ArgumentsRefused, run, run_async
    from planc.decoding import export_grammar
    from planc.diagnostics import Diagnostic, Fix, Position, Severity, Span
    from planc.diagnostics.render_repair import render_repair
    from planc.passes.check import CheckResult, check
    from planc.passes.policy.load import load_policy
    from planc.planning.planner import Planned, plan, plan_async
    from planc.planning.prompt import system_prompt
    from planc.project import Project, load_project
    from planc.registry.loading.config import load_registry
    from planc.registry.tools.python_tools import tool
    from planc.store.run_store import NotWaiting
    from planc.store.stored import load_plan, save_plan
    from planc.syntax.extract import extract
    from planc.syntax.parser import ParseResult, parse
    from planc.syntax.printer import print_plan


def __getattr__(name: str) -> object:
    """The API name `name`, imported from its module on first use and kept here (`__version__` read from
    the package's metadata, which costs a look through the installed distributions: not at import)."""
    if name == "__version__":
        from planc.version import installed_version

        value: object = installed_version()
    elif name in _API:
        import importlib

        value = getattr(importlib.import_module(_API[name]), name)
    else:
        raise AttributeError(f"module 'planc' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})
