"""Check a step's arguments against its tool's signature: part of the resolve pass.

E200 unknown tool, E201 unknown argument, E202 missing required argument,
E209 a pipe the tool cannot take, E303 a one-of group given twice or not at all.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator
from typing import cast

import attrs

from planc.diagnostics import Diagnostic
from planc.diagnostics.build import diagnostic
from planc.registry.loading.registry import Registry
from planc.registry.tools.tool import Tool
from planc.syntax import ast


def unknown_tool(step: ast.Step, registry: Registry, path: str) -> Diagnostic:
    """E200 for `step` (at step path `path`), whose tool the registry does not have."""
    import difflib  # only for a plan with a mistake

    name = step.tool.text
    names = registry.names()
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        hints = [f"did you mean {' or '.join(f'`{c}`' for c in close)}?"]
    elif len(names) <= LISTED:
        hints = [f"the tools are {_listed(names)}"]
    else:  # too many to list: the nearest, by how alike their names are
        nearest = difflib.get_close_matches(name, names, n=LISTED // 2, cutoff=0)
        hints = [f"the tools nearest to `{name}` are {_listed(nearest)} (of {len(names)})"]
    return diagnostic("E200", "unknown_tool", step.tool.span, step=path, hints=hints, name=name)


LISTED = 16  # an unknown name's hint lists every tool up to this many, else the nearest half of it


def _listed(names: Iterable[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def with_registry_hints(diagnostic: Diagnostic, text: str, registry: Registry) -> Diagnostic:
    """A syntax diagnostic whose hints say more with the registry: the parameters of the step's tool for a
    positional argument (E102), and an example that calls this registry's own tools."""
    from planc.registry.tools.signatures import example_call
    from planc.syntax.errors import PLAN_HINT

    if diagnostic.code == "E102":
        diagnostic = name_parameters(diagnostic, text, registry)
    if PLAN_HINT in diagnostic.hints and registry.tools:
        tool = registry.tools[min(registry.tools)]
        ours = f"a plan is steps like `{example_call(tool)}`, one per line, `|>` between steps to pipe a result on"
        diagnostic = attrs.evolve(diagnostic, hints=tuple(ours if hint == PLAN_HINT else hint for hint in diagnostic.hints))
    return diagnostic


