"""`planc show --format tree`: the plan as a rich tree, one node per step and argument."""

from __future__ import annotations

from rich.markup import escape
from rich.tree import Tree

from planc.syntax import ast
from planc.syntax.printer import print_expr
from planc.syntax.steps import step_blocks


def tree_view(plan: ast.Plan, paths: dict, title: str, notes: dict | None = None) -> Tree:
    """The tree of `plan`; `notes` has a line of text to show beside some steps (what they cost)."""
    root = Tree(f"[bold]{title}[/] ({len(paths)} steps)")
    for pipeline in plan.pipelines:
        for step in pipeline.steps:
            _add_step(root, step, paths, notes or {})
    return root


def _add_step(parent: Tree, step: ast.Step, paths: dict, notes: dict) -> None:
    label = f"[magenta]{step.label.text}[/] = " if step.label else ""
    start = step.span.start
    note = f"  [yellow]{escape(notes[step])}[/]" if step in notes else ""
    node = parent.add(f"[dim]{paths[step]}[/]  {label}[bold cyan]{step.tool.text}[/]  [dim]{start.line}:{start.column}[/]{note}")
    blocks = dict((id(block), name) for block, name in step_blocks(step))
    for arg in step.args:
        if isinstance(arg.value, ast.Block) and id(arg.value) in blocks:
            branch = node.add(f"[green]{arg.name.text}[/]:")
            for pipeline in arg.value.pipelines:
                for inner in pipeline.steps:
                    _add_step(branch, inner, paths, notes)
        else:
            text = print_expr(arg.value).replace("[", "\\[")
            node.add(f"[green]{arg.name.text}[/]: {text}")
