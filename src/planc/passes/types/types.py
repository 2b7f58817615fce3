"""Types: the static type of every step result and value, checked against what receives it.

A type is a JSON Schema; None is unknown (`any`) and passes every check. A
step's type is its tool's `returns`; control steps derive theirs (by the type
rule of each one's declaration, `registry/steps/`). References and paths read
into those types.

- E300: a literal argument that its parameter's schema rejects, or a
  reference, template or pipe whose type cannot match it; a comparison of
  values that cannot be compared.
- E301: a field that the type read from does not have.
- E302: a condition where a value is expected, or a value where a condition is.
- E303: an agent's `output_schema`, `max_iterations`, `tools`, `check` or `repairs` that cannot work.
- E212: an agent's `continue` that cannot continue its conversation this way (`agent_turns.py`).
- W501: the result of a step that changes nothing is never used.
- W502: a hole from another template language in a string (`foreign_holes.py`).
- W503: `==`/`!=` with a literal outside the `enum` of the other side.
- W507: a reference reads a field that no result of a tool without `returns` had (its learned shape,
  `registry/tools/learned_shapes.py`). A learned shape never types a value: it only warns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from planc.analysis.literals import (
    NOT_LITERAL,
    Problem,
    Validators,
    constrains,
    literal_value,
)
from planc.analysis.schema_words import describe, describe_value, means_length, missing_hints
from planc.analysis.step_effects import step_effects
from planc.diagnostics import Diagnostic, Fix, sort_key
from planc.diagnostics.build import diagnostic
from planc.passes.context import CheckContext
from planc.passes.resolve.resolve import ARGS
from planc.passes.types.agent_turns import agent_turns
from planc.passes.types.conditions import Conditions
from planc.passes.types.control_steps import agent_input, control_result
from planc.passes.types.foreign_holes import foreign_holes
from planc.registry.steps.builtins import CONTROL_STEPS, ITEM_FIELDS
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.registry.tools.schemas import (
    BOOLEAN,
    LENGTH,
    SCALARS,
    STRING,
    Missing,
    compatible,
    items_of,
    kinds,
    list_of,
    read,
    record_of,
)
from planc.syntax import ast
from planc.syntax.templates import BINDINGS

if TYPE_CHECKING:
    from planc.diagnostics import Span
    from planc.passes.resolve.resolve import Resolution
    from planc.registry.steps.pure_steps import PureStep
    from planc.registry.tools.learned_shapes import LearnedShape
    from planc.registry.tools.tool import Tool

Schema = Any  # a JSON Schema (a mapping), or None: unknown, which passes every check

AGENT = CONTROL_STEPS["agent"]
ONLY_CONDITIONS = "a condition is only allowed as `where` of `filter` and `when` of `decide` or `exit`"


@attrs.frozen
class Typing:
    """What the types pass learned: the type of steps' results and of values, keyed by node.

    The types are shared with the registry and with each other: read them, never change them.
    """

    types: dict  # Step or expression -> JSON Schema of its value; None: unknown
    # The run arguments' types: the plan's declared `params`, else for each `$args.NAME` given as a
    # parameter the schema of the first parameter it is given as (so `--arg NAME=...` reads it so).
    arguments: dict = attrs.field(factory=dict)

    def of(self, node: object) -> dict | None:
        return self.types.get(node)


def types(plan: ast.Plan, context: CheckContext) -> tuple[Typing, list[Diagnostic]]:
    """Type the steps and values of `plan` and check them; uses the resolve pass's facts.

    >>> from planc.passes.check import check
    >>> checked = check('map(over: [1, 2], concurrency: 0, do: { reshape(value: item) })')
    >>> [d.message for d in checked.diagnostics]
    ['wrong value for `concurrency` of `map`: expected an integer of at least 1, found the integer 0']
    >>> checked.typing.of(checked.plan.pipelines[0].steps[0])
    {'type': 'array', 'items': {'type': 'integer'}, 'maxItems': 2}
    """
    resolution = context.learned("resolution")
    checker = _Checker(resolution, context)
    checker.visit_steps(plan.pipelines, {})
    checker.report_unused()
    checker.diagnostics.extend(agent_turns(plan, resolution, context.registry, context.source))
    return Typing(checker.types, checker.arguments), sorted(checker.diagnostics, key=sort_key)


class _Checker(Conditions):
    """One walk over the plan in text order, so that a step's type is known before it is read."""

    def __init__(self, resolution: Resolution, context: CheckContext) -> None:
        self.resolution = resolution
        self.source = context.source
        self.registry = context.registry
        arguments = context.arguments
        self.arguments = dict(arguments) if arguments is not None else {}
        self.arguments_declared = arguments is not None
        self.args_type = (
            None if arguments is None else {"type": "object", "properties": dict(arguments), "additionalProperties": False}
        )
        self.types: dict = {}
        self.learned: dict = {}  # a step whose tool declares no `returns` -> the shape learned of its results
        self.diagnostics: list[Diagnostic] = []
        self.validators = Validators()
        self.output_schemas: dict = {}  # an agent's `output_schema` value -> its schema, when valid
        self.labels: list[set] = []  # the labels readable so far, per level of blocks
        self.unused: list[ast.Step] = []  # results that no pipe or block passes on
        self.path: str | None = None  # the path of the step being checked

    # --- steps

    def visit_steps(self, pipelines: Sequence[ast.Pipeline], env: dict) -> Schema:
        """Check the steps of `pipelines`; the type of the last one's result (a block's result)."""
        self.labels.append(set())
        result = None
        for pipeline in pipelines:
            for number, step in enumerate(pipeline.steps):
                result = self.visit_step(step, env, number > 0, result)
            self.unused.append(pipeline.steps[-1])
        self.unused.pop()  # the last step's result is the plan's or the block's
        self.labels.pop()
        return result

    def visit_step(self, step: ast.Step, env: dict, piped: bool, pipe_type: Schema) -> Schema:
        outer, self.path = self.path, self.resolution.paths.get(step)
        tool = self.resolution.tools.get(step)
        inputs: dict = {}
        pipe_arg = step.arg(tool.pipe) if tool is not None and tool.pipe else None
        if piped and tool is not None and tool.pipe and pipe_arg is None:
            inputs[tool.pipe] = pipe_type
            self.check_piped(step, tool, pipe_type)
        args = (pipe_arg, *(arg for arg in step.args if arg is not pipe_arg)) if pipe_arg else step.args
        for arg in args:
            binds = tool.binds.get(arg.name.text, ()) if tool is not None else ()
            inputs[arg.name.text] = self.visit_arg(arg, tool, _bind(env, binds, inputs) if binds else env)
        if tool is None:
            result = None
        elif tool.builtin:
            literals = self.literals(step, tool)
            pure = PURE_STEPS.get(tool.name)
            if pure is not None and pure.values is not None:
                self.check_values(step, pure, inputs, literals)
            result = control_result(tool.name, inputs, literals)
        else:
            result = tool.returns
            if result is None and tool.learned is not None:
                self.learned[step] = tool.learned
        self.types[step] = result
        if step.label is not None:
            self.labels[-1].add(step.label.text)
        self.path = outer
        return result

    def literals(self, step: ast.Step, tool: Tool) -> Mapping:
        """The literal inputs a built-in step's type rule reads: a pure step's literal arguments; an agent's
        `output_schema`, when it is a valid schema."""
        if tool is AGENT:
            schema = step.arg("output_schema")
            known = self.output_schemas.get(schema.value) if schema is not None else None
            return {"output_schema": known} if known is not None else {}
        if tool.name not in PURE_STEPS:
            return {}
        return LiteralArguments(step)

    def visit_arg(self, arg: ast.Arg, tool: Tool | None, env: dict) -> Schema:
        """Check one argument against its parameter; the type of its value."""
        name, value = arg.name.text, arg.value
        schema = tool.params.get(name) if tool is not None else None
        mark = schema.get("x-planc") if schema is not None else None
        if mark == "condition":
            self.check_condition(value, env)
            return BOOLEAN
        found = self.value_type(value, env)
        what = f"`{name}` of `{tool.name}`" if tool is not None else ""
        if mark == "block":
            if type(value) is not ast.Block:
                self.diagnostics.append(
                    diagnostic("E300", "not_block", value.span, step=self.path, what=what, found=self.words(value, found))
                )
        elif schema is not None and tool is AGENT:
            self.check_agent_input(value, name, schema, what)
        elif schema is not None:
            self.check_value(value, schema, what)
        return found

    def check_agent_input(self, value: ast.Expr, name: str, schema: Mapping, what: str) -> None:
        """E303 for an agent input no schema can rule out; its `output_schema` kept for its result's type."""
        literal = literal_value(value)
        refused = agent_input(name, literal, value.span, self.path) if literal is not NOT_LITERAL else None
        if refused:
            self.diagnostics.append(refused)
            return
        self.check_value(value, schema, what)
        if name == "output_schema" and isinstance(literal, dict):
            self.output_schemas[value] = literal

    def check_values(self, step: ast.Step, pure: PureStep, inputs: dict, literals: Mapping) -> None:
        """E300 for a pure step over values it cannot work with (`sum` of strings), known from the type of the
        items of its `over` (of each item's `field`, when a literal names it): at `over`, or at the step's name
        when `over` is piped."""
        over: Any = inputs.get("over")
        listed = kinds(over)  # every check of such a step pays for what follows: two `kinds` when all is well
        items = over.get("items") if listed is not None and "array" in listed else None
        if not isinstance(items, Mapping):
            return  # what the list holds is not known
        said, hints = None, []  # what was found, in words, when it is not the list's type
        if "field" not in inputs:
            have = kinds(items)
            if have is None or have & pure.value_kinds:
                return
            expected = describe({"type": "array", "items": pure.values})
            fields = items.get("properties") if have == {"object"} else None
            if isinstance(fields, Mapping) and fields:
                hints.append(
                    f'to use a field of each item, name it: `field: "{next(iter(fields))}"` (the items '
                    f"have {', '.join(f'`{name}`' for name in fields)})"
                )
        elif not isinstance(literals.get("field"), str):
            return  # which field is known at run time only
        else:
            field = literals["field"]
            found = read(items, field)  # a Missing: the items are not objects, or have no such field
            if found is None or not isinstance(found, Missing) and compatible(found, pure.values):
                return
            expected = f"a list of objects whose `{field}` is {describe(pure.values)}"
            if not isinstance(found, Missing):
                said = f"a list of objects whose `{field}` is {describe(found)}"
        said = said or describe(over)
        written = step.arg("over")
        self.diagnostics.append(
            diagnostic(
                "E300",
                "wrong_value",
                written.value.span if written is not None else step.tool.span,
                step=self.path,
                what=f"`over` of `{pure.tool.name}`",
                expected=expected,
                hints=hints,
                found=f"`{self.text(written.value)}`, {said}"
                if written is not None
                else f"the result of the step before, {said}",
            )
        )

    def check_piped(self, step: ast.Step, tool: Tool, pipe_type: Schema) -> None:
        assert tool.pipe is not None  # only a tool with a pipe is piped into
        schema = tool.params.get(tool.pipe)
        if schema is not None and not schema.get("x-planc") and not compatible(pipe_type, schema):
            self.diagnostics.append(
                diagnostic(
                    "E300",
                    "piped",
                    step.tool.span,
                    step=self.path,
                    tool=tool.name,
                    param=tool.pipe,
                    expected=describe(schema),
                    found=describe(pipe_type),
                    hints=[f"start a new pipeline and pass a part of that result, like `{tool.pipe}: $1.field`"],
                )
            )

    def report_unused(self) -> None:
        """W501 for each step that changes nothing (a read-only tool; a control or pure step whose blocks only
        read, that cannot exit) whose result no reference, pipe or block passes on."""
        read = set(self.resolution.targets.values())
        for step in self.unused:
            tool = self.resolution.tools.get(step)
            if tool is None or step in read or step_effects(step, self.resolution.tools, self.registry).ordered():
                continue
            self.path = self.resolution.paths.get(step)
            name = f"${step.label.text}" if step.label else f"${self.path}" if (self.path or "").isdigit() else None
            use = f"read it as `{name}`" if name else "label it and read it by its label"
            if not tool.builtin:
                does = f"`{tool.name}` only reads, so the call is wasted"
            elif any(type(arg.value) is ast.Block for arg in step.args):
                does = f"`{tool.name}` and the steps in it change nothing, so the step is wasted"
            else:
                does = f"`{tool.name}` changes nothing, so the step is wasted"
            self.diagnostics.append(
                diagnostic(
                    "W501",
                    "unused",
                    step.span,
                    step=self.path,
                    tool=tool.name,
                    hints=[f"{does} unless its result is used: {use}, pipe it on with `|>`, or remove the step"],
                )
            )

    # --- values

    def value_type(self, expr: ast.Expr, env: dict) -> Schema:
        """The type of `expr`, with the references and holes in it checked."""
        if isinstance(expr, ast.Literal):
            found = SCALARS[type(expr.value)]
        elif isinstance(expr, ast.String):
            found = STRING
            parts = expr.parts
            if len(parts) > 1 or type(parts[0]) is not str or "{" in parts[0]:
                self.visit_string(expr, env)
        elif isinstance(expr, ast.Ref):
            found = self.ref_type(expr)
        elif isinstance(expr, ast.Path):
            found = self.path_type(expr, env, fields=True)
        elif isinstance(expr, ast.ListExpr):
            found = list_of([self.value_type(item, env) for item in expr.items])
        elif isinstance(expr, ast.Record):
            found = record_of({entry.key.text: self.value_type(entry.value, env) for entry in expr.entries})
        elif isinstance(expr, ast.Block):
            found = self.visit_steps(expr.pipelines, {k: v for k, v in env.items() if k != ITEM_FIELDS})
        else:
            self.check_condition(expr, env)
            found = BOOLEAN
        self.types[expr] = found
        return found

    def visit_string(self, string: ast.String, env: dict) -> None:
        """Type the holes of a string that has holes or braces, and look for other languages' holes."""
        for part in string.parts:
            if isinstance(part, ast.Hole):
                if isinstance(part.target, ast.Ref):
                    self.types[part.target] = self.ref_type(part.target)
                else:  # a hole names a binding, never a field of the item
                    self.types[part.target] = self.path_type(part.target, env, fields=False)
        if self.source and _may_hold_foreign_holes(string.parts):
            self.diagnostics.extend(foreign_holes(string, self.source, lambda head: self.spell(head, env), self.path))

    def spell(self, head: str, env: dict) -> str | None:
        """The planc spelling of a foreign hole's first name, when it is certain here."""
        if head in BINDINGS:
            return head if head in env else None
        return f"${head}" if any(head in level for level in self.labels) else None

    def learn_argument(self, ref: ast.Ref, schema: Mapping) -> None:
        """`$args.NAME` given as a parameter of `schema`: the type an undeclared argument is read as."""
        if (
            len(ref.accessors) == 1
            and type(ref.accessors[0]) is ast.Field
            and schema
            and self.resolution.targets.get(ref) == ARGS
        ):
            self.arguments.setdefault(ref.accessors[0].name, schema)

    def check_value(self, expr: ast.Expr, schema: Mapping, what: str) -> None:
        """E300/E302 for the value `expr` of a parameter whose schema is `schema`."""
        kind = type(expr)
        if kind in ast.CONDITIONS:
            self.diagnostics.append(
                diagnostic("E302", "condition_as_value", expr.span, step=self.path, what=what, hints=[ONLY_CONDITIONS])
            )
            return
        value = literal_value(expr) if constrains(schema) else NOT_LITERAL
        if value is not NOT_LITERAL:
            problem = self.validators.problem(schema, value, expr)
            if problem:
                self.diagnostics.append(self.wrong_literal(problem, what))
            return
        if isinstance(expr, ast.Ref) and not self.arguments_declared:
            self.learn_argument(expr, schema)
        found = self.types.get(expr)
        if not compatible(found, schema) or isinstance(expr, ast.Block):
            self.diagnostics.append(
                diagnostic(
                    "E300",
                    "wrong_value",
                    expr.span,
                    step=self.path,
                    what=what,
                    expected=describe(schema),
                    found=self.words(expr, found),
                )
            )
        elif isinstance(expr, ast.ListExpr):
            for item in expr.items:
                self.check_value(item, items_of(schema) or {}, what)
        elif isinstance(expr, ast.Record):
            properties = schema.get("properties") or {}
            for entry in expr.entries:
                self.check_value(entry.value, properties.get(entry.key.text) or {}, what)

    def wrong_literal(self, problem: Problem, what: str) -> Diagnostic:
        """E300 for a literal value of the parameter `what` that its schema rejects."""
        at, hints = problem.node.span, problem.hints
        if problem.missing_key is not None:
            return diagnostic("E300", "missing_key", at, step=self.path, hints=hints, what=what, key=problem.missing_key)
        if problem.unexpected_key is not None:
            return diagnostic("E300", "unexpected_key", at, step=self.path, hints=hints, what=what, key=problem.unexpected_key)
        return diagnostic(
            "E300",
            "wrong_value",
            at,
            step=self.path,
            hints=hints,
            what=what,
            expected=problem.expected,
            found=problem.found,
            fix=problem.fix,
        )

    def words(self, expr: ast.Expr, found: object) -> str:
        """What a message says it found for `expr`, whose type is `found`."""
        if type(expr) is ast.Block:
            return "a block of steps"
        value = literal_value(expr)
        if value is not NOT_LITERAL:
            return describe_value(value)
        written = self.text(expr)
        return f"`{written}`, {describe(found)}" if found is not None else f"`{written}`"

    def text(self, node: ast.Expr) -> str:
        written = node.span.text(self.source) if self.source else "this value"
        return written if len(written) <= 40 else written[:37] + "..."

    # --- references

    def ref_type(self, ref: ast.Ref) -> Schema:
        target = self.resolution.targets.get(ref)
        if target is None:
            found = None
        elif target == ARGS:
            found = self.args_type
        else:
            found = self.types.get(target)
        if found is None and target in self.learned:
            self.follow(self.learned[target].schema, ref.accessors, f"${ref.name.text}", self.learned[target])
        found = self.follow(found, ref.accessors, f"${ref.name.text}")
        self.types[ref] = found
        return found

    def path_type(self, path: ast.Path, env: dict, fields: bool) -> Schema:
        head = path.head.text
        if head in env and head in BINDINGS:
            found = self.follow(env[head], path.accessors, head)
        elif fields and ITEM_FIELDS in env:  # in `filter(where: ...)` a bare name is a field of the item
            found = self.follow(env[ITEM_FIELDS], (path.head, *path.accessors), "item")
        else:
            found = None
        self.types[path] = found
        return found

    def follow(
        self, schema: Schema, accessors: Iterable[ast.Accessor | ast.Name], written: str, learned: LearnedShape | None = None
    ) -> Schema:
        """The type read by `accessors` from a value of `schema`; E301 where there is nothing to read (W507 when
        `schema` is the `learned` shape of a tool's results)."""
        for accessor in accessors:
            if schema is None:
                return None
            key = (
                accessor.name
                if isinstance(accessor, ast.Field)
                else accessor.text
                if isinstance(accessor, ast.Name)
                else accessor.value
            )
            found = read(schema, key)
            if type(found) is Missing:
                self.diagnostics.append(self.missing(accessor, written, key, found, learned))
                return None
            schema = found
            written += f"[{key}]" if isinstance(accessor, ast.Index) else f".{key}"
        return schema

    def missing(
        self,
        accessor: ast.Accessor | ast.Name,
        written: str,
        key: str | int,
        missing: Missing,
        learned: LearnedShape | None = None,
    ) -> Diagnostic:
        """E301 for `accessor`, which reads `key` from `written`, where there is nothing to read; W507 where only
        the `learned` shape of a tool's results says so."""
        at, hints = accessor.span, missing_hints(written, key, missing)
        if learned is not None:
            return self.missing_learned(at, hints, written, key, missing, learned)
        if isinstance(key, int):
            return diagnostic("E301", "no_items", at, step=self.path, hints=hints, written=written, what=missing.what, index=key)
        if missing.fields:
            return diagnostic("E301", "no_field", at, step=self.path, hints=hints, written=written, field=key)
        fix = Fix(at, ".length") if means_length(key, missing) else None  # a list or string has no other field
        return diagnostic(
            "E301", "no_field_in", at, step=self.path, hints=hints, written=written, what=missing.what, field=key, fix=fix
        )

    def missing_learned(
        self, at: Span, hints: list[str], written: str, key: str | int, missing: Missing, learned: LearnedShape
    ) -> Diagnostic:
        """W507: what E301 says, for a shape learned from `learned.calls` calls rather than declared."""
        source: dict[str, Any] = {"tool": learned.tool, "calls": learned.calls, "s": "" if learned.calls == 1 else "s"}
        if isinstance(key, int):
            return diagnostic(
                "W507", "no_items", at, step=self.path, hints=hints, written=written, what=missing.what, index=key, **source
            )
        if missing.fields:
            return diagnostic("W507", "no_field", at, step=self.path, hints=hints, written=written, field=key, **source)
        return diagnostic(
            "W507", "no_field_in", at, step=self.path, hints=hints, written=written, what=missing.what, field=key, **source
        )


