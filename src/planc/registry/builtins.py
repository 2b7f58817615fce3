"""The control steps (DESIGN section 3): reserved names the interpreter intercepts.

They are declared here, once, like any other tool: parameters as JSON Schema
(with `x-planc` marking conditions and blocks), which are required, the pipe
parameter, the one-of groups, and the names a block binds. The resolve and
types passes check them exactly as they check registry tools.
"""

from __future__ import annotations

from planc.registry.tool import BLOCK, CONDITION, Effects, Tool

# What a filter condition binds: a bare name there is a field of the current item.
ITEM_FIELDS = "fields of the item"

ANY: dict = {}
LIST = {"type": "array"}
STRING = {"type": "string"}
CONTROL = Effects(read_only=True, deterministic=True, idempotent=True, destructive=False, open_world=False)


def _control(name, params, required=(), pipe=None, one_of=(), at_most_one=(), required_when=(), binds=None,
             effects=CONTROL) -> Tool:
    return Tool(name=name, params=params, required=tuple(required), pipe=pipe, one_of=tuple(one_of),
                at_most_one=tuple(at_most_one), required_when=tuple(required_when),
                binds=binds or {}, effects=effects, provider="builtin")


CONTROL_STEPS: dict[str, Tool] = {tool.name: tool for tool in (
    _control("map", {"over": LIST, "do": BLOCK, "concurrency": {"type": "integer", "minimum": 1, "default": 1}},
             required=["over", "do"], pipe="over", binds={"do": ("item", "index")}),
    _control("filter", {"over": LIST, "where": CONDITION, "do": BLOCK, "infer": STRING},
             required=["over"], pipe="over", one_of=[("where", "do", "infer")],
             binds={"where": ("item", ITEM_FIELDS), "do": ("item", "index"), "infer": ("item", "index")}),
    _control("reduce", {"over": LIST, "do": BLOCK, "initial": ANY},
             required=["over", "do"], pipe="over", binds={"do": ("item", "index", "accumulator")}),
    _control("decide", {"when": CONDITION, "infer": STRING, "then": BLOCK, "else": BLOCK},
             required=["then"], one_of=[("when", "infer")]),
    _control("exit", {"value": ANY, "when": CONDITION, "infer": STRING,
                      "status": {"enum": ["ok", "error"], "default": "ok"}, "message": STRING, "output": ANY},
             pipe="value", at_most_one=[("when", "infer")]),
    _control("agent", {"context": ANY, "prompt": STRING, "output_schema": {"type": "object"},
                       "tools": {"type": "array", "items": STRING, "minItems": 1},
                       "max_iterations": {"type": "integer", "minimum": 1, "default": 8},
                       "model": {"type": "string", "default": "chat"}, "system_prompt": STRING},
             required=["prompt", "output_schema"], pipe="context", effects=Effects()),
    _control("ask", {"question": STRING, "when_unanswered": {"enum": ["fail", "default", "skip"], "default": "fail"},
                     "default": ANY},
             required=["question"], required_when=[("when_unanswered", "default", "default")], effects=Effects(read_only=True, destructive=False, open_world=True)),
    _control("reshape", {"value": ANY}, required=["value"]),
)}


def param_binds(tool: Tool | None, param: str) -> tuple[str, ...]:
    """The names `tool`'s parameter `param` binds inside its value (a block's, a condition's)."""
    return tool.binds.get(param, ()) if tool is not None else ()
