"""Print a Plan in the one canonical text form.

- one top-level pipeline per line; a pipeline of several steps puts each
  further step on its own line, led by `|>` and indented two spaces;
- `label = tool(name: value, ...)` with `, ` between arguments;
- a block of one single-step pipeline stays inline, `{ step() }`; any other
  block opens on the step's line, holds its pipelines indented, and closes
  on a line of its own;
- strings in double quotes with JSON escapes, `\\{` where a brace would
  otherwise read as a template hole; record keys bare when they are names;
- parentheses only where precedence needs them.

`parse(print_plan(tree))` gives back the same tree (spans aside): the property
tests check it on random trees.
"""

from __future__ import annotations

import contextvars
import json
import re

from planc.syntax import ast
from planc.syntax.templates import HOLE

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
INDENT = "  "
# A surrogate with no partner: no UTF-8 text holds it raw, so it is written as its `\uXXXX` escape.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def print_plan(plan: ast.Plan) -> str:
    """The canonical text of `plan`, ending with a newline.

    >>> from planc.syntax.parser import parse
    >>> print(print_plan(parse('a( x:1 )|>b(y : "z")').plan), end="")
    a(x: 1)
      |> b(y: "z")
    """
    return "".join(print_pipeline(pipeline) + "\n" for pipeline in plan.pipelines)


def print_pipeline(pipeline: ast.Pipeline, indent: str = "") -> str:
    lines = [print_step(pipeline.steps[0], indent)]
    lines += [f"{indent}{INDENT}|> {print_step(step, indent + INDENT)}" for step in pipeline.steps[1:]]
    return "\n".join(lines)


def print_step(step: ast.Step, indent: str = "") -> str:
    label = f"{step.label.text} = " if step.label else ""
    args = ", ".join(f"{arg.name.text}: {print_expr(arg.value, indent)}" for arg in step.args)
    return f"{label}{step.tool.text}({args})"


def print_expr(expr: ast.Expr, indent: str = "") -> str:
    kind = type(expr)
    if kind is ast.String:
        return print_string(expr)
    if kind is ast.Literal:
        return json.dumps(expr.value)
    if kind is ast.Ref:
        return "$" + expr.name.text + _accessors(expr.accessors)
    if kind is ast.Path:
        return expr.head.text + _accessors(expr.accessors)
    if kind is ast.ListExpr:
        return "[" + ", ".join(print_expr(item, indent) for item in expr.items) + "]"
    if kind is ast.Record:
        entries = (f"{_key(entry.key.text)}: {print_expr(entry.value, indent)}" for entry in expr.entries)
        return "{" + ", ".join(entries) + "}"
    if kind is ast.Block:
        return _block(expr, indent)
    if kind is ast.Compare:
        return f"{_operand(expr.left, ast.CONDITIONS, indent)} {expr.op} {_operand(expr.right, ast.CONDITIONS, indent)}"
    if kind is ast.Not:
        return "not " + _operand(expr.operand, (ast.And, ast.Or), indent)
    if kind is ast.And:
        return " and ".join(_operand(operand, (ast.And, ast.Or), indent) for operand in expr.operands)
    if kind is ast.Or:
        return " or ".join(_operand(operand, (ast.Or,), indent) for operand in expr.operands)
    raise TypeError(f"not an expression: {expr!r}")


def print_string(string: ast.String) -> str:
    pieces = []
    for part in string.parts:
        if isinstance(part, ast.Hole):
            pieces.append("{" + print_expr(part.target) + "}")
        else:
            escaped = LONE_SURROGATE.sub(lambda match: "\\u%04x" % ord(match.group()),
                                         json.dumps(part, ensure_ascii=False)[1:-1])
            pieces.append(HOLE.sub(lambda match: "\\" + match.group(), escaped))
    return '"' + "".join(pieces) + '"'


def _accessors(accessors) -> str:
    return "".join(f".{a.name}" if isinstance(a, ast.Field) else f"[{a.value}]" for a in accessors)


def _key(text: str) -> str:
    return text if NAME.match(text) else json.dumps(text, ensure_ascii=False)


def _operand(expr: ast.Expr, needs_parentheses: tuple, indent: str) -> str:
    text = print_expr(expr, indent)
    return f"({text})" if isinstance(expr, needs_parentheses) else text


# While `planc fmt` prints (`format.py`), the comments still to be placed: a block asks it for those
# before and after each of its pipelines, so a comment written inside a block stays there.
COMMENTS: contextvars.ContextVar = contextvars.ContextVar("comments", default=None)


def _block(block: ast.Block, indent: str) -> str:
    comments = COMMENTS.get()
    if len(block.pipelines) == 1 and len(block.pipelines[0].steps) == 1 and \
            (comments is None or not comments.within(block.span)):
        return "{ " + print_step(block.pipelines[0].steps[0], indent) + " }"
    inner = indent + INDENT
    lines = []
    for number, pipeline in enumerate(block.pipelines):
        before = comments.before(pipeline) if comments is not None else []
        lines += [inner + comment for _, comment in before]
        text = inner + print_pipeline(pipeline, inner)
        after = comments.after(block.pipelines, number) if comments is not None else []
        lines.append(text + ("  " + " ".join(comment for _, comment in after) if after else ""))
    return "{\n" + "\n".join(lines) + "\n" + indent + "}"
