"""Evaluate a plan's values at run time: literals, references, templates, conditions.

A value is evaluated in a `Scope`: the results of the steps that ran, the run's
arguments, and what the enclosing blocks bind (`item`, `index`, `accumulator`,
and in a filter condition the current item's fields). A template's holes are
rendered once, as compact JSON when not strings; the rendered text is never
scanned again, so a tool's output cannot inject a reference.
"""

from __future__ import annotations

import json
from collections import ChainMap
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

import attrs

from planc.passes.resolve.resolve import ARGS
from planc.registry.provenance.expressions import ArgsView
from planc.registry.provenance.labels import NO_LABELS, UNTRUSTED_ONLY, LabelView, union
from planc.run_error import RunError  # the run's one error, below the store that raises it too
from planc.syntax import ast
from planc.syntax.printer import print_expr


class Exited(Exception):
    """An `exit` step ended the plan: `output` is the plan's result, carrying `labels`."""

    def __init__(self, status: str, message: str | None, output: object, labels: frozenset[str] = NO_LABELS) -> None:
        super().__init__(message)
        self.status, self.message, self.output, self.labels = status, message, output, labels


class Labelled:
    """A step's result with the labels it carries, where its handler says what they are (a control step
    whose result is not simply its arguments', a declared plan's, an agent's); `gates`, the labels
    of what decided, in it, whether the steps after it run (a declared plan's `exit`s)."""

    __slots__ = ("value", "view", "gates")

    def __init__(self, value: object, view: LabelView, gates: frozenset[str] = NO_LABELS) -> None:
        self.value, self.view, self.gates = value, view, gates


def unlabelled(result: object) -> tuple[object, LabelView | None]:
    """`result`'s value, and its labels when it is `Labelled` (else None)."""
    return (result.value, result.view) if type(result) is Labelled else (result, None)


class Gates:
    """The labels of the `exit` conditions asked so far in one plan being run, and of the steps that
    might have failed: they decide whether every later step of it runs. `caught`: whether a failure
    in the plan goes back to an agent (a declared plan it calls), which goes on, rather than ending
    the run."""

    __slots__ = ("labels", "caught")

    def __init__(self, caught: bool = False) -> None:
        self.labels = NO_LABELS
        self.caught = caught


# Whether a failure of the call being made goes back to an agent (one of its tool calls, its check),
# which goes on: a declared plan run there marks its `Gates` `caught`.
failure_caught: ContextVar[bool] = ContextVar("planc_failure_caught", default=False)

NOTHING = object()  # no piped input


class ToolFailed(RunError):
    """The tool itself failed: it raised, was given invalid arguments, or broke its `returns`.

    At agent depth this goes back to the model as an error result; anywhere else it fails the run.
    """


class Aborted(RunError):
    """A hook aborted the run (the gate, or `on_tool_error`): a hard stop, which no agent takes as a tool's
    error and no caller asks about again.

    `results` is the partial state: the result of every step that had finished, by step path. `error`
    is the tool's own error when `on_tool_error` aborted, so a caller can show why the step failed.
    """

    def __init__(
        self, message: str, node: object = None, *, results: Mapping | None = None, error: Exception | None = None
    ) -> None:
        super().__init__(message, node)
        self.results = dict(results or {})
        self.error = error


