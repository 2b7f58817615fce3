"""Hypothesis strategies for random, valid plan trees (planc.syntax.ast nodes).

"Valid" means the tree is one the parser could have produced: names are not
keywords, labels are unique in the whole plan and never `args`, argument names
are unique in a step, `and`/`or` have at least two operands, floats are finite,
and a string's parts are non-empty text runs (never two side by side) and
holes, or the single empty text of `""`. Spans are all one dummy span: trees
are compared with `to_data(node, spans=False)`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from planc.diagnostics import Position, Span
from planc.syntax import ast

SPAN = Span(Position(0, 1, 1), Position(0, 1, 1))
KEYWORDS = ("true", "false", "null", "and", "or", "not", "contains")
BINDINGS = ("item", "index", "accumulator")
OPS = ("==", "!=", "<", "<=", ">", ">=", "contains")

# Short, readable names most of the time; the regex keeps the whole NAME space in play.
_COMMON_NAMES = (
    "a",
    "b",
    "x",
    "y",
    "search",
    "summarize",
    "map",
    "filter",
    "reduce",
    "decide",
    "item",
    "index",
    "accumulator",
    "length",
    "query",
    "do",
    "_",
    "x1",
    "notes",
    "trueish",
    "nothing",
    "order",
    "android",
    "contains_x",
    "args2",
    "server__tool",
)
names = st.one_of(
    st.sampled_from(_COMMON_NAMES),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
).filter(lambda text: text not in KEYWORDS)

# Text that stresses the string printer: quotes, escapes, braces that look like holes.
_TRICKY = [
    '"',
    "\\",
    "\n",
    "\r",
    "\t",
    "\x00",
    "\x1f",
    "\x7f",
    "{",
    "}",
    "{$1}",
    "{item}",
    "{{x}}",
    "\\{",
    "{$a.b[0]}",
    "\\u0041",
    '"""',
    "é",
    "日本",
    "😀",
    "\u2028",
    "\ufeff",
    "{accumulator",
    "{index.x}",
    "$",
    "#",
    "//",
    "\\n",
    "'",
]
text_runs = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), st.sampled_from(_TRICKY)),
    max_size=5,
).map("".join)

ints = st.one_of(st.integers(-1000, 1000), st.integers(-(10**30), 10**30))
floats = st.floats(allow_nan=False, allow_infinity=False)
literal_values = st.one_of(ints, floats, st.booleans(), st.none())


def _accessors(field_names):
    return st.lists(
        st.one_of(
            field_names.map(lambda name: ast.Field(name, SPAN)), st.integers(0, 10**6).map(lambda value: ast.Index(value, SPAN))
        ),
        max_size=3,
    ).map(tuple)


def _ref_name(names_strategy):
    return st.one_of(st.integers(0, 10**4).map(str), st.just("args"), names_strategy)


# In expressions a field or a `$name` is a NAME, so never a keyword.
refs = st.builds(ast.Ref, _ref_name(names).map(lambda text: ast.Name(text, SPAN)), _accessors(names), st.just(SPAN))
paths = st.builds(ast.Path, names.map(lambda text: ast.Name(text, SPAN)), _accessors(names), st.just(SPAN))

# Inside a string the hole syntax is looser: any identifier, and digits with leading zeros.
_hole_names = st.one_of(names, st.sampled_from(KEYWORDS))
_hole_refs = st.builds(
    ast.Ref,
    st.one_of(st.from_regex(r"[0-9]{1,4}", fullmatch=True), _hole_names).map(lambda text: ast.Name(text, SPAN)),
    _accessors(_hole_names),
    st.just(SPAN),
)
_hole_paths = st.builds(
    ast.Path, st.sampled_from(BINDINGS).map(lambda text: ast.Name(text, SPAN)), _accessors(_hole_names), st.just(SPAN)
)
holes = st.builds(ast.Hole, st.one_of(_hole_refs, _hole_paths), st.just(SPAN))


def normalize_parts(parts) -> tuple:
    """The parts as the parser builds them: text runs joined, empty runs dropped, `""` kept."""
    out: list = []
    for part in parts:
        if isinstance(part, str):
            if not part:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += part
                continue
        out.append(part)
    return tuple(out) or ("",)


strings = st.lists(st.one_of(text_runs, holes), max_size=5).map(lambda parts: ast.String(normalize_parts(parts), SPAN))
literals = st.builds(ast.Literal, literal_values, st.just(SPAN))

record_keys = st.one_of(names, st.sampled_from(KEYWORDS), text_runs)


class _Labels:
    """Labels drawn so far in one plan, to keep them unique."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def draw(self, draw) -> ast.Name | None:
        if not draw(st.booleans()):
            return None
        text = draw(names)
        if text == "args" or text in self.used:
            return None
        self.used.add(text)
        return ast.Name(text, SPAN)


def _expr(draw, depth: int, labels: _Labels):
    leaves = ("string", "literal", "ref", "path")
    compound = ("list", "record", "block", "compare", "not", "and", "or")
    kind = draw(st.sampled_from(leaves + compound if depth > 0 else leaves))
    if kind == "string":
        return draw(strings)
    if kind == "literal":
        return draw(literals)
    if kind == "ref":
        return draw(refs)
    if kind == "path":
        return draw(paths)
    inner = depth - 1
    if kind == "list":
        count = draw(st.integers(0, 3))
        return ast.ListExpr(tuple(_expr(draw, inner, labels) for _ in range(count)), SPAN)
    if kind == "record":
        count = draw(st.integers(0, 3))
        entries = tuple(ast.Entry(ast.Name(draw(record_keys), SPAN), _expr(draw, inner, labels), SPAN) for _ in range(count))
        return ast.Record(entries, SPAN)
    if kind == "block":
        count = draw(st.integers(1, 2))
        return ast.Block(tuple(_pipeline(draw, inner, labels) for _ in range(count)), SPAN)
    if kind == "compare":
        return ast.Compare(draw(st.sampled_from(OPS)), _expr(draw, inner, labels), _expr(draw, inner, labels), SPAN)
    if kind == "not":
        return ast.Not(_expr(draw, inner, labels), SPAN)
    count = draw(st.integers(2, 3))
    operands = tuple(_expr(draw, inner, labels) for _ in range(count))
    return (ast.And if kind == "and" else ast.Or)(operands, SPAN)


def _step(draw, depth: int, labels: _Labels) -> ast.Step:
    label = labels.draw(draw)
    tool = ast.Name(draw(names), SPAN)
    arg_names = draw(st.lists(names, max_size=3, unique=True))
    args = tuple(ast.Arg(ast.Name(name, SPAN), _expr(draw, depth, labels), SPAN) for name in arg_names)
    return ast.Step(tool, args, label, SPAN)


def _pipeline(draw, depth: int, labels: _Labels) -> ast.Pipeline:
    count = draw(st.integers(1, 3))
    return ast.Pipeline(tuple(_step(draw, depth, labels) for _ in range(count)), SPAN)


@st.composite
def expressions(draw, max_depth: int = 3):
    """One random expression, nesting at most `max_depth` compound levels."""
    return _expr(draw, draw(st.integers(0, max_depth)), _Labels())


@st.composite
def plans(draw, max_depth: int = 3):
    """A random valid Plan of one to four pipelines."""
    labels = _Labels()
    depth = draw(st.integers(0, max_depth))
    count = draw(st.integers(1, 4))
    return ast.Plan(tuple(_pipeline(draw, depth, labels) for _ in range(count)), SPAN)
