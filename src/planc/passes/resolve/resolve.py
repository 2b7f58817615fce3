"""Resolve: what every reference, label and bare name in a plan refers to.

Decided from the tree alone: forward and self references (E203), unknown or
out-of-range references (E204), duplicate labels (E205), bare words outside a
condition or block (E206), and `item`/`index`/`accumulator` where no block
binds them (E207).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from planc.diagnostics import Diagnostic, Fix, Span, sort_key
from planc.diagnostics.build import diagnostic
from planc.passes.context import CheckContext
from planc.passes.resolve.labels import misplaced_labels
from planc.passes.resolve.signatures import check_arguments, unknown_tool
from planc.registry.loading.registry import Registry
from planc.registry.steps.builtins import CONTROL_STEPS, ITEM_FIELDS, param_binds
from planc.registry.tools.tool import Tool
from planc.syntax import ast
from planc.syntax.steps import block_name, children, step_paths, walk_steps
from planc.syntax.templates import BINDINGS

if TYPE_CHECKING:
    from planc.passes.check import CheckResult

ARGS = "args"
SHOWN = 10  # the errors of a declared plan an E211 lists
UNKNOWN = "whatever an unknown tool binds"
LATER = "steps can only read the results of steps before them"
# Other languages' spellings of the literals, as models write them.
LITERAL_SPELLINGS = {"true": "true", "false": "false", "none": "null", "null": "null", "nil": "null"}


@attrs.frozen
class Resolution:
    """What the resolve pass learned, keyed by node."""

    targets: dict  # Ref -> the Step it reads, or ARGS for `$args`
    paths: dict  # Step -> its step path
    tools: dict  # Step -> the Tool it calls, when it is known


def resolve(plan: ast.Plan, context: CheckContext) -> tuple[Resolution, list[Diagnostic]]:
    """Resolve the references and names of `plan`.

    >>> from planc.syntax.parser import parse
    >>> _, diagnostics = resolve(parse("a(x: $2)\\nb()").plan, CheckContext())
    >>> [(d.code, d.message) for d in diagnostics]
    [('E203', '`$2` refers to step 2, which comes after this step')]
    """
    resolver = _Resolver(plan, context.registry, context.plans)
    resolver.visit_steps(plan.pipelines, frames=(), bound=frozenset(), prefix="")
    resolver.check_labels()
    resolver.diagnostics.extend(misplaced_labels(plan.pipelines, resolver.targets, resolver.paths))
    resolution = Resolution(resolver.targets, resolver.paths, resolver.tools)
    return resolution, sorted(resolver.diagnostics, key=sort_key)


@attrs.define
class _Frame:
    """One level of steps: the plan's top level or a block's body, and where the walk is in it."""

    steps: tuple[ast.Step, ...]
    labels: dict  # label -> 1-based index in `steps`
    current: int = 0  # the 1-based index of the step being resolved


class _Resolver:
    """One walk over the plan: it numbers the steps and resolves every name on the way."""

    def __init__(self, plan: ast.Plan, registry: Registry | None, plans: Mapping[str, CheckResult] | None = None) -> None:
        self.plans = plans or {}  # the declared plans the plan calls, each checked
        self.plan = plan
        self.registry = registry
        self.tools: dict[ast.Step, Tool] = {}
        self.paths: dict[ast.Step, str] = {}
        self.targets: dict = {}
        self.diagnostics: list[Diagnostic] = []

    @functools.cached_property
    def label_paths(self) -> dict[str, str]:
        """Every label in the plan -> the path of its step (wanted only to explain an E204)."""
        return {step.label.text: path for step, path in reversed(step_paths(self.plan).items()) if step.label}

    def check_labels(self) -> None:
        first: dict[str, ast.Name] = {}
        for step, path in self.paths.items():
            if step.label is None:
                continue
            name = step.label
            if name.text == ARGS:
                self.diagnostics.append(diagnostic("E205", "args", name.span, step=path, hints=["choose another label"]))
                continue
            earlier = first.setdefault(name.text, name)
            if earlier is not name:
                at = earlier.span.start
                self.diagnostics.append(
                    diagnostic(
                        "E205",
                        "duplicate",
                        name.span,
                        step=path,
                        label=name.text,
                        hints=[
                            f"labels are unique in a plan; `{name.text}` was first defined at line {at.line}, column {at.column}"
                        ],
                    )
                )

    def visit_steps(self, pipelines: Sequence[ast.Pipeline], frames: tuple[_Frame, ...], bound: frozenset, prefix: str) -> None:
        steps = tuple(step for pipeline in pipelines for step in pipeline.steps)
        labels: dict[str, int] = {}
        for number, step in enumerate(steps, start=1):
            if step.label is not None:
                labels.setdefault(step.label.text, number)
        frame = _Frame(steps, labels)
        frames = frames + (frame,)
        piped = {id(step) for pipeline in pipelines for step in pipeline.steps[1:]}
        for number, step in enumerate(steps, start=1):
            frame.current = number
            path = self.paths[step] = f"{prefix}{number}"
            tool = self.resolve_tool(step, id(step) in piped, path)
            for arg in step.args:
                # What an unknown tool's arguments bind is unknown when it may be a misspelt `map`, `filter` or
                # `reduce`; else they bind nothing, and their own errors are reported beside E200.
                unknown = tool is None and self.registry is not None and _may_bind(step)
                binds = (UNKNOWN,) if unknown else param_binds(tool, arg.name.text)
                self.visit_arg(arg, step, frames, bound, binds, path)

    def resolve_tool(self, step: ast.Step, piped: bool, path: str) -> Tool | None:
        """The Tool `step` calls, with its arguments checked; None when it is unknown."""
        name = step.tool.text
        tool = self.registry.lookup(name) if self.registry else CONTROL_STEPS.get(name)
        if tool is None:
            if self.registry is not None:
                self.diagnostics.append(unknown_tool(step, self.registry, path))
            return None
        self.tools[step] = tool
        self.diagnostics.extend(check_arguments(step, tool, piped, self.registry, path))
        if tool.kind == "plan":
            self.diagnostics.extend(self.declared_plan(name, step.tool.span, tool.address, path))
        if tool is CONTROL_STEPS["agent"] and (check := step.arg("check")) is not None:
            self.diagnostics.extend(self.agent_check(check.value, path))
        return tool

    def agent_check(self, value: ast.Expr, path: str) -> list[Diagnostic]:
        """What an agent's `check` names: a tool of the registry (E200 otherwise), written as a string (E303),
        and, for a declared plan, one that can run (E210, E211)."""
        name = value.text if type(value) is ast.String else None
        if name is None:
            return [
                diagnostic(
                    "E303",
                    "check_not_name",
                    value.span,
                    step=path,
                    hints=['write the tool\'s name as a string, like `check: "validate"`'],
                )
            ]
        if self.registry is None:
            return []
        tool = self.registry.tools.get(name)
        if tool is None:
            import difflib  # only for a plan with a mistake

            close = difflib.get_close_matches(name, sorted(self.registry.tools), n=3, cutoff=0.6)
            hints = [f"did you mean {' or '.join(f'`{c}`' for c in close)}?"] if close else []
            return [
                diagnostic(
                    "E200",
                    "unknown_check",
                    value.span,
                    step=path,
                    name=name,
                    hints=hints + ["`check` names a tool of the registry or a declared plan `plan__NAME`"],
                )
            ]
        if tool.kind == "plan":
            return self.declared_plan(name, value.span, tool.address, path)
        return []

    def declared_plan(self, name: str, span: Span, plan: str, path: str) -> list[Diagnostic]:
        """E210 when calling the declared plan `plan` (as `name`, written at `span`) never ends; E211 when it
        cannot run."""
        assert self.registry is not None  # a declared plan is a tool of the registry
        cycle = self.registry.plans.cycle_from(plan)
        if cycle:
            return [
                diagnostic(
                    "E210",
                    "cycle",
                    span,
                    step=path,
                    name=name,
                    cycle=" -> ".join(cycle),
                    hints=["a plan cannot call itself, directly or through other plans (an agent's tools and check included)"],
                )
            ]
        file = self.registry.plans.file(plan)
        if file.text is None:
            return [diagnostic("E211", "unreadable", span, step=path, name=name, problem=file.problem)]
        checked = self.plans.get(plan)
        errors = [d for d in checked.diagnostics if d.is_error] if checked is not None else []
        if not errors:
            return []
        written = file.declaration.written
        hints = [f"{written}:{d.span.start.line}:{d.span.start.column}: {d.code} {d.message}" for d in errors[:SHOWN]]
        if len(errors) > SHOWN:
            hints.append(f"and {len(errors) - SHOWN} more: `planc check {written}` shows them all")
        return [
            diagnostic(
                "E211",
                "errors",
                span,
                step=path,
                hints=hints,
                name=name,
                file=written,
                count=len(errors),
                plural="s" if len(errors) > 1 else "",
            )
        ]

    def visit_arg(
        self, arg: ast.Arg, step: ast.Step, frames: tuple[_Frame, ...], bound: frozenset, binds: Iterable[str], path: str
    ) -> None:
        """Resolve an argument's value; `binds` are the names its parameter binds (a block's, a condition's)."""
        pending = [arg.value]
        blocks = 0
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Ref):
                self.resolve_ref(node, step, frames)
            elif isinstance(node, ast.Path):
                self.resolve_path(node, step, bound.union(binds))
            elif isinstance(node, ast.String):
                for hole in node.holes:
                    if isinstance(hole.target, ast.Ref):
                        self.resolve_ref(hole.target, step, frames)
                    else:  # a hole names a binding, never a field of the item
                        self.resolve_path(hole.target, step, bound.union(binds) - {ITEM_FIELDS})
            elif isinstance(node, ast.Block):
                blocks += 1
                inner = bound.union(binds) - {ITEM_FIELDS}
                self.visit_steps(node.pipelines, frames, inner, f"{path}/{block_name(arg, blocks)}.")
            elif not isinstance(node, ast.Literal):
                pending.extend(reversed(children(node)))  # text order, as step paths count blocks

    def resolve_ref(self, ref: ast.Ref, step: ast.Step, frames: tuple[_Frame, ...]) -> None:
        target = ref.target
        path = self.paths[step]
        if target == ARGS:
            self.targets[ref] = ARGS
            return
        written = f"${ref.name.text}"
        if isinstance(target, int):
            top = frames[0]
            if target == 0 or target > len(top.steps):
                self.diagnostics.append(
                    diagnostic(
                        "E204",
                        "no_step",
                        ref.head_span,
                        step=path,
                        hints=_number_hints(target, top.current),
                        written=written,
                        count=len(top.steps),
                    )
                )
            else:
                self._check_order(ref, written, target, top, path)
            return
        for frame in reversed(frames):
            if target in frame.labels:
                self._check_order(ref, written, frame.labels[target], frame, path, label=target)
                return
        if target in self.label_paths:
            self.diagnostics.append(
                diagnostic(
                    "E204",
                    "hidden_label",
                    ref.head_span,
                    step=path,
                    written=written,
                    label=target,
                    path=self.label_paths[target],
                    hints=["a label defined inside a block is visible only inside that block"],
                )
            )
            return
        import difflib  # only an unknown label pays for it

        visible = sorted({label for frame in frames for label in frame.labels})
        candidates = visible + [ARGS]
        hints = [f"did you mean `${match}`?" for match in difflib.get_close_matches(target, candidates, n=3)]
        if not hints:
            hints = [
                f"the labels visible here are {', '.join(f'`${v}`' for v in visible)}"
                if visible
                else "no step here has a label; label one with `name = tool(...)`"
            ]
        self.diagnostics.append(
            diagnostic("E204", "unknown_label", ref.head_span, step=path, hints=hints, written=written, label=target)
        )

    def _check_order(self, ref: ast.Ref, written: str, index: int, frame: _Frame, path: str, label: str | None = None) -> None:
        """`ref` (written `written`) reads step `index` of `frame`, by its number or by `label`: E203 unless
        that step comes before the one being resolved."""
        if index == frame.current:
            self.diagnostics.append(
                diagnostic(
                    "E203",
                    "self",
                    ref.head_span,
                    step=path,
                    written=written,
                    hints=["a step cannot read its own result; refer to an earlier step"],
                )
            )
        elif index > frame.current and label is None:
            self.diagnostics.append(
                diagnostic("E203", "later_step", ref.head_span, step=path, written=written, number=index, hints=[LATER])
            )
        elif index > frame.current:
            self.diagnostics.append(
                diagnostic("E203", "later_label", ref.head_span, step=path, written=written, label=label, hints=[LATER])
            )
        else:
            self.targets[ref] = frame.steps[index - 1]

    def resolve_path(self, path_node: ast.Path, step: ast.Step, bound: frozenset) -> None:
        head = path_node.head.text
        if head in bound or ITEM_FIELDS in bound or UNKNOWN in bound:
            return
        path = self.paths[step]
        if head in BINDINGS:
            self.diagnostics.append(
                diagnostic("E207", "unbound", path_node.head.span, step=path, name=head, hints=[_binding_hint(head)])
            )
            return
        text = head + "".join(f".{a.name}" if isinstance(a, ast.Field) else f"[{a.value}]" for a in path_node.accessors)
        meant = LITERAL_SPELLINGS.get(text.lower()) if not path_node.accessors else None
        if meant:
            hint, replacement = f"did you mean `{meant}`? (planc writes `true`, `false` and `null`)", meant
        else:
            replacement = json.dumps(text)
            hint = f"did you mean the string {replacement}?"
        self.diagnostics.append(
            diagnostic(
                "E206", "bare_word", path_node.span, step=path, hints=[hint], fix=Fix(path_node.span, replacement), text=text
            )
        )


