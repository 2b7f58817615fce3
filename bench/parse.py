"""Parse + resolve throughput of planc, side by side with what it competes against.

    .venv/bin/python bench/parse.py             # the table (about a minute)
    .venv/bin/python bench/parse.py --profile   # cProfile of planc on the 1,000-step plan
    .venv/bin/python bench/parse.py --quick     # fewer repetitions, for a smoke run

One run measures, on the same generated plans (3, 10, 1,000 and 10,000 steps):

  (a) planc     `planc.parse` + the resolve pass, run as `planc.check` runs its passes (the
                cyclic garbage collector paused); `planc.check` adds the types pass on top;
  (b) lark      stock Lark LALR (contextual lexer) on the same grammar file, with an inline
                Transformer that builds the same `planc.syntax.ast` nodes with the same spans
                (checked once: `to_data(spans=True)` is equal for every plan);
  (c) json      `json.loads` of the same plan as a JSON list of steps (the floor);
  (d) yaml      PyYAML (libyaml's CSafeLoader when available) of the same plan as
                graph-style YAML (steps with ids, tool, args, depends_on).

A step is any step, nested ones included (what `planc check` reports as steps). µs/step
is comparable across columns; MB/s is each format's own bytes per second.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import random
import re
import sys
import time
from dataclasses import dataclass, field

import lark
import yaml
from lark import Token, Transformer

from planc.diagnostics import Diagnostic, Lines, Span
from planc.gc_pause import gc_paused
from planc.passes.context import CheckContext
from planc.passes.resolve.resolve import resolve
from planc.syntax import ast
from planc.syntax.data import to_data
from planc.syntax.grammar import grammar_text
from planc.syntax.parser import parse
from planc.syntax.templates import decode_string

SIZES = (3, 10, 1_000, 10_000)


# --------------------------------------------------------------------------------------------
# A plan model, generated deterministically and written out as planc text, JSON and YAML.
# --------------------------------------------------------------------------------------------


@dataclass
class Ref:
    step: "Step"
    accessors: tuple = ()  # ("title", 0, "id") -> .title[0].id


@dataclass
class Var:
    """A bare path: `item.id`, `index`, or a field of the item in a filter condition."""

    head: str
    accessors: tuple = ()


@dataclass
class Cond:
    op: str  # "==", "!=", "<", ">=", "contains", "and", "or", "not"
    operands: list


@dataclass
class Block:
    pipelines: list  # list[list[Step]]


@dataclass
class Step:
    tool: str
    args: list  # [(name, value)]
    label: str | None = None
    pipe: str | None = None  # the parameter that receives the piped input, when piped into
    number: int = 0  # top-level number (1-based), 0 inside blocks
    ident: str = ""  # id in the JSON / YAML forms
    deps: list = field(default_factory=list)


SOURCES = [
    ("search", lambda g: [("query", g.text_query()), ("limit", g.rng.choice([10, 20, 50, 100]))]),
    (
        "github__list_issues",
        lambda g: [
            ("repo", g.rng.choice(['"acme/api"', '"acme/web"', '"acme/infra"'])),
            ("state", '"open"'),
            ("labels", g.str_list(["bug", "p1", "regression", "ops"])),
        ],
    ),
    ("git__git_log", lambda g: [("repo_path", '"/srv/repos/api"'), ("max_count", g.rng.choice([20, 50]))]),
    ("pagerduty__list_incidents", lambda g: [("since", '"2026-11-01T00:00:00Z"'), ("urgency", '"high"'), ("limit", 25)]),
    (
        "fetch",
        lambda g: [
            ("url", g.rng.choice(['"https://status.example.com/api/v2/incidents.json"', '"https://example.com/changelog"'])),
            ("timeout_s", 12.5),
        ],
    ),
]

TRANSFORMS = ["summarize", "classify", "rank", "translate", "extract_fields", "dedupe"]
WORDS = [
    "outage",
    "degraded",
    "latency",
    "checkout",
    "login",
    "database",
    "payments",
    "eu-west",
    "retry",
    "timeout",
    "deploy",
    "rollback",
    "cache",
    "queue",
    "p99",
    "errors",
]
FIELDS = ["title", "text", "items", "summary", "owner", "url", "id", "labels", "output"]


class Generator:
    """Realistic plans: several pipelines, labels, refs to earlier steps, templates, numbers,
    lists, records, filter conditions, maps and decides with blocks, comments."""

    def __init__(self, size: int, seed: int = 20261129) -> None:
        self.rng = random.Random(seed * 100_003 + size)
        self.size = size
        self.count = 0  # steps so far, nested ones included
        self.top: list[Step] = []  # top-level steps in order
        self.labels = 0
        self.pipelines: list[list[Step]] = []

    # --- values
    def text_query(self) -> str:
        words = self.rng.sample(WORDS, self.rng.randint(1, 3))
        return json.dumps(" OR ".join(words))

    def str_list(self, pool) -> list:
        return [json.dumps(w) for w in self.rng.sample(pool, self.rng.randint(1, 3))]

    def ref(self) -> Ref:
        target = self.rng.choice(self.top[-12:]) if self.rng.random() < 0.8 else self.rng.choice(self.top)
        accessors = self.rng.choice([(), ("items",), ("text",), ("items", 0, "title"), ("output", "summary"), ("length",)])
        return Ref(target, accessors)

    def template(self, prefix: str, in_block: bool = False) -> str:
        """A string literal (planc spelling) with template holes."""
        holes = []
        for _ in range(self.rng.randint(1, 2)):
            if in_block and self.rng.random() < 0.5:
                holes.append("{item." + self.rng.choice(["title", "id", "summary"]) + "}")
            else:
                holes.append("{" + _ref_text(self.ref()) + "}")
        words = " ".join(self.rng.sample(WORDS, 2))
        return json.dumps(f"{prefix} {holes[0]} ({words})" + (f": {holes[1]}" if len(holes) > 1 else ""), ensure_ascii=False)

    def label(self, base: str) -> str:
        self.labels += 1
        return f"{base}{self.labels}"

    def condition(self) -> Cond:
        """A filter condition over the item's fields."""
        parts = [
            Cond(">=", [Var("severity"), self.rng.choice([1, 2, 3])]),
            Cond("!=", [Var("status"), '"resolved"']),
            Cond("contains", [Var("title"), json.dumps(self.rng.choice(WORDS))]),
            Cond("<", [Var("age_hours"), self.rng.choice([24, 48, 72.5])]),
            Cond("==", [Var("item", ("owner",)), "null"]),
        ]
        chosen = self.rng.sample(parts, self.rng.randint(1, 3))
        if len(chosen) == 1:
            return chosen[0]
        if self.rng.random() < 0.2:
            chosen[-1] = Cond("not", [chosen[-1]])
        return Cond(self.rng.choice(["and", "and", "or"]), chosen)

    # --- steps
    def new_step(self, step: Step, top: bool) -> Step:
        self.count += 1
        if top:
            self.top.append(step)
            step.number = len(self.top)
            step.ident = step.label or f"s{step.number}"
        return step

    def block_steps(self, count: int, item: bool) -> list[Step]:
        """`count` steps for a block body, one pipeline (inner labels are block-local)."""
        steps = []
        for k in range(count):
            if k == 0:
                args = (
                    [("id", Var("item", ("id",)))]
                    if item and self.rng.random() < 0.5
                    else [("text", self.template("Item", in_block=item))]
                )
                tool = "get_incident" if args[0][0] == "id" else "notify"
                if tool == "notify":
                    args.insert(0, ("channel", json.dumps(self.rng.choice(["#incidents", "#ops", "#oncall"]))))
                label = self.label("d") if count > 1 and self.rng.random() < 0.5 else None
            else:
                tool = self.rng.choice(["summarize", "extract_fields"])
                args = [("style", '"bullets"'), ("max_words", self.rng.choice([40, 80]))]
                if steps[0].label:
                    args.append(("note", json.dumps("from {$" + steps[0].label + ".title}")))
                label = None
            step = Step(tool, args, label, pipe="input" if k else None)
            step.ident = label or f"b{self.count + 1}"
            self.count += 1
            steps.append(step)
        return steps

    def follow(self, remaining: int, forced: str | None = None) -> Step | None:
        """A step piped into from the previous one, using at most `remaining` steps."""
        kinds = ["filter", "map", "transform", "transform", "agent"]
        kind = forced or self.rng.choice(kinds)
        if kind == "map" and remaining < 2:
            kind = "transform"
        if kind == "filter":
            if self.rng.random() < 0.85:
                args = [("where", self.condition())]
            else:
                args = [("infer", self.template("Is this about", in_block=True))]
            return self.new_step(Step("filter", args, pipe="over"), True)
        if kind == "map":
            inner = min(remaining - 1, self.rng.choice([1, 1, 2, 3]))
            # The block is made before the step is numbered: its refs may not name the map itself.
            block = Block([self.block_steps(inner, item=True)])
            args = [("concurrency", self.rng.choice([2, 4, 8])), ("do", block)]
            return self.new_step(Step("map", args, pipe="over"), True)
        if kind == "agent":
            prompt = (
                '"""Triage these incidents.\n    Group them by service and say which need a page.\n'
                "    Context: {" + _ref_text(self.ref()) + '}\n    """'
            )
            schema = {
                "type": '"object"',
                "required": ['"pages"'],
                "properties": {"pages": {"type": '"array"', "items": {"type": '"string"'}}, "notes": {"type": '"string"'}},
            }
            args = [
                ("prompt", prompt),
                ("output_schema", schema),
                ("tools", ['"pagerduty__*"', '"search"']),
                ("max_iterations", 6),
            ]
            return self.new_step(Step("agent", args, self.label("triage"), pipe="context"), True)
        tool = self.rng.choice(TRANSFORMS)
        args = [
            ("style", json.dumps(self.rng.choice(["bullets", "table", "prose"]))),
            ("title", self.template("Report on")),
            (
                "options",
                {"max_items": self.rng.choice([5, 10, 20]), "include_links": "true", "language": '"en"', "threshold": 0.75},
            ),
        ]
        label = self.label(tool[:4]) if self.rng.random() < 0.3 else None
        return self.new_step(Step(tool, args[: self.rng.randint(1, 3)], label, pipe="input"), True)

    def start(self, remaining: int) -> Step:
        """The first step of a pipeline, using at most `remaining` steps."""
        roll = self.rng.random()
        if self.top and remaining >= 2 and roll < 0.15:
            then_count = min(remaining - 1, self.rng.choice([1, 2]))
            when = Cond(">", [self.ref_len(), self.rng.choice([0, 5, 10])])
            block = Block([self.block_steps(then_count, item=False)])
            return self.new_step(Step("decide", [("when", when), ("then", block)]), True)
        if self.top and roll < 0.25:
            args = [
                (
                    "value",
                    {"summary": self.ref(), "count": self.ref_len(), "source": '"planc-bench"', "tags": ['"ops"', '"weekly"']},
                )
            ]
            return self.new_step(Step("reshape", args, self.label("report")), True)
        if self.top and roll < 0.3:
            args = [("when", Cond("==", [self.ref(), "false"])), ("status", '"error"'), ("message", self.template("Stopping:"))]
            return self.new_step(Step("exit", args), True)
        tool, make = self.rng.choice(SOURCES)
        label = self.label("hits") if self.rng.random() < 0.4 else None
        return self.new_step(Step(tool, make(self), label), True)

    def ref_len(self) -> Ref:
        return Ref(self.rng.choice(self.top[-12:]), ("items", "length"))

    def generate(self) -> list[list[Step]]:
        first = True
        while self.count < self.size:
            pipeline = [self.start(self.size - self.count)]
            if first:  # the classic: search |> filter |> map { ... } |> summarize
                plan = ["filter", "map", "transform"]
            else:
                plan = [None] * self.rng.choice([0, 1, 2, 2, 3, 4])
            for forced in plan:
                if self.count >= self.size:
                    break
                pipeline.append(self.follow(self.size - self.count, forced))
            self.pipelines.append(pipeline)
            first = False
        assert self.count == self.size, (self.count, self.size)
        # A label nothing reads on the head of a pipeline whose result is read goes on its last step, as W506's
        # fix moves it (or, when that step has one, goes): what the plan's text reads, `$label` or `$number`.
        written = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9]+)", to_planc(self.pipelines)))
        for pipeline in self.pipelines:
            head, last = pipeline[0], pipeline[-1]
            if len(pipeline) > 1 and head.label and head.label not in written and (last.label or str(last.number)) in written:
                head.label, last.label = None, last.label or head.label
        return self.pipelines