def _bind(env: dict, binds: tuple, inputs: dict) -> dict:
    """`env` with the names a parameter binds: `item` (and the item's fields) is an item of `over`."""
    scope = dict(env)
    item = items_of(inputs.get("over"))
    for name in binds:
        scope[name] = item if name in ("item", ITEM_FIELDS) else LENGTH if name == "index" else None
    return scope


def _may_hold_foreign_holes(parts: Iterable[str | ast.Hole]) -> bool:
    """Whether a string's text has a brace, or a `$` just before a hole (`${item.id}`)."""
    return any(type(part) is str and ("{" in part or "}" in part or part.endswith("$")) for part in parts)


class LiteralArguments(Mapping):
    """A step's arguments written as literals, by name, each read from the tree only when a type rule asks
    for it (most pure steps' rules read none, and the check runs on every step).

    >>> from planc.syntax.parser import parse
    >>> written = LiteralArguments(parse('round(value: $x, digits: 2)').plan.pipelines[0].steps[0])
    >>> written.get("digits"), written.get("value"), dict(written)
    (2, None, {'digits': 2})
    """

    def __init__(self, step: ast.Step) -> None:
        self._step = step

    def __getitem__(self, name: str) -> Any:
        arg = self._step.arg(name)
        literal = literal_value(arg.value) if arg is not None else NOT_LITERAL
        if literal is NOT_LITERAL:
            raise KeyError(name)
        return literal

    def __iter__(self) -> Iterator[str]:
        return (arg.name.text for arg in self._step.args if literal_value(arg.value) is not NOT_LITERAL)

    def __len__(self) -> int:
        return sum(1 for _ in self)
