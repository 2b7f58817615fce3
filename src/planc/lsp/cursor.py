"""What is under the cursor: a node of a parsed plan (for hover and go to definition), or what may be
typed there (for completion).

Hover and definition read the tree of a plan that parses. Completion cannot: while someone types,
the text almost never parses (`search(qu` has no tree), so what may come next is read from the
lexer's tokens, which every text has.

>>> from planc.syntax.parser import parse
>>> plan = parse('hits = search(query: "x")\\nsummarize(items: $hits)').plan
>>> node_at(plan, 9).tool.text, node_at(plan, 44).name.text
('search', 'hits')
>>> completion_at('a = search(query: "x") |> summarize(', 36)
Parameters(tool='summarize', given=frozenset(), piped=True)
>>> text = 'a = search(query: "x")\\nb(text: "{$'
>>> completion_at(text, len(text))
Labels(visible=(('a', 'search'),))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from planc.passes.resolve.resolve import iter_refs
from planc.syntax import ast
from planc.syntax.lexer import END, START, TEXT, TYPE, tokenize
from planc.syntax.steps import walk_steps

if TYPE_CHECKING:
    from planc.diagnostics import Span


def node_at(plan: ast.Plan, offset: int) -> ast.Step | ast.Ref | None:
    """The step whose tool name is at `offset`, or the reference there; None for anything else.
    A span's end counts as in it, so a cursor just after `$2` is on `$2`."""
    for step, _ in walk_steps(plan.pipelines):
        if _within(step.tool.span, offset):
            return step
    for ref in iter_refs(plan):
        if _within(ref.span, offset):
            return ref
    return None


def _within(span: Span, offset: int) -> bool:
    return span.start_offset <= offset <= span.end_offset


@attrs.frozen
class ToolName:
    """Where a step's tool name goes: at the start of a pipeline, after `|>`, after a label's `=`."""


@attrs.frozen
class Parameters:
    """Where an argument's name goes, inside the parentheses of a call to `tool`; `given` are the
    names already written there (before or after the cursor); `piped`: the step follows a `|>`,
    which fills the tool's piped parameter."""

    tool: str
    given: frozenset[str]
    piped: bool = False


@attrs.frozen
class Labels:
    """After `$` (in code or in a template's `{$`): the labels a reference there can read, each with
    its step's tool, in text order."""

    visible: tuple[tuple[str, str], ...]


Completion = ToolName | Parameters | Labels

WORD = re.compile(r"\w+")
HOLE_START = re.compile(r"\{\$\w*\Z")  # `{$` or `{$hi` at the cursor, inside a string
QUOTES = "\"'“”„"  # a string, or one of the quotes models use by mistake
# What a step's name may follow: nothing, `|>`, `;`, a block's `{`, a label's `=`, the end of a step.
STEP_STARTS = (None, "|>", ";", "{", "=", ")")


def completion_at(text: str, offset: int) -> Completion | None:
    """What may be typed at `offset` of `text`, which need not parse; None where nothing is offered
    (in a comment, in a string outside a hole, after a value)."""
    lexed = tokenize(text)
    if any(comment.start < offset <= comment.end for comment in lexed.comments):
        return None
    tokens = lexed.tokens
    before = [token for token in tokens if token[START] < offset]
    if before:
        last = before[-1]
        # The text as written: the lexer hands on the token that was meant (`|>` for a lone `|`).
        written = text[last[START] : min(last[END], offset)]
        if written[:1] in QUOTES:
            if last[END] > offset or not _closed(text[last[START] : last[END]]):
                return Labels(_visible_labels(before[:-1])) if HOLE_START.search(written) else None
        elif WORD.fullmatch(written):
            before = before[:-1]  # the word being typed: what comes before it decides
        elif last[END] > offset:
            return None  # inside `|>` or `==`
    previous = before[-1][TEXT] if before else None
    if previous == "$":
        return Labels(_visible_labels(before))
    opened = _open_brackets(before)
    if not opened or before[opened[-1]][TEXT] == "{":  # the top level, or a block (or a record: not told apart yet)
        return ToolName() if previous in STEP_STARTS else None
    paren = opened[-1]
    if before[paren][TEXT] == "(" and paren > 0 and before[paren - 1][TYPE] == "NAME" and previous in ("(", ","):
        return Parameters(before[paren - 1][TEXT], _given(tokens, paren, offset), _piped(before, paren - 1))
    return None


