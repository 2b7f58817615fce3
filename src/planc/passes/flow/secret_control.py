"""W508: a value labelled `secret` decides which steps run, so the record of what ran says something
about it: as a condition, or given to a step that may fail on it (a call, a pure step, a model). Redaction keeps a secret's text out of everything planc writes; it cannot keep out whether
a step ran or how the run ended.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from planc.analysis.result_labels import BLOCKS
from planc.diagnostics import Diagnostic
from planc.diagnostics.build import diagnostic
from planc.registry.provenance.expressions import carriers
from planc.registry.provenance.labels import SECRET
from planc.syntax import ast
from planc.syntax.printer import print_expr
from planc.syntax.steps import deciding

if TYPE_CHECKING:
    from planc.passes.flow.flow import CallFlow


def secret_control(calls: Mapping[str, CallFlow]) -> list[Diagnostic]:
    """One warning for each reference that carries `secret` into what decides whether a step runs (the
    `control` of each step's flow in `calls`, step path -> CallFlow) or whether an `exit` ends the run,
    at the first step it decides."""
    seen: set[int] = set()
    return [warning for path, call in calls.items() for warning in _deciders(path, call, seen)]


def _deciders(path: str, call: CallFlow, seen: set[int]) -> Iterator[Diagnostic]:
    """A warning for each reference carrying `secret`, not `seen` before, that decides whether `call`'s
    step runs, or whether it ends the run (an `exit`), or that it is given and may make it fail."""
    if SECRET in call.fails:  # first: the steps after it name this step's failure among their deciders
        given = [node for argument in call.sources for node, labels, _ in call.carriers(argument) if SECRET in labels]
        # With no argument carrying it, what it read (an agent's tools) does; its control is warned of
        # where it is decided, and so is a block's condition, at the steps of the block it decides.
        has_block = any(call.step.arg(block) is not None for block in BLOCKS)
        whole = [] if given or SECRET in call.control or has_block else [call.step.tool]
        seen.add(id(call.step.tool))
        for node in given or whole:
            if id(node) not in seen or node is call.step.tool:
                seen.add(id(node))
                yield diagnostic(
                    "W508",
                    "fails",
                    node.span,
                    step=path,
                    what=f"`{call.step.tool.text}` at step {path}",
                    written=_written(node),
                )
    if SECRET in call.control:
        for node, labels, _ in call.control_carriers():
            if SECRET in labels and id(node) not in seen:
                seen.add(id(node))
                yield diagnostic(
                    "W508",
                    "decides",
                    node.span,
                    step=path,
                    written=_written(node),
                    what=f"`{call.step.tool.text}` at step {path}",
                )
    condition = deciding(call.step) if call.step.tool.text == "exit" else None
    if condition is not None:
        for node, labels in carriers(condition.value, call.env):
            if SECRET in labels and id(node) not in seen:
                seen.add(id(node))
                yield diagnostic(
                    "W508",
                    "exits",
                    node.span,
                    step=path,
                    written=_written(node),
                    path=path,
                )


def _written(node: ast.Expr | ast.Name) -> str:
    """How the warning quotes what carries the secret: a step's name (a loop, a declared plan, a step
    given it) as written, else the expression."""
    return node.text if isinstance(node, ast.Name) else print_expr(node)