def _accessor_text(accessors) -> str:
    return "".join(f"[{a}]" if isinstance(a, int) else f".{a}" for a in accessors)


def _ref_text(ref: Ref) -> str:
    return "$" + (ref.step.label or str(ref.step.number)) + _accessor_text(ref.accessors)


# --- planc text


def to_planc(pipelines) -> str:
    out = ["# Generated by bench/parse.py: incident triage, reports and notifications.\n"]
    for number, pipeline in enumerate(pipelines):
        if number and number % 8 == 0:
            out.append(f"\n// Section {number // 8}: follow-ups\n")
        out.append(_pipeline_text(pipeline, "") + "\n")
    return "".join(out)


def _pipeline_text(pipeline, indent: str) -> str:
    return f"\n{indent}  |> ".join(_step_text(step, indent) for step in pipeline)


def _step_text(step: Step, indent: str) -> str:
    args = ", ".join(f"{name}: {_value_text(value, indent)}" for name, value in step.args)
    return (f"{step.label} = " if step.label else "") + f"{step.tool}({args})"


def _value_text(value, indent: str) -> str:
    if isinstance(value, str):
        return value  # already a literal in planc spelling
    if isinstance(value, bool) or value is None:
        raise TypeError(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Ref):
        return _ref_text(value)
    if isinstance(value, Var):
        return value.head + _accessor_text(value.accessors)
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v, indent) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value_text(v, indent)}" for k, v in value.items()) + "}"
    if isinstance(value, Cond):
        if value.op in ("and", "or"):
            return f" {value.op} ".join(_value_text(v, indent) for v in value.operands)
        if value.op == "not":
            return f"not ({_value_text(value.operands[0], indent)})"
        left, right = value.operands
        return f"{_value_text(left, indent)} {value.op} {_value_text(right, indent)}"
    if isinstance(value, Block):
        inner = indent + "    "
        body = "\n".join(inner + _pipeline_text(p, inner) for p in value.pipelines)
        return "{\n" + body + "\n" + indent + "  }"
    raise TypeError(value)