def _closed(string: str) -> bool:
    """Whether a string token has its closing quote: one not escaped by an odd run of backslashes."""
    quote = '"""' if string.startswith('"""') else string[0]
    if len(string) < 2 * len(quote) or not string.endswith(quote):
        return False
    body = string[: -len(quote)]
    return (len(body) - len(body.rstrip("\\"))) % 2 == 0


CLOSER = {")": "(", "]": "[", "}": "{"}


def _open_brackets(tokens: Sequence[tuple]) -> list[int]:
    """The indexes of the brackets still open at the end of `tokens`, outermost first. A closer with
    no matching opener (text being edited) is passed over."""
    stack: list[int] = []
    for index, token in enumerate(tokens):
        text = token[TEXT]
        if text in ("(", "[", "{"):
            stack.append(index)
        elif text in CLOSER and stack and tokens[stack[-1]][TEXT] == CLOSER[text]:
            stack.pop()
    return stack


def _given(tokens: Sequence[tuple], paren: int, offset: int) -> frozenset[str]:
    """The argument names written directly inside the parentheses opened at `tokens[paren]`: `name:`
    at their own depth, anywhere up to the closing parenthesis, the word at the cursor aside."""
    names = set()
    depth = 0
    for index in range(paren + 1, len(tokens) - 1):
        token, text = tokens[index], tokens[index][TEXT]
        if text in ("(", "[", "{"):
            depth += 1
        elif text in CLOSER:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and token[TYPE] == "NAME" and tokens[index + 1][TEXT] == ":" and not token[START] <= offset <= token[END]:
            names.add(token[TEXT])
    return frozenset(names)


def _piped(tokens: Sequence[tuple], tool: int) -> bool:
    """Whether the step whose tool name is `tokens[tool]` (with or without a label) follows a `|>`."""
    start = tool - 2 if tool >= 2 and tokens[tool - 1][TEXT] == "=" else tool
    return start > 0 and tokens[start - 1][TEXT] == "|>"


def _visible_labels(tokens: Sequence[tuple]) -> tuple[tuple[str, str], ...]:
    """The labels a reference after `tokens` can read: those of steps whose call is closed, in the
    blocks still open (and the top level). A label of a block already closed is out of sight, and
    so is the label of the step being written (a step cannot read itself)."""
    scopes: list[list[tuple[str, str]]] = [[]]
    brackets: list[tuple[str, tuple[str, str] | None]] = []  # opener, and the label its call defines
    for index, token in enumerate(tokens):
        text = token[TEXT]
        if text == "{":
            scopes.append([])
            brackets.append((text, None))
        elif text in ("(", "["):
            brackets.append((text, _label_of_call(tokens, index) if text == "(" else None))
        elif text in CLOSER and brackets and brackets[-1][0] == CLOSER[text]:
            _, label = brackets.pop()
            if text == "}" and len(scopes) > 1:
                scopes.pop()
            elif label is not None:
                scopes[-1].append(label)
    return tuple(label for scope in scopes for label in scope)


def _label_of_call(tokens: Sequence[tuple], paren: int) -> tuple[str, str] | None:
    """(label, tool) when the `(` at `paren` opens the call of a labelled step: `label = tool(`."""
    if paren >= 3 and tokens[paren - 1][TYPE] == "NAME" and tokens[paren - 2][TEXT] == "=" and tokens[paren - 3][TYPE] == "NAME":
        return tokens[paren - 3][TEXT], tokens[paren - 1][TEXT]
    return None
