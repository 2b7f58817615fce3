"""Plans as tools: which declared plan calls which, and E210 for a plan that calls itself.

A plan declared under `[plans.NAME]` in planc.toml is the tool `plan__NAME`.
Reading each declared plan's file once gives the call graph; a step calling
`plan__NAME` is E210 when NAME reaches itself again, directly or through
other plans.
"""

from __future__ import annotations

from pathlib import Path

from planc.registry.registry import Registry
from planc.syntax.parser import parse
from planc.syntax.steps import walk_steps

PREFIX = "plan__"


def plan_calls(registry: Registry) -> dict[str, set[str]]:
    """Declared plan name -> the declared plans its file calls."""
    folder = registry.source.parent if registry.source else Path.cwd()
    graph: dict[str, set[str]] = {}
    for name, table in registry.plans.items():
        try:
            text = (folder / table["file"]).read_text(encoding="utf-8")
        except OSError:
            graph[name] = set()  # a missing file is the file's problem, reported when it is checked
            continue
        parsed = parse(text).plan
        steps = walk_steps(parsed.pipelines) if parsed else ()
        graph[name] = {step.tool.text[len(PREFIX):] for step, _ in steps
                       if step.tool.text.startswith(PREFIX) and step.tool.text[len(PREFIX):] in registry.plans}
    return graph


def cycle_from(name: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of plan calls reachable from `name` (`["a", "b", "a"]`), or None."""
    path: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        path.append(node)
        for callee in sorted(graph.get(node, ())):
            found = visit(callee)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    return visit(name)
