"""Print a Plan in the one canonical text form, within a line width.

- one top-level pipeline per line; a pipeline of several steps puts each
  further step on its own line, led by `|>` and indented two spaces;
- `label = tool(name: value, ...)` with `, ` between arguments, on one line
  when it fits within the width (`WIDTH`, planc.toml's `[fmt] width`);
- a block of one single-step pipeline stays inline, `{ step() }`, when its
  step fits; any other block opens on the step's line, holds its pipelines
  indented, and closes on a line of its own;
- a step too long for its line keeps its other arguments on its line and
  opens its blocks there, each over the lines below (`decide(when: ..., then:
  {`): first only the blocks of more than one step, as with no width, then
  every block, whichever fits first; otherwise it puts each argument on a
  line of its own, indented, with a comma after each and `)` on a line of its
  own; a record or a list too long for its line breaks the same way. A
  string or a reference is never broken, so a line holding one can be longer;
- so a plan whose every line fits prints as it does with no width at all, as
  `planc grammar`'s decoder grammar writes it;
- strings in double quotes with JSON escapes, `\\{` where a brace would
  otherwise read as a template hole; record keys bare when they are names;
- parentheses only where precedence needs them.

`parse(print_plan(tree))` gives back the same tree (spans aside): the property
tests check it on random trees. `planc fmt` prints with the comments of the
file (`format.py`), which the printer places as it prints each node: a comment
between two arguments (or entries, or pipelines of a block) before the one it
was written before, one at the end of an argument's line at the end of its
line; a node that holds a comment of its own is broken over lines, so the
comment keeps its place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Protocol, cast

from planc.diagnostics.span import Position, Span
from planc.syntax import ast
from planc.syntax.templates import HOLE

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
INDENT = "  "
# The line width `planc fmt` keeps a plan within unless planc.toml's `[fmt] width` says another.
WIDTH = 100
# A surrogate with no partner: no UTF-8 text holds it raw, so it is written as its `\uXXXX` escape.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Comments(Protocol):
    """The comments of a file not yet placed (`format.py`): each is taken once, in the order of the text."""

    def within(self, span: Span) -> bool: ...

    def before(self, offset: int) -> list[str]: ...

    def trailing(self, end: Position, limit: int | None) -> list[str]: ...


def print_plan(plan: ast.Plan, width: int | None = WIDTH) -> str:
    """The canonical text of `plan`, ending with a newline, within `width` columns (None: no limit).

    >>> from planc.syntax.parser import parse
    >>> print(print_plan(parse('a( x:1 )|>b(y : "z")').plan), end="")
    a(x: 1)
      |> b(y: "z")
    >>> print(print_plan(parse('notify(channel: "#ops", text: "a long message")').plan, width=30), end="")
    notify(
      channel: "#ops",
      text: "a long message",
    )
    """
    printer = Printer(width)
    return "".join(printer.pipeline(pipeline) + "\n" for pipeline in plan.pipelines)


def print_step(step: ast.Step, indent: str = "") -> str:
    """`step` as its canonical text, on one line but for the blocks that take several."""
    return Printer(None).step(step, indent, len(indent))


def print_expr(expr: ast.Expr, indent: str = "") -> str:
    """`expr` as its canonical text, on one line but for the blocks that take several."""
    return Printer(None).inline(expr, indent)


def print_string(string: ast.String) -> str:
    pieces = []
    for part in string.parts:
        if isinstance(part, ast.Hole):
            pieces.append("{" + print_expr(part.target) + "}")
        else:
            escaped = LONE_SURROGATE.sub(lambda match: "\\u%04x" % ord(match.group()), json.dumps(part, ensure_ascii=False)[1:-1])
            pieces.append(HOLE.sub(lambda match: "\\" + match.group(), escaped))
    return '"' + "".join(pieces) + '"'


class Printer:
    """Lays out plans within `width` columns (None: every node that can be on one line is), placing
    `comments` (those of the file `planc fmt` formats) as it goes."""

    def __init__(self, width: int | None, comments: Comments | None = None) -> None:
        self.width = width
        self.comments = comments
        self._flat: dict[int, str | None] = {}  # node id -> its one-line text, None when it takes lines

    def pipeline(self, pipeline: ast.Pipeline, indent: str = "") -> str:
        """`pipeline`, its first step at column len(`indent`), each further one on a `|>` line."""
        lines = [self.step(pipeline.steps[0], indent, len(indent))]
        lead = f"{indent}{INDENT}|> "
        for number, step in enumerate(pipeline.steps[1:], 1):
            lines[-1] += self._trailing(pipeline.steps[number - 1], step.span.start_offset)
            lines += [indent + INDENT + comment for comment in self._before(step.span.start_offset)]
            lines.append(lead + self.step(step, indent + INDENT, len(lead)))
        return "\n".join(lines)

    def step(self, step: ast.Step, indent: str, column: int) -> str:
        """`step` starting at `column` of a line indented by `indent`: on one line if it fits, else its
        blocks over the lines below if the lines between them fit, else an argument a line."""
        head = f"{step.label.text} = " if step.label else ""
        head += f"{step.tool.text}("
        if not step.args:
            return head + ")"
        if self.width is None and self.comments is None:  # every argument on the step's line
            return head + ", ".join(f"{arg.name.text}: {self.inline(arg.value, indent)}" for arg in step.args) + ")"
        if not self._holds_comments(step, step.args):
            flat = self.flat(step)
            if flat is not None and self._fits(column + len(flat)):
                return flat
            # The blocks of one step inline if that fits, as with no width; else every block opened.
            hugged = self._hugged(step, indent, column, head, False) or self._hugged(step, indent, column, head, True)
            if hugged is not None:
                return hugged
        return self._broken(
            head, [(arg, f"{arg.name.text}: ", arg.value) for arg in step.args], ")", step.span.end_offset, indent
        )

    def inline(self, expr: ast.Expr, indent: str = "") -> str:
        """`expr` on one line, but for a block that cannot be: it opens here and closes on a line of its own."""
        flat = self.flat(expr)
        if flat is not None:
            return flat
        if isinstance(expr, ast.Block):
            return self._open_block(expr, indent)
        if isinstance(expr, ast.ListExpr):
            return "[" + ", ".join(self.inline(item, indent) for item in expr.items) + "]"
        if isinstance(expr, ast.Record):
            entries = (f"{_key(entry.key.text)}: {self.inline(entry.value, indent)}" for entry in expr.entries)
            return "{" + ", ".join(entries) + "}"
        return _condition(expr, lambda operand: self.inline(operand, indent))

    def flat(self, node: ast.Step | ast.Expr) -> str | None:
        """`node` as one line, or None when it cannot be: it holds a block of more than one step, or a comment."""
        key = id(node)
        if key not in self._flat:
            self._flat[key] = None if self._commented(node.span) else self._one_line(node)
        return self._flat[key]

    def _one_line(self, node: ast.Step | ast.Expr) -> str | None:
        if isinstance(node, ast.Step):
            args = [self._entry(f"{arg.name.text}: ", arg.value) for arg in node.args]
            label = f"{node.label.text} = " if node.label else ""
            return None if None in args else f"{label}{node.tool.text}({', '.join(args)})"  # type: ignore[arg-type]
        if isinstance(node, ast.String):
            return print_string(node)
        if isinstance(node, ast.Literal):
            return json.dumps(node.value)
        if isinstance(node, ast.Ref):
            return "$" + node.name.text + _accessors(node.accessors)
        if isinstance(node, ast.Path):
            return node.head.text + _accessors(node.accessors)
        if isinstance(node, ast.ListExpr):
            return _joined("[", [self.flat(item) for item in node.items], "]")
        if isinstance(node, ast.Record):
            return _joined("{", [self._entry(f"{_key(entry.key.text)}: ", entry.value) for entry in node.entries], "}")
        if isinstance(node, ast.Block):
            if len(node.pipelines) != 1 or len(node.pipelines[0].steps) != 1:
                return None
            step = self.flat(node.pipelines[0].steps[0])
            return None if step is None else "{ " + step + " }"
        operands = {id(operand): self.flat(operand) for operand in _operands(node)}
        if None in operands.values():
            return None
        return _condition(node, lambda operand: operands[id(operand)])  # type: ignore[arg-type,return-value]

    def _entry(self, name: str, value: ast.Expr) -> str | None:
        text = self.flat(value)
        return None if text is None else name + text

    def _hugged(self, step: ast.Step, indent: str, column: int, head: str, open_all: bool) -> str | None:
        """`step` with its arguments on its line and its blocks opened over the lines below (`decide(when: $n
        > 0, then: {`, `}, else: {`, `})`): every block if `open_all`, else those of more than one step (as
        with no width); None when an argument that stays on the line does not fit, or no block is opened."""
        opened, line = [], column + len(head)
        for number, arg in enumerate(step.args):
            name = (", " if number else "") + f"{arg.name.text}: "
            flat = self.flat(arg.value)
            closing = 1 if number == len(step.args) - 1 else 0  # the `)` after the last
            if flat is not None and not (open_all and type(arg.value) is ast.Block):
                if not self._fits(line + len(name) + len(flat) + closing):
                    return None
                opened.append(False)
                line += len(name) + len(flat)
            elif type(arg.value) is ast.Block and self._fits(line + len(name) + 1):
                opened.append(True)
                line = len(indent) + 1  # after the block's `}`
            else:
                return None
        if not self._fits(line + 1) or not any(opened):
            return None
        # Laid out only once it fits: a block takes its comments as it is printed.
        # Each opened value is a block, and each other has a flat form (both seen above).
        return (
            head
            + ", ".join(
                f"{arg.name.text}: "
                + (self._open_block(cast(ast.Block, arg.value), indent) if open_it else cast(str, self.flat(arg.value)))
                for arg, open_it in zip(step.args, opened)
            )
            + ")"
        )

    def _value(self, expr: ast.Expr, indent: str, column: int) -> str:
        """`expr` at `column` of a line indented by `indent`, a comma after it: on one line if it fits, else a
        block, a record or a list broken over lines."""
        flat = self.flat(expr)
        if flat is not None and self._fits(column + len(flat) + 1):
            return flat
        if isinstance(expr, ast.Block):
            return self._open_block(expr, indent)
        if isinstance(expr, ast.Record) and expr.entries:
            return self._broken(
                "{",
                [(entry, f"{_key(entry.key.text)}: ", entry.value) for entry in expr.entries],
                "}",
                expr.span.end_offset,
                indent,
            )
        if isinstance(expr, ast.ListExpr) and expr.items:
            return self._broken("[", [(item, "", item) for item in expr.items], "]", expr.span.end_offset, indent)
        return self.inline(expr, indent)

    def _broken(self, opening: str, items: list, closing: str, end: int, indent: str) -> str:
        """`opening`, each item (node, the text before its value, its value) on a line of its own indented one
        level below `indent` with a comma after it, then `closing` on a line of its own; the comments written
        among the items go where they were (`end`: the offset of the closing character)."""
        inner = indent + INDENT
        lines = [opening]
        for number, (node, name, value) in enumerate(items):
            lines += [inner + comment for comment in self._before(node.span.start_offset)]
            limit = items[number + 1][0].span.start_offset if number + 1 < len(items) else end
            text = inner + name + self._value(value, inner, len(inner) + len(name)) + ","
            lines.append(text + self._trailing(node, limit))
        lines += [inner + comment for comment in self._before(end)]
        return "\n".join(lines) + "\n" + indent + closing

    def _open_block(self, block: ast.Block, indent: str) -> str:
        """`block` opened here: its pipelines on the lines below, one level in, then its `}` at `indent`."""
        inner = indent + INDENT
        lines = []
        for number, pipeline in enumerate(block.pipelines):
            lines += [inner + comment for comment in self._before(pipeline.span.start_offset)]
            following = block.pipelines[number + 1].span.start_offset if number + 1 < len(block.pipelines) else None
            text = inner + self.pipeline(pipeline, inner)
            if following is None or block.pipelines[number + 1].span.start.line != pipeline.span.end.line:
                text += self._trailing(pipeline, following if following is not None else block.span.end_offset)
            lines.append(text)
        lines += [inner + comment for comment in self._before(block.span.end_offset)]
        return "{\n" + "\n".join(lines) + "\n" + indent + "}"

    def _fits(self, end: int) -> bool:
        return self.width is None or end <= self.width

    def _commented(self, span: Span) -> bool:
        return self.comments is not None and self.comments.within(span)

    def _holds_comments(self, node: ast.Step, args: tuple[ast.Arg, ...]) -> bool:
        """Whether a comment lies in `node` outside its arguments' blocks (which place their own)."""
        if not self._commented(node.span):
            return False
        blocks = [arg.value.span for arg in args if type(arg.value) is ast.Block]
        spans = [Span(node.span.start, blocks[0].start) if blocks else node.span]
        spans += [Span(a.end, b.start) for a, b in zip(blocks, blocks[1:])]
        spans += [Span(blocks[-1].end, node.span.end)] if blocks else []
        return any(self._commented(span) for span in spans)

    def _before(self, offset: int) -> list[str]:
        return self.comments.before(offset) if self.comments is not None else []

    def _trailing(self, node: ast.Step | ast.Arg | ast.Entry | ast.Expr | ast.Pipeline, limit: int | None) -> str:
        """The comments written at the end of `node`'s last line (before `limit`), to end its printed line."""
        found = self.comments.trailing(node.span.end, limit) if self.comments is not None else []
        return "  " + " ".join(found) if found else ""


