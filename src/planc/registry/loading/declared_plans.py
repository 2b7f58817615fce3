"""Declared plans: the plan files planc.toml declares under `[plans.NAME]`, each the tool `plan__NAME`.

This module is the one place their files are read. Each file is read and parsed once per
registry, when first asked for, and the calls between them make the graph in which a plan
that reaches itself again is a cycle (E210). Checking one is the check pipeline's business
(`planc.passes.check`); the result is kept here, so a plan is checked once per registry
however many plans call it.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "a.plan").write_text("plan__b()"), (folder / "b.plan").write_text("plan__a()")
>>> plans = DeclaredPlans({name: PlanDeclaration(name, folder / f"{name}.plan", f"{name}.plan") for name in "ab"})
>>> plans.cycle_from("a"), sorted(plans.calls("b"))
(['a', 'b', 'a'], ['a'])
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from planc.registry.settings.declarations import PlanDeclaration

if TYPE_CHECKING:
    from planc.syntax.ast import Pipeline, Plan
    from planc.syntax.parser import ParseResult

PREFIX = "plan__"  # the tool `plan__NAME` runs the plan NAME
T = TypeVar("T")


def tool_name(plan: str) -> str:
    return PREFIX + plan


def plan_of(tool: str) -> str | None:
    """The declared plan a tool name calls (`plan__triage` -> `triage`), or None."""
    return tool[len(PREFIX) :] if tool.startswith(PREFIX) else None


@attrs.frozen
class PlanFile:
    """A declared plan's file as read: its text and its parse, or why it cannot be read."""

    declaration: PlanDeclaration
    text: str | None  # None when the file cannot be read
    problem: str | None = None  # why it cannot be read
    parsed: ParseResult | None = None  # the ParseResult of `text`

    @property
    def plan(self) -> Plan | None:
        """The plan's tree, or None when the file cannot be read or has syntax errors."""
        return self.parsed.plan if self.parsed is not None else None


class DeclaredPlans(Mapping[str, PlanDeclaration]):
    """The declared plans of one registry, by name; their files are read when first asked for."""

    def __init__(self, declarations: Mapping[str, PlanDeclaration] | None = None) -> None:
        self.declarations = dict(declarations or {})
        self._files: dict[str, PlanFile] = {}
        self._checked: dict[str, Any] = {}

    def __getitem__(self, name: str) -> PlanDeclaration:
        return self.declarations[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.declarations)

    def __len__(self) -> int:
        return len(self.declarations)

    def __repr__(self) -> str:
        return f"DeclaredPlans({sorted(self.declarations)})"

    def file(self, name: str) -> PlanFile:
        """The file of the plan `name`, read and parsed once."""
        if name not in self._files:
            declaration = self.declarations[name]
            try:
                if declaration.file.exists() and not declaration.file.is_file():  # a FIFO would never end
                    raise OSError(f"{declaration.written} is not a regular file")
                with open(declaration.file, encoding="utf-8", newline="") as handle:  # spans are offsets into it
                    text = handle.read()
            except (OSError, UnicodeDecodeError) as error:
                problem = getattr(error, "strerror", None) or str(error)
                self._files[name] = PlanFile(declaration, None, f"cannot read {declaration.written}: {problem}")
            else:
                from planc.syntax.parser import parse

                self._files[name] = PlanFile(declaration, text, parsed=parse(text))
        return self._files[name]

    def calls(self, name: str) -> frozenset[str]:
        """The declared plans that the plan `name` may call (none when it cannot be parsed)."""
        plan = self.file(name).plan
        return self.called_by(plan.pipelines) if plan is not None else frozenset()

    def called_by(self, pipelines: Iterable[Pipeline]) -> frozenset[str]:
        """The declared plans the steps of `pipelines` may call: as steps, as an agent's tools (its `tools`
        patterns, every plan without them or when they are not literal), or as an agent's `check`. A step
        that continues a conversation offers none of its own: its tools are among its first step's."""
        from planc.registry.steps.builtins import agent_check, agent_patterns
        from planc.syntax.steps import walk_steps

        called: set[str] = set()
        for step, _ in walk_steps(pipelines):
            names = [step.tool.text]
            if step.tool.text == "agent":
                names.append(agent_check(step) or "")
                patterns = [] if step.arg("continue") is not None else agent_patterns(step) or ["*"]
                names += [
                    tool_name(plan)
                    for plan in self.declarations
                    if any(fnmatch.fnmatchcase(tool_name(plan), pattern) for pattern in patterns)
                ]
            called.update(callee for written in names if (callee := plan_of(written)) is not None and callee in self.declarations)
        return frozenset(called)

    def cycle_from(self, name: str) -> list[str] | None:
        """A cycle of plan calls reachable from `name` (`["a", "b", "a"]`), or None."""
        path: list[str] = []
        done: set[str] = set()

        def visit(node: str) -> list[str] | None:
            if node in path:
                return path[path.index(node) :] + [node]
            if node in done:
                return None
            path.append(node)
            for callee in sorted(self.calls(node)):
                found = visit(callee)
                if found:
                    return found
            path.pop()
            done.add(node)
            return None

        return visit(name)

    def reachable(self, names: Iterable[str]) -> list[str]:
        """`names` and every declared plan they call, directly or not, each once, in a stable order."""
        seen: dict[str, None] = {}
        pending = sorted(set(names), reverse=True)
        while pending:
            name = pending.pop()
            if name in seen or name not in self.declarations:
                continue
            seen[name] = None
            pending.extend(sorted(self.calls(name) - seen.keys(), reverse=True))
        return list(seen)

    def for_file(self, path: Path) -> PlanDeclaration | None:
        """The declaration whose file is `path`, when planc.toml declares it."""
        resolved = path.resolve()
        return next((plan for plan in self.declarations.values() if plan.file.resolve() == resolved), None)

    def checked(self, name: str, check: Callable[[PlanFile], T]) -> T:
        """`check(file)` of the plan `name`, made once per registry."""
        if name not in self._checked:
            self._checked[name] = check(self.file(name))
        return self._checked[name]