# --- JSON / YAML data


def to_data_form(pipelines, graph: bool) -> list:
    """The plan as a list of steps; piped input becomes an explicit `$ref` argument."""
    return [_step_data(step, prev, graph) for pipeline in pipelines for prev, step in zip([None] + pipeline[:-1], pipeline)]


def _step_data(step: Step, prev: Step | None, graph: bool) -> dict:
    deps: list[str] = []
    args = {}
    if prev is not None:
        args[step.pipe] = {"$ref": prev.ident}
        deps.append(prev.ident)
    for name, value in step.args:
        args[name] = _value_data(value, deps, graph)
    data = {"id": step.ident, "tool": step.tool, "args": args}
    if graph and deps:
        data["depends_on"] = sorted(set(deps))
    return data


def _value_data(value, deps, graph):
    if isinstance(value, str):
        return _literal_data(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, Ref):
        deps.append(value.step.ident)
        return {"$ref": value.step.ident + _accessor_text(value.accessors)}
    if isinstance(value, Var):
        return {"$var": value.head + _accessor_text(value.accessors)}
    if isinstance(value, list):
        return [_value_data(v, deps, graph) for v in value]
    if isinstance(value, dict):
        return {k: _value_data(v, deps, graph) for k, v in value.items()}
    if isinstance(value, Cond):
        if value.op in ("and", "or", "not"):
            return {value.op: [_value_data(v, deps, graph) for v in value.operands]}
        left, right = value.operands
        return {"op": value.op, "left": _value_data(left, deps, graph), "right": _value_data(right, deps, graph)}
    if isinstance(value, Block):
        return {"steps": to_data_form(value.pipelines, graph)}
    raise TypeError(value)