def _joined(opening: str, parts: list[str | None], closing: str) -> str | None:
    return None if None in parts else opening + ", ".join(parts) + closing  # type: ignore[arg-type]


def _condition(condition: ast.Expr, text_of: Callable[[ast.Expr], str]) -> str:
    """A condition's text from its operands' (`text_of`), in parentheses where precedence needs them."""

    def operand(expr: ast.Expr, needs_parentheses: tuple) -> str:
        text = text_of(expr)
        return f"({text})" if isinstance(expr, needs_parentheses) else text

    if isinstance(condition, ast.Compare):
        return f"{operand(condition.left, ast.CONDITIONS)} {condition.op} {operand(condition.right, ast.CONDITIONS)}"
    if isinstance(condition, ast.Not):
        return "not " + operand(condition.operand, (ast.And, ast.Or))
    if isinstance(condition, ast.And):
        return " and ".join(operand(item, (ast.And, ast.Or)) for item in condition.operands)
    if isinstance(condition, ast.Or):
        return " or ".join(operand(item, (ast.Or,)) for item in condition.operands)
    raise TypeError(f"not an expression: {condition!r}")


def _operands(condition: ast.Expr) -> tuple[ast.Expr, ...]:
    if isinstance(condition, ast.Compare):
        return condition.left, condition.right
    if isinstance(condition, ast.Not):
        return (condition.operand,)
    if isinstance(condition, (ast.And, ast.Or)):
        return condition.operands
    raise TypeError(f"not an expression: {condition!r}")


def _accessors(accessors: tuple[ast.Accessor, ...]) -> str:
    return "".join(f".{a.name}" if isinstance(a, ast.Field) else f"[{a.value}]" for a in accessors)


def _key(text: str) -> str:
    return text if NAME.match(text) else json.dumps(text, ensure_ascii=False)
