"""Step numbering and step paths.

Top-level steps are numbered 1, 2, 3... in text order across pipelines. The
steps of a block are numbered from 1 inside it, and their path adds the
argument that holds the block: `3/do.2`, `3/then.1`, `3/do.2/else.1`. When
one argument holds several blocks (a list of blocks), the second is `do2`,
the third `do3`.

At run time a path says more: the item of a block it runs for (`3/do.2[4]`: the block of
the map's fifth item), the steps of a declared plan under the step that calls it (`2/1`),
an agent's tool calls (`1/agent.2/search`) and a judged item (`2[0]`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from planc.syntax import ast


def step_paths(plan: ast.Plan) -> dict[ast.Step, str]:
    """Every step of `plan`, nested ones included, with its path.

    >>> from planc.syntax.parser import parse
    >>> plan = parse("a() |> map(do: { b() |> c() })").plan
    >>> list(step_paths(plan).values())
    ['1', '2', '2/do.1', '2/do.2']
    """
    return {step: path for step, path in walk_steps(plan.pipelines)}


def walk_steps(pipelines: Iterable[ast.Pipeline], prefix: str = "") -> Iterator[tuple[ast.Step, str]]:
    """(step, path) for the steps of `pipelines` and of every block inside them, in text order."""
    number = 0
    for pipeline in pipelines:
        for step in pipeline.steps:
            number += 1
            path = f"{prefix}{number}"
            yield step, path
            for block, name in step_blocks(step):
                yield from walk_steps(block.pipelines, f"{path}/{name}.")


AGENT_CALLS = "agent"  # the segment of an agent's tool calls in a run-time path: `1/agent.2/search`


def agent_call_path(path: str, number: int, tool: str) -> str:
    """The path of the `number`-th tool call the agent at `path` makes, to `tool`."""
    return f"{path}/{AGENT_CALLS}.{number}/{tool}"


def made_by_agent(path: str) -> bool:
    """Whether the run-time `path` is an agent's tool call, or a step under one (a declared plan it called).

    >>> made_by_agent(agent_call_path("4", 2, "plan__sub") + "/1"), made_by_agent("4/do.1[0]")
    (True, False)
    """
    return f"/{AGENT_CALLS}." in path


def enclosing_paths(path: str) -> Iterator[str]:
    """`path`, then every run-time path it is inside, innermost first.

    >>> list(enclosing_paths("3/do.1[4]/2"))
    ['3/do.1[4]/2', '3/do.1[4]', '3/do.1', '3']
    >>> list(enclosing_paths("1/agent.2/search")), list(enclosing_paths("2[0]"))
    (['1/agent.2/search', '1/agent.2', '1'], ['2[0]', '2'])
    """
    while path:
        yield path
        path = path[: max(path.rfind("/"), path.rfind("["), 0)]


def step_blocks(step: ast.Step) -> Iterator[tuple[ast.Block, str]]:
    """The blocks in `step`'s arguments, each with the name used in its steps' paths."""
    for arg in step.args:
        for ordinal, block in enumerate(blocks_in(arg.value), start=1):
            yield block, block_name(arg, ordinal)


def deciding(step: ast.Step) -> ast.Arg | None:
    """What decides a `decide` or an `exit`: its `when` condition, or its `infer` question for the judge
    (None for an `exit` that always exits)."""
    return step.arg("when") or step.arg("infer")


def block_name(arg: ast.Arg, ordinal: int) -> str:
    """The name of the `ordinal`-th block in `arg` in step paths: `do`, then `do2`, `do3`."""
    return arg.name.text if ordinal == 1 else f"{arg.name.text}{ordinal}"


def blocks_in(expr: ast.Expr) -> list[ast.Block]:
    """The outermost blocks inside `expr` (not those nested in a block's own steps)."""
    kind = type(expr)
    if isinstance(expr, ast.Block):
        return [expr]
    if kind in LEAVES:
        return []
    found: list[ast.Block] = []
    pending = [expr]
    while pending:
        node = pending.pop()
        if type(node) is ast.Block:
            found.append(node)
        elif type(node) not in LEAVES:
            pending.extend(reversed(children(node)))
    return found


# Expressions that hold no block and no reference other than themselves.
LEAVES = frozenset({ast.Literal, ast.Ref, ast.Path})


def children(expr: ast.Expr) -> tuple:
    """The direct sub-expressions of `expr` (holes' targets included)."""
    if isinstance(expr, ast.ListExpr):
        return expr.items
    if isinstance(expr, ast.Record):
        return tuple(entry.value for entry in expr.entries)
    if isinstance(expr, ast.Compare):
        return (expr.left, expr.right)
    if isinstance(expr, ast.Not):
        return (expr.operand,)
    if isinstance(expr, (ast.And, ast.Or)):
        return expr.operands
    if isinstance(expr, ast.String):
        parts = expr.parts
        if len(parts) == 1 and type(parts[0]) is str:
            return ()
        return tuple(part.target for part in parts if type(part) is ast.Hole)
    return ()
