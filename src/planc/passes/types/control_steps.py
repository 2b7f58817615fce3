"""The built-in steps in the types pass: what their inputs must be (E303) and what they return.

The inputs a JSON Schema cannot state well get their own check: an agent's
`output_schema` must itself be an object schema, `max_iterations` at least 1,
and `tools` not empty. Their results derive from their inputs, by each step's
type rule in its declaration: `map` returns a list of its block's results,
`agent` an object around its `output_schema`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from planc.analysis.schema_words import describe, describe_value
from planc.diagnostics import Diagnostic, Span
from planc.diagnostics.build import diagnostic
from planc.registry.settings.schema_check import schema_error
from planc.registry.steps.builtins import CONTROL_DECLARATIONS
from planc.registry.steps.pure_steps import PURE_STEPS

OBJECT_SCHEMA = '`{type: "object", properties: {...}}`'


def agent_input(param: str, value: object, span: Span, step: str | None) -> Diagnostic | None:
    """E303 for the literal `value` of the agent's `param`, written at `span` in the step at path `step`; or None.

    >>> from planc.diagnostics import Position
    >>> agent_input("max_iterations", 0, Span(Position(0, 1, 1), Position(1, 1, 2)), "1").message
    '`max_iterations` must be at least 1, found 0'
    """
    if param == "max_iterations" and type(value) is int and value < 1:
        return diagnostic("E303", "max_iterations", span, step=step, hints=["an agent needs at least one round"], found=value)
    if param != "output_schema":
        return None
    value = json.loads(json.dumps(value, sort_keys=True))  # the schema as its canonical text reads (keys sorted)
    if not isinstance(value, dict):
        return diagnostic(
            "E303",
            "schema_not_record",
            span,
            step=step,
            found=describe_value(value),
            hints=[f"write the schema as a record: {OBJECT_SCHEMA}"],
        )
    if value.get("type") != "object":
        hints = (
            ['add `type: "object"`']
            if "type" not in value and "properties" in value
            else [f"an agent's output is an object: wrap it, like {OBJECT_SCHEMA}"]
        )
        what = describe(value) if "type" in value else "a schema without `type`"
        return diagnostic("E303", "not_object_schema", span, step=step, hints=hints, found=what)
    error = schema_error(value)
    if error is None:
        return None
    message, where = error
    return diagnostic(
        "E303", "invalid_schema", span, step=step, hints=[f"at `output_schema{where}`"] if where else [], error=message
    )


def control_result(name: str, inputs: Mapping, literals: Mapping | None = None) -> Mapping | None:
    """The type of a built-in step's result from the types of its inputs (None: unknown).

    `inputs` maps each parameter given (or piped) to its value's type, and
    `then`/`else`/`do` to their block's result type. `literals` maps the
    parameters written as literals to their values (an agent's `output_schema`
    only when it is a valid schema).

    >>> control_result("map", {"over": {"type": "array", "maxItems": 5}, "do": {"type": "string"}})
    {'type': 'array', 'items': {'type': 'string'}, 'maxItems': 5}
    >>> control_result("filter", {"over": {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3}})
    {'type': 'array', 'items': {'type': 'integer'}, 'maxItems': 3}
    """
    return TYPE_RULES[name](inputs, literals if literals is not None else {})


# The type rule of each built-in step: (the types of its inputs, its literal inputs) -> its result's
# type; each control step's from its declaration (`registry/steps/`), each pure step's likewise.
TYPE_RULES: dict[str, Callable[[Mapping, Mapping], Mapping | None]] = {
    **{name: step.result for name, step in CONTROL_DECLARATIONS.items()},
    **{name: pure.result for name, pure in PURE_STEPS.items()},
}