def _literal_data(text: str):
    if text in ("true", "false", "null"):
        return json.loads(text)
    if text.startswith('"""'):
        return text[3:-3]
    # Template holes stay in the string ("{$3.title}"); refs inside them name planc steps.
    return json.loads(text)


# --------------------------------------------------------------------------------------------
# (b) The baseline: stock Lark LALR building the same AST with the same spans.
# --------------------------------------------------------------------------------------------
#
# Lark's inline transformer gets no `meta` (v_args(meta=True) is refused for it, and
# propagate_positions only annotates Tree results), and the grammar filters punctuation,
# so `)`, `]`, `}`, `$`, `.`, `not`, `true`... would leave no position behind. The baseline
# therefore runs with keep_all_tokens=True (same grammar file, same tables) and every
# callback drops the punctuation itself, as planc's own reducers do, and takes positions
# from the Lark tokens (start_pos/line/column, end_pos/end_line/end_column).


class _Paren:
    """`( expr )`: the expression, with the extent of its parentheses for the parent's span."""

    __slots__ = ("expr", "span")

    def __init__(self, expr, span) -> None:
        self.expr = expr
        self.span = span


# The baseline makes spans the way planc's own builder does, so both build the same objects:
# Span(offset, offset, lines), with line and column worked out on demand.
_lines: list = [None]  # the Lines of the text being parsed


