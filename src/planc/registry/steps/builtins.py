"""The built-in steps: reserved names the interpreter intercepts.

`CONTROL_STEPS` is the one table of them: the control steps declared here, and the pure steps
(numbers, text, lists, dates) declared with their implementations in `pure_steps.py`. They are
declared once, like any other tool: parameters as JSON Schema
(with `x-planc` marking conditions and blocks), which are required, the pipe
parameter, the one-of groups, and the names a block binds. The resolve and
types passes check them exactly as they check registry tools.
"""

from __future__ import annotations

from planc.registry.steps.pure_steps import PURE_STEPS
from planc.registry.tools.tool import BLOCK, CONDITION, Effects, Tool
from planc.syntax import ast

# What a filter condition binds: a bare name there is a field of the current item.
ITEM_FIELDS = "fields of the item"

ANY: dict = {}
LIST = {"type": "array"}
STRING = {"type": "string"}
CONTROL = Effects(read_only=True, deterministic=True, idempotent=True, destructive=False, open_world=False)


def _control(name, description, params, required=(), pipe=None, one_of=(), at_most_one=(), required_when=(),
             binds=None, effects=CONTROL) -> Tool:
    return Tool(name=name, params=params, required=tuple(required), pipe=pipe, one_of=tuple(one_of),
                at_most_one=tuple(at_most_one), required_when=tuple(required_when),
                binds=binds or {}, effects=effects, provider="control", description=description,
                labels=())


CONTROL_STEPS: dict[str, Tool] = {tool.name: tool for tool in (
    _control("map", "Runs the block `do` once per item of `over`, with `item` and `index` bound in it, up to "
             "`concurrency` items at once. The result is the list of the block's results, in order.",
             {"over": LIST, "do": BLOCK, "concurrency": {"type": "integer", "minimum": 1, "default": 1}},
             required=["over", "do"], pipe="over", binds={"do": ("item", "index")}),
    _control("filter", "Keeps the items of `over` for which the condition `where` holds (a bare name there is a "
             "field of the item), the block `do` returns true, or the judge model answers yes to `infer`. The "
             "result is the kept items, in order.",
             {"over": LIST, "where": CONDITION, "do": BLOCK, "infer": STRING},
             required=["over"], pipe="over", one_of=[("where", "do", "infer")],
             binds={"where": ("item", ITEM_FIELDS), "do": ("item", "index"), "infer": ("item", "index")}),
    _control("reduce", "Runs the block `do` once per item of `over`, in order, with `item`, `index` and "
             "`accumulator` (the block's last result, `initial` at first) bound. The result is the last "
             "accumulator.",
             {"over": LIST, "do": BLOCK, "initial": ANY},
             required=["over", "do"], pipe="over", binds={"do": ("item", "index", "accumulator")}),
    _control("decide", "Runs the block `then` when the condition `when` holds (or the judge model answers yes to "
             "`infer`), else the block `else`. The result is the branch's result (null if none ran).",
             {"when": CONDITION, "infer": STRING, "then": BLOCK, "else": BLOCK},
             required=["then"], one_of=[("when", "infer")]),
    _control("exit", "Ends the plan when `when` holds (or the judge says yes to `infer`; always when neither is "
             "given), with `output` (else `value`) as the plan's result, and `status` and `message`. Inside a "
             "block it ends the whole plan it is written in; inside a declared plan, that plan, whose result "
             "is then its `output`. When it does not exit, its result is `value`.",
             {"value": ANY, "when": CONDITION, "infer": STRING,
                      "status": {"enum": ["ok", "error"], "default": "ok"}, "message": STRING, "output": ANY},
             pipe="value", at_most_one=[("when", "infer")]),
    _control("agent", "Asks a model (the role `model`) to do `prompt`, calling the registry's tools (those "
             "`tools` names or matches: all by default, none with `tools: []`) for up to `max_iterations` rounds, and to answer with "
             "an object that conforms to `output_schema`. The result is `{output, iterations, tools_called, "
             "final}`; `final` is false, and `output` `{}`, when the rounds ran out. `system_prompt` is added "
             "to the built-in one. `continue: $step` sends the prompt into the conversation of an earlier "
             "agent step instead of a new one (same model and system prompt; `tools` may only narrow its "
             "tools). `check` names a tool or `plan__NAME` called with the answer; when it fails, its "
             "problems go back into the conversation, up to `repairs` times, and then the step fails.",
             {"context": ANY, "prompt": STRING, "output_schema": {"type": "object"},
                       "tools": {"type": "array", "items": STRING},
                       "max_iterations": {"type": "integer", "minimum": 1, "default": 8},
                       "model": {"type": "string", "default": "chat"}, "system_prompt": STRING,
                       "continue": ANY, "check": STRING,
                       "repairs": {"type": "integer", "minimum": 0, "default": 2}},
             required=["prompt", "output_schema"], pipe="context", effects=Effects()),
    _control("ask", "Asks the person running the plan `question`; the result is the answer. Unanswered (no one "
             "to ask), it fails, gives `default`, or gives null (`skip`), as `when_unanswered` says.",
             {"question": STRING, "when_unanswered": {"enum": ["fail", "default", "skip"], "default": "fail"},
                     "default": ANY},
             required=["question"], required_when=[("when_unanswered", "default", "default")],
             effects=Effects(read_only=True, destructive=False, open_world=True)),
    _control("reshape", "The result is `value`, with its references and templates filled in: builds a record "
             "or a list from earlier results, at no cost.",
             {"value": ANY}, required=["value"]),
    *(pure.tool for pure in PURE_STEPS.values()),
)}


def param_binds(tool: Tool | None, param: str) -> tuple[str, ...]:
    """The names `tool`'s parameter `param` binds inside its value (a block's, a condition's)."""
    return tool.binds.get(param, ()) if tool is not None else ()


def agent_patterns(step: ast.Step) -> list[str] | None:
    """The tool names and `*` patterns an `agent` step's `tools` writes; `["*"]` when it has no `tools`; None
    when they are not literal strings (known only when it runs).

    >>> from planc.syntax.parser import parse
    >>> agent_patterns(parse('agent(prompt: "x", output_schema: {}, tools: ["a", "b*"])').plan.pipelines[0].steps[0])
    ['a', 'b*']
    """
    arg = step.arg("tools")
    if arg is None:
        return ["*"]
    if type(arg.value) is not ast.ListExpr or any(type(item) is not ast.String or item.text is None
                                                  for item in arg.value.items):
        return None
    return [item.text for item in arg.value.items]


def agent_check(step: ast.Step) -> str | None:
    """The tool an `agent` step's `check` names, when it is a literal string."""
    arg = step.arg("check")
    return arg.value.text if arg is not None and type(arg.value) is ast.String else None