@attrs.frozen
class Scope:
    results: ChainMap  # Step -> its result (the steps that ran so far, shared)
    targets: Mapping  # Ref -> Step or ARGS (the resolve pass's)
    arguments: Mapping  # $args
    bindings: Mapping = attrs.field(factory=dict)  # item, index, accumulator
    fields: Mapping | None = None  # the current item, in a filter condition
    # Agent step -> its conversation (`agent_loop.Conversation`), visible where its results are.
    conversations: ChainMap = attrs.field(factory=ChainMap)
    # Where the values came from (passes/flow): step -> the labels of its result, beside `results`; the
    # labels of `$args`, of the bound names and of a filter's item; the labels of the conditions that
    # decided that this scope runs, and of the `exit` conditions asked so far in its plan.
    labels: ChainMap = attrs.field(factory=ChainMap)
    args_view: ArgsView = attrs.field(factory=lambda: ArgsView({}))
    binding_views: Mapping = attrs.field(factory=dict)
    field_view: LabelView | None = None
    control: frozenset = NO_LABELS
    gates: Gates = attrs.field(factory=Gates)
    written: frozenset = NO_LABELS  # what the plan's own literals carry: the labels of whoever wrote it

    # bind and inner make a scope per item of a loop: by the constructor, as attrs.evolve reads every field.
    def bind(self, views: Mapping | None = None, **names: object) -> Scope:
        """The scope with `names` bound (and their labels, `views`; none given: they carry none)."""
        return Scope(
            self.results,
            self.targets,
            self.arguments,
            {**self.bindings, **names},
            self.fields,
            self.conversations,
            self.labels,
            self.args_view,
            {**self.binding_views, **views} if views else self.binding_views,
            self.field_view,
            self.control,
            self.gates,
            self.written,
        )

    def inner(self, control: frozenset = NO_LABELS) -> Scope:
        """The scope of a block: its results visible only inside it, run under `control` too."""
        return Scope(
            self.results.new_child(),
            self.targets,
            self.arguments,
            self.bindings,
            self.fields,
            self.conversations.new_child(),
            self.labels.new_child(),
            self.args_view,
            self.binding_views,
            self.field_view,
            union(self.control, control),
            self.gates,
            self.written,
        )

    def controlled(self) -> frozenset:
        """The labels that decide whether a step of this scope runs now."""
        return union(self.control, self.gates.labels)

    # What `registry.provenance.expressions` reads the labels of an expression's value through.
    def ref_view(self, ref: ast.Ref) -> LabelView | ArgsView:
        target = self.targets[ref]
        if target == ARGS:
            return self.args_view
        return self.labels.get(target) or LabelView(UNTRUSTED_ONLY)  # not known: fail closed

    def name_view(self, head: str) -> LabelView:
        if head in self.binding_views:
            return self.binding_views[head]
        if head in self.bindings:  # bound to what carries nothing (`index`)
            return LabelView()
        return self.field_view.field(head) if self.field_view is not None else LabelView(UNTRUSTED_ONLY)


class TemplateScope(Mapping[str, object]):
    """What a template can read at one point of a run, by the names it reads them with: `$3` and `$label`
    (the steps that have run, as `names` calls them), `$args`, and `item`, `index` and `accumulator`
    where a block binds them. Read when first asked (a gate that never looks costs nothing).

    >>> scope = Scope({"s1": [1, 2]}, {}, {"n": 2}, {"item": 1, "index": 0})
    >>> dict(TemplateScope(scope, {"s1": ("$1", "$hits")}))
    {'$1': [1, 2], '$hits': [1, 2], '$args': {'n': 2}, 'item': 1, 'index': 0}
    """

    def __init__(self, scope: Scope, names: Mapping) -> None:
        self._scope, self._names = scope, names  # names: Step -> the names its result is read by
        self._values: dict | None = None

    def _read(self) -> dict:
        if self._values is None:
            scope = self._scope
            results = {name: result for step, result in scope.results.items() for name in self._names.get(step, ())}
            self._values = {**results, "$args": dict(scope.arguments), **scope.bindings}
        return self._values

    def __getitem__(self, name: str) -> object:
        return self._read()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def evaluate(expr: ast.Expr, scope: Scope) -> Any:
    """The run-time value of `expr` (a block is not a value: the interpreter runs it)."""
    if type(expr) is ast.Literal:
        return expr.value
    if type(expr) is ast.String:
        return render(expr, scope)
    if type(expr) is ast.Ref:
        return read(_ref_base(expr, scope), expr.accessors, print_expr(expr))
    if type(expr) is ast.Path:
        return read(_path_base(expr, scope), expr.accessors, print_expr(expr))
    if type(expr) is ast.ListExpr:
        return [evaluate(item, scope) for item in expr.items]
    if type(expr) is ast.Record:
        return {entry.key.text: evaluate(entry.value, scope) for entry in expr.entries}
    if type(expr) is ast.Not:
        return not truth(evaluate(expr.operand, scope), expr.operand)
    if type(expr) is ast.And:
        return all(truth(evaluate(operand, scope), operand) for operand in expr.operands)
    if type(expr) is ast.Or:
        return any(truth(evaluate(operand, scope), operand) for operand in expr.operands)
    if type(expr) is ast.Compare:
        return compare(expr.op, evaluate(expr.left, scope), evaluate(expr.right, scope), expr)
    raise RunError(f"`{print_expr(expr)}` is not a value", expr)