def _first(child):
    return child.start_pos if type(child) is Token else child.span.start_offset


def _last(child):
    return child.end_pos if type(child) is Token else child.span.end_offset


def _token_span(token) -> Span:
    return Span(token.start_pos, token.end_pos, _lines[0])


def _span(children) -> Span:
    return Span(_first(children[0]), _last(children[-1]), _lines[0])


def _decode(token, diagnostics, holes=True):
    return decode_string(token.value, token.start_pos, _lines[0], diagnostics, holes=holes)


def _expr(value):
    return value.expr if type(value) is _Paren else value


class LarkToAst(Transformer):
    """One callback per rule (as named by the grammar), building planc.syntax.ast nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.diagnostics: list[Diagnostic] = []

    def start(self, c):
        return c[0]

    def plan(self, c):
        return ast.Plan(tuple(x for x in c if type(x) is not Token), _span(c))

    def block(self, c):
        return ast.Block(tuple(x for x in c if type(x) is not Token), _span(c))

    def pipeline(self, c):
        return ast.Pipeline(tuple(c[::2]), _span(c))

    def step(self, c):
        if type(c[0]) is ast.Name:
            label, tool = c[0], c[1]
        else:
            label, tool = None, c[0]
        args = tuple(x for x in c if type(x) is ast.Arg)
        seen: dict = {}
        for arg in args:
            first = seen.setdefault(arg.name.text, arg)
            if first is not arg:
                self.diagnostics.append(Diagnostic("E105", f"the argument `{arg.name.text}` is given twice", arg.span))
        return ast.Step(ast.Name(tool.value, _token_span(tool)), args, label, _span(c))

    def label(self, c):
        return ast.Name(c[0].value, _token_span(c[0]))

    def arg(self, c):
        name, _, value = c
        return ast.Arg(ast.Name(name.value, _token_span(name)), _expr(value), _span(c))

    def or_expr(self, c):
        return ast.Or(tuple(_expr(x) for x in c[::2]), _span(c))

    def and_expr(self, c):
        return ast.And(tuple(_expr(x) for x in c[::2]), _span(c))

    def not_expr(self, c):
        return ast.Not(_expr(c[1]), _span(c))

    def compare(self, c):
        left, op, right = c
        return ast.Compare(op, _expr(left), _expr(right), _span(c))

    def compare_op(self, c):
        return c[0].value

    def primary(self, c):  # "(" expr ")"
        return _Paren(_expr(c[1]), _span(c))

    def string(self, c):
        return ast.String(_decode(c[0], self.diagnostics), _token_span(c[0]))

    def number(self, c):
        text = c[0].value
        value = json.loads(text)
        if isinstance(value, float) and math.isinf(value):
            self.diagnostics.append(Diagnostic("E100", f"the number `{text}` is too large", _token_span(c[0])))
        return ast.Literal(value, _token_span(c[0]))

    def true(self, c):
        return ast.Literal(True, _token_span(c[0]))

    def false(self, c):
        return ast.Literal(False, _token_span(c[0]))

    def null(self, c):
        return ast.Literal(None, _token_span(c[0]))

    def ref(self, c):  # "$" (INT | NAME) accessor*
        head = c[1]
        return ast.Ref(ast.Name(head.value, _token_span(head)), tuple(c[2:]), _span(c))

    def path(self, c):
        head = c[0]
        return ast.Path(ast.Name(head.value, _token_span(head)), tuple(c[1:]), _span(c))

    def field(self, c):  # "." NAME
        return ast.Field(c[1].value, _span(c))

    def index(self, c):  # "[" INT "]"
        return ast.Index(int(c[1].value), _span(c))

    def list(self, c):
        return ast.ListExpr(tuple(_expr(x) for x in c if type(x) is not Token), _span(c))

    def record(self, c):
        return ast.Record(tuple(x for x in c if type(x) is ast.Entry), _span(c))

    def entry(self, c):
        key, _, value = c
        return ast.Entry(key, _expr(value), _span(c))

    def key(self, c):
        token = c[0]
        if token.type == "STRING":
            (text,) = _decode(token, self.diagnostics, holes=False)
            return ast.Name(text, _token_span(token))
        return ast.Name(token.value, _token_span(token))


def lark_baseline():
    """`parse(text) -> Plan` with stock Lark LALR and the transformer above."""
    front = lark.Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        propagate_positions=False,
        keep_all_tokens=True,
        transformer=LarkToAst(),
    )

    def parse_with_lines(text: str):
        _lines[0] = Lines(text)
        return front.parse(text)

    return parse_with_lines


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def _sample(fn, arg, loops: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(loops):
        fn(arg)
    return (time.perf_counter() - start) / loops


def best_time(fn, arg, repeat: int, min_sample: float = 0.05) -> float:
    """Best of `repeat` samples; each sample loops the call until it takes >= min_sample s."""
    first = _sample(fn, arg, 1)  # also warms caches
    loops = max(1, math.ceil(min_sample / max(first, 1e-9)))
    return min(_sample(fn, arg, loops) for _ in range(repeat))


def run_planc(text: str):
    """Parse + resolve, run as `planc.check` runs its passes: with the collector paused."""
    with gc_paused():
        return resolve(parse(text).plan, CONTEXT)


CONTEXT = CheckContext()


@dataclass
class Inputs:
    steps: int
    planc: str
    json: str
    yaml: str


def make_inputs(size: int) -> Inputs:
    pipelines = Generator(size).generate()
    text = to_planc(pipelines)
    json_text = json.dumps(to_data_form(pipelines, graph=False), indent=2, ensure_ascii=False)
    yaml_text = yaml.safe_dump(
        {"steps": to_data_form(pipelines, graph=True)}, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
    return Inputs(size, text, json_text, yaml_text)


def verify(inputs: Inputs, baseline, yaml_loader) -> None:
    """The forms say the same thing, the plan is valid, and Lark builds the same tree as planc."""
    result = parse(inputs.planc)
    assert result.plan is not None and not result.diagnostics, result.diagnostics[:3]
    resolution, diagnostics = resolve(result.plan, CheckContext())
    assert not diagnostics, [(d.code, d.message) for d in diagnostics[:3]]
    assert len(resolution.paths) == inputs.steps, (len(resolution.paths), inputs.steps)
    ours = to_data(result.plan, spans=True)
    theirs = to_data(baseline(inputs.planc), spans=True)
    if ours != theirs:
        raise SystemExit(
            f"{inputs.steps}-step plan: the Lark baseline's tree differs from planc's at {_first_difference(ours, theirs)}"
        )
    data = yaml.load(inputs.yaml, Loader=yaml_loader)["steps"]
    _strip_deps(data)
    assert data == json.loads(inputs.json), "the YAML and JSON forms differ"


def _first_difference(a, b, where="plan"):
    if type(a) is not type(b):
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for key in a.keys() | b.keys():
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{where}.{key}")
    elif isinstance(a, list) and len(a) == len(b):
        for number, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{where}[{number}]")
    return f"{where}: {str(a)[:300]} != {str(b)[:300]}"


def _strip_deps(steps) -> None:
    for step in steps:
        step.pop("depends_on", None)
        for value in step["args"].values():
            _strip_value(value)


def _strip_value(value) -> None:
    if isinstance(value, dict):
        if set(value) == {"steps"}:
            _strip_deps(value["steps"])
        else:
            for v in value.values():
                _strip_value(v)
    elif isinstance(value, list):
        for v in value:
            _strip_value(v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="cProfile planc on the 1,000-step plan")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    options = parser.parse_args()

    if options.profile:
        profile(make_inputs(1_000).planc)
        return

    yaml_loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    baseline = lark_baseline()
    wall = time.perf_counter()
    inputs = [make_inputs(size) for size in SIZES]
    for item in inputs:
        verify(item, baseline, yaml_loader)

    contenders = [
        ("planc", lambda i: i.planc, run_planc),
        ("lark", lambda i: i.planc, baseline),
        ("json", lambda i: i.json, json.loads),
        ("yaml", lambda i: i.yaml, lambda text: yaml.load(text, Loader=yaml_loader)),
    ]
    results: dict = {}
    for item in inputs:
        repeat = {3: 7, 10: 7, 1_000: 7, 10_000: 5}[item.steps]
        if options.quick:
            repeat = 2
        for name, source, fn in contenders:
            text = source(item)
            seconds = best_time(fn, text, repeat, min_sample=0.02 if options.quick else 0.05)
            results[item.steps, name] = (seconds, len(text.encode("utf-8")))

    print(
        f"planc parse+resolve benchmark: Python {platform.python_version()} ({platform.machine()}), "
        f"lark {lark.__version__}, PyYAML {yaml.__version__} with {yaml_loader.__name__}"
        f"{' (libyaml)' if yaml_loader.__name__.startswith('C') else ' (pure Python)'}"
    )
    print("time = best of 5-7 samples (each sample loops >= 50 ms), gc enabled, gc.collect() before each sample")
    print(
        "(a) planc = parse + resolve   (b) lark = stock Lark LALR + Transformer to the same AST/spans"
        "   (c) json.loads   (d) yaml graph-style"
    )
    print(
        "trees checked equal: to_data(planc) == to_data(lark), spans included, for every size; spans built as "
        + "Span(offset, offset, Lines) by both\n"
    )
    head = (
        f"{'steps':>6} {'planc KB':>8} | {'(a) planc':^15} | {'(b) lark':^15} | {'(c) json':^15} | "
        f"{'(d) yaml':^15} | {'lark/':>6} | {'planc/step':>10}"
    )
    sub = (
        f"{'':>6} {'':>8} | {'us/step':>7} {'MB/s':>7} | {'us/step':>7} {'MB/s':>7} | "
        f"{'us/step':>7} {'MB/s':>7} | {'us/step':>7} {'MB/s':>7} | {'planc':>6} | {'vs 1,000':>10}"
    )
    print(head)
    print(sub)
    print("-" * len(sub))
    per_step_1k = results[1_000, "planc"][0] / 1_000
    for item in inputs:
        cells = []
        for name, _, _ in contenders:
            seconds, size = results[item.steps, name]
            cells.append(f"{seconds / item.steps * 1e6:7.2f} {size / seconds / 1e6:7.2f}")
        ratio = results[item.steps, "lark"][0] / results[item.steps, "planc"][0]
        scale = results[item.steps, "planc"][0] / item.steps / per_step_1k
        print(
            f"{item.steps:>6,} {len(item.planc.encode()) / 1e3:8.1f} | " + " | ".join(cells) + f" | {ratio:5.2f}x | {scale:9.2f}x"
        )
    sizes = ", ".join(f"{name} {results[10_000, name][1] / 10_000:.0f}" for name, _, _ in contenders if name != "lark")
    print(f"\nbytes/step at 10,000 steps: {sizes}")
    speedup = results[1_000, "lark"][0] / results[1_000, "planc"][0]
    scale = results[10_000, "planc"][0] / 10_000 / per_step_1k
    print(
        f"acceptance: planc vs Lark at 1,000 steps {speedup:.2f}x (target >= 2x): "
        f"{'PASS' if speedup >= 2 else 'FAIL'}; per-step 10,000 vs 1,000 {scale:.2f}x (target <= 1.3x): "
        f"{'PASS' if scale <= 1.3 else 'FAIL'}"
    )
    print(f"(run took {time.perf_counter() - wall:.0f} s)")


def profile(text: str) -> None:
    import cProfile
    import pstats

    run_planc(text)  # warm: tables, lexer, automaton
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        run_planc(text)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