def check_arguments(step: ast.Step, tool: Tool, piped: bool, registry: Registry | None, path: str) -> Iterator[Diagnostic]:
    """E201, E202, E208, E209 and E303 for one step of a known tool, at step path `path`."""
    given = {arg.name.text for arg in step.args}
    for arg in step.args:
        if arg.name.text not in tool.params:
            yield diagnostic(
                "E201",
                "unknown_argument",
                arg.name.span,
                step=path,
                hints=[_parameters_hint(arg.name.text, tool)],
                tool=tool.name,
                name=arg.name.text,
            )
    if piped:
        if tool.pipe is None:
            yield diagnostic(
                "E209",
                "no_pipe",
                step.tool.span,
                step=path,
                tool=tool.name,
                hints=["start a new pipeline (a new line) and pass the earlier result by reference, like `$1`"],
            )
        elif tool.pipe in given:
            arg = cast(ast.Arg, step.arg(tool.pipe))  # given, as `given` says
            yield diagnostic(
                "E209",
                "piped_and_given",
                arg.name.span,
                step=path,
                param=tool.pipe,
                hints=[f"drop `{tool.pipe}: ...` to use the piped result, or start a new pipeline"],
            )
        else:
            given.add(tool.pipe)
    missing = [param for param in tool.required if param not in given]
    if missing:
        names = ", ".join(f"`{param}`" for param in missing)
        hint = f"`{tool.name}` needs {names}"
        if tool.pipe in missing:
            hint += f"; `{tool.pipe}` can also come from a pipe: `... |> {tool.name}(...)`"
        if len(missing) > 1:
            yield diagnostic("E202", "missing_arguments", step.tool.span, step=path, hints=[hint], tool=tool.name, names=names)
        else:
            yield diagnostic("E202", "missing_argument", step.tool.span, step=path, hints=[hint], tool=tool.name, names=names)
    if tool.name == "agent" and registry is not None and (tools := step.arg("tools")) is not None:
        yield from check_tool_patterns(tools.value, registry, path)
    for param, value, needed in tool.required_when:
        found = step.arg(param)
        if (
            found is not None
            and isinstance(found.value, ast.Literal | ast.String)
            and _literal(found.value) == value
            and needed not in given
        ):
            yield diagnostic(
                "E202",
                "needed_when",
                step.tool.span,
                step=path,
                hints=[f"add `{needed}: ...`, or choose another `{param}`"],
                tool=tool.name,
                needed=needed,
                param=param,
                value=value,
            )
    written = [arg.name.text for arg in step.args]
    for group in tool.one_of + tool.at_most_one:
        present = [name for name in written if name in group]
        options = " or ".join(f"`{param}`" for param in group)
        if group in tool.one_of and not present:
            yield diagnostic(
                "E303",
                "none_of",
                step.tool.span,
                step=path,
                hints=[f"keep exactly one of {options}"],
                tool=tool.name,
                options=options,
            )
        elif group in tool.one_of and len(present) > 1:
            yield diagnostic(
                "E303",
                "more_than_one",
                cast(ast.Arg, step.arg(present[1])).name.span,
                step=path,
                hints=[f"keep exactly one of {options}"],
                tool=tool.name,
                options=options,
            )
        elif len(present) > 1:
            yield diagnostic(
                "E303",
                "at_most_one",
                cast(ast.Arg, step.arg(present[1])).name.span,
                step=path,
                hints=[f"keep at most one of {options}"],
                tool=tool.name,
                options=options,
            )


def _literal(value: ast.Literal | ast.String) -> object:
    return value.value if isinstance(value, ast.Literal) else value.text


def check_tool_patterns(value: ast.Expr, registry: Registry, path: str) -> Iterator[Diagnostic]:
    """E208: an `agent`'s `tools` pattern (`linear__*`) that matches no tool of the registry."""
    if not isinstance(value, ast.ListExpr):
        return
    names = sorted(registry.tools)
    for item in value.items:
        pattern = item.text if isinstance(item, ast.String) else None
        if pattern is not None and not fnmatch.filter(names, pattern):
            import difflib

            close = difflib.get_close_matches(pattern.rstrip("*"), names, n=3, cutoff=0.5)
            hints = [f"did you mean {' or '.join(f'`{c}`' for c in close)}?"] if close else []
            yield diagnostic(
                "E208",
                "no_match",
                item.span,
                step=path,
                pattern=pattern,
                hints=hints + ["a pattern is a tool name, or a name with `*` like `linear__*`"],
            )


def name_parameters(diagnostic: Diagnostic, text: str, registry: Registry) -> Diagnostic:
    """An E102 (positional argument) with a hint naming the parameters of the step's tool."""
    depth = 0
    for offset in range(diagnostic.span.start_offset - 1, -1, -1):  # back to the step's `(`
        char = text[offset]
        depth += (char in ")]}") - (char in "([{")
        if depth < 0:
            break
    else:
        return diagnostic
    name = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", text[:offset])
    tool = registry.lookup(name.group(1)) if name else None
    if tool is None or not tool.params:
        return diagnostic
    listed = ", ".join(f"`{param}`" + (" (required)" if param in tool.required else "") for param in tool.params)
    return attrs.evolve(diagnostic, hints=(*diagnostic.hints, f"the parameters of `{tool.name}` are {listed}"))


def _parameters_hint(name: str, tool: Tool) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(tool.params), n=3, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(f'`{c}`' for c in close)}?"
    if not tool.params:
        return f"`{tool.name}` takes no arguments"
    return f"the parameters of `{tool.name}` are {', '.join(f'`{p}`' for p in tool.params)}"