def render(string: ast.String, scope: Scope) -> str:
    pieces = []
    for part in string.parts:
        if isinstance(part, str):
            pieces.append(part)
        else:
            value = evaluate(part.target, scope)
            pieces.append(value if isinstance(value, str) else compact(value))
    return "".join(pieces)


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def read(value: Any, accessors: Sequence[ast.Accessor], written: str) -> Any:
    """`value` read through `.field`, `[index]` and `.length`; missing data names what exists."""
    for accessor in accessors:
        if isinstance(accessor, ast.Field):
            name = accessor.name
            if isinstance(value, Mapping):
                if name not in value:
                    keys = ", ".join(f"`{key}`" for key in value) or "none"
                    raise RunError(f"`{written}`: there is no field `{name}` (the fields are {keys})", accessor)
                value = value[name]
            elif name == "length" and isinstance(value, (list, str)):
                value = len(value)
            else:
                raise RunError(f"`{written}`: `.{name}` of {_kind(value)}", accessor)
        else:
            if not isinstance(value, list):
                raise RunError(f"`{written}`: `[{accessor.value}]` of {_kind(value)}", accessor)
            if accessor.value >= len(value):
                raise RunError(f"`{written}`: index {accessor.value} of a list of {len(value)}", accessor)
            value = value[accessor.value]
    return value


def truth(value: object, node: ast.Expr) -> bool:
    if not isinstance(value, bool):
        raise RunError(f"`{print_expr(node)}` is {_kind(value)}, not true or false", node)
    return value


def compare(op: str, left: Any, right: Any, node: ast.Compare) -> bool:
    if op == "==":
        return _same(left, right)
    if op == "!=":
        return not _same(left, right)
    if op == "contains":
        if isinstance(left, str) and isinstance(right, str):
            return right in left
        if isinstance(left, list):
            return any(_same(item, right) for item in left)
        raise RunError(f"`{print_expr(node)}`: `contains` needs a string or a list, found {_kind(left)}", node)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
    if not (numbers or (isinstance(left, str) and isinstance(right, str))):
        raise RunError(
            f"`{print_expr(node)}`: `{op}` needs two numbers or two strings, found {_kind(left)} and {_kind(right)}", node
        )
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def _same(left: object, right: object) -> bool:
    """JSON equality: `1 == 1.0`, but `true` is not `1`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _ref_base(ref: ast.Ref, scope: Scope) -> object:
    target = scope.targets[ref]
    if target == ARGS:
        return scope.arguments
    if target not in scope.results:
        raise RunError(f"`${ref.name.text}` has no result: its step did not run", ref)
    return scope.results[target]


def _path_base(path: ast.Path, scope: Scope) -> object:
    head = path.head.text
    if head in scope.bindings:
        return scope.bindings[head]
    if scope.fields is not None:
        if not isinstance(scope.fields, Mapping) or head not in scope.fields:
            keys = ", ".join(f"`{key}`" for key in scope.fields) if isinstance(scope.fields, Mapping) else "none"
            raise RunError(f"`{head}`: the item has no field `{head}` (its fields are {keys})", path.head)
        return scope.fields[head]
    raise RunError(f"`{head}` is not bound here", path.head)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object"
