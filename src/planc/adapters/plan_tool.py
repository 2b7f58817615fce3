"""A checked plan as one tool of an agent framework.

The plan is checked when the tool is made, with everything `planc check` uses (the project's registry,
policy, principal and budget), so a framework only ever runs a plan that checked. Its run arguments
(`$args`, or a declared plan's `params`) are the tool's parameters; a call runs the plan as `planc run`
does, recorded in the project's run store. What the framework's model gets back is the plan's result, or
why the run refused or failed, as data: a plan's failure is the model's to read, not an exception that
ends the framework's own run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from planc.backend.state.values import RunError
from planc.passes.check import CheckResult
from planc.project import Project, load_project

if TYPE_CHECKING:
    from planc.backend.run.interpreter import RunResult


@attrs.frozen
class PlanTool:
    """The checked plan `checked`, called `name` by the framework's model, run in `project`."""

    name: str
    description: str
    checked: CheckResult
    project: Project

    def parameters(self) -> dict:
        """The tool's parameters as JSON Schema: the plan's run arguments, each of its type."""
        context, typing = self.checked.context, self.checked.typing
        assert context is not None and typing is not None  # a plan that checked has both
        declared = context.arguments
        types = dict(declared if declared is not None else typing.arguments)
        required = [name for name, schema in types.items() if declared is None or "default" not in schema]
        return {"type": "object", "properties": types, "required": required, "additionalProperties": False}

    def __call__(self, arguments: Mapping) -> dict:
        """Run the plan with `arguments`: `{"status", "output"}`, or `{"error"}` saying why it did not finish."""
        if not isinstance(arguments, Mapping):
            return _not_an_object(arguments)
        try:
            return _answer(self.project.run(self.checked, arguments=dict(arguments)))
        except RunError as error:
            return {"error": str(error)}

    async def call_async(self, arguments: Mapping) -> dict:
        """The same, awaited in the framework's own event loop (`planc.run_async`), as a framework calls its
        tools from inside its loop."""
        if not isinstance(arguments, Mapping):
            return _not_an_object(arguments)
        try:
            return _answer(await self.project.run_async(self.checked, arguments=dict(arguments)))
        except RunError as error:
            return {"error": str(error)}


def _not_an_object(arguments: object) -> dict:
    return {"error": f"the arguments must be an object, found {type(arguments).__name__}"}


def _answer(result: RunResult) -> dict:
    return {"status": result.status, "output": result.kept()}


def plan_tool(plan: str | Path, *, name: str, description: str = "", project: Project | str | Path = ".") -> PlanTool:
    """The plan `plan` (its text, or the path of a plan file) as the tool `name`, checked with `project` (a
    `Project`, or the path `planc.load_project` opens). A ValueError listing its errors when it does not check.
    """
    if not isinstance(project, Project):
        project = load_project(project)
    path = plan if isinstance(plan, Path) else None
    text = plan.read_text(encoding="utf-8") if isinstance(plan, Path) else plan
    checked = project.check(text, path=path)
    if not checked.ok:
        errors = "; ".join(f"{d.code} {d.message}" for d in checked.diagnostics if d.is_error)
        raise ValueError(f"the plan of tool `{name}` does not check: {errors}")
    return PlanTool(name, description or f"Runs a checked planc plan ({checked.steps} steps).", checked, project)