def _number_hints(target: int, current: int) -> list[str]:
    if target == 0:
        return ["steps are numbered from 1: `$1` is the first step"]
    if current == 1:
        return ["this is the first step: there is no earlier result to read"]
    readable = "`$1`" if current == 2 else f"`$1` to `${current - 1}`"
    return [f"this is step {current}; it can read {readable}"]


def _binding_hint(head: str) -> str:
    if head == "accumulator":
        return "`accumulator` is bound only inside the `do` block of `reduce`"
    return f"`{head}` is bound only inside the `do` block of `map`, `filter` or `reduce` (and in `filter`'s `where` and `infer`)"


def iter_refs(plan: ast.Plan) -> Iterator[ast.Ref]:
    """Every reference in `plan`, holes included."""
    for step, _ in walk_steps(plan.pipelines):
        for arg in step.args:
            pending = [arg.value]
            while pending:
                node = pending.pop()
                if isinstance(node, ast.Ref):
                    yield node
                elif not isinstance(node, ast.Block):
                    pending.extend(children(node))


def _may_bind(step: ast.Step) -> bool:
    """Whether `step`, whose tool is unknown, may be a control step that binds names: it is given a block
    (`for_each(do: { ... })`), or its name is close to one's (`mapp`, `fitler`)."""
    import difflib  # only for a plan with an unknown tool

    if any(type(arg.value) is ast.Block for arg in step.args):
        return True
    binding = [name for name, tool in CONTROL_STEPS.items() if tool.binds]
    return bool(difflib.get_close_matches(step.tool.text.lower(), binding, n=1, cutoff=0.6))
