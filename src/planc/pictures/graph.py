"""A checked plan's data-flow graph, built once for every picture of it (`dot.py`, `mermaid.py`).

A node per step, nested steps included; an edge from each step a reference reads to the step that
holds the reference, and from each step to the one it pipes into; a cluster per step that holds
blocks, with a cluster per block inside it, so that nesting in the picture is nesting in the plan.
A node says what its step may change, from the same facts as `planc show`'s blast radius.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Union

import attrs

from planc.analysis.blast_radius import blast_radius
from planc.analysis.reads import reads_by_argument
from planc.passes.check import CheckResult
from planc.passes.resolve.resolve import ARGS
from planc.registry.loading.registry import Registry
from planc.syntax import ast
from planc.syntax.steps import step_blocks

ARGS_NODE = "args"  # the node of the run's arguments, when a step reads `$args`
PIPE, REFERENCE = "pipe", "reference"


@attrs.frozen
class Node:
    id: str  # `s1`, `s2`, ... in text order: safe in every picture language, whatever the plan says
    path: str
    tool: str
    label: str | None
    effects: tuple[str, ...]  # the words of the blast radius's groups the step is in; none: read-only

    @property
    def title(self) -> str:
        """`1 hits = search`: the step as `planc show` names it."""
        return f"{self.path} {self.label} = {self.tool}" if self.label else f"{self.path} {self.tool}"


@attrs.frozen
class Cluster:
    id: str  # `c1`, `c2`, ...
    title: str  # `step 2`, or a block's argument name (`do`, `then`, `do2`)
    members: tuple[Union[Node, "Cluster"], ...]


@attrs.frozen
class Edge:
    source: str  # node ids: the step whose result flows ...
    target: str  # ... into this one
    kind: str  # PIPE or REFERENCE
    arguments: tuple[str, ...] = ()  # a reference's: the arguments of the target step that hold it


@attrs.frozen
class Graph:
    title: str
    members: tuple[Union[Node, Cluster], ...]  # the top level, in text order
    edges: tuple[Edge, ...]
    reads_args: bool  # whether any step reads `$args` (then an ARGS_NODE node is drawn)


def plan_graph(result: CheckResult, registry: Registry | None, title: str) -> Graph:
    """The data-flow graph of `result`, a plan that parsed (it may have errors: references that resolve
    nowhere draw no edge). Without `registry`, every tool counts as effectful, destructive and open-world.

    >>> from planc.passes.check import check
    >>> graph = plan_graph(check('hits = search(q: "x") |> map(do: { get(id: item) })\\nsend(t: $hits)'),
    ...                    None, "p.plan")
    >>> [type(member).__name__ for member in graph.members]
    ['Node', 'Cluster', 'Node']
    >>> [(edge.source, edge.target, edge.kind, edge.arguments) for edge in graph.edges]
    [('s1', 's2', 'pipe', ()), ('s1', 's4', 'reference', ('t',))]
    """
    return _Builder(result, registry).graph(title)


class _Builder:
    def __init__(self, result: CheckResult, registry: Registry | None) -> None:
        assert result.plan is not None and result.resolution is not None, "a plan that parsed is drawn"
        self.plan, self.resolution = result.plan, result.resolution
        self.effects = blast_radius(self.resolution, registry).words()
        self.ids: dict[ast.Step, str] = {}
        self.clusters = 0
        self.edges: dict[tuple[str, str, str], list[str]] = {}  # (source, target, kind) -> arguments, in order

    def graph(self, title: str) -> Graph:
        members = self.level(self.plan.pipelines)
        self.reference_edges()
        edges = tuple(
            Edge(source, target, kind, tuple(dict.fromkeys(arguments)))
            for (source, target, kind), arguments in self.edges.items()
        )
        return Graph(title, members, edges, any(edge.source == ARGS_NODE for edge in edges))

    def level(self, pipelines: Iterable[ast.Pipeline]) -> tuple:
        """The members of one level (the plan's top, or a block), numbering steps as they come."""
        members = []
        for pipeline in pipelines:
            for before, step in zip((None, *pipeline.steps), pipeline.steps):
                members.append(self.member(step))
                if before is not None:
                    self.edges[(self.ids[before], self.ids[step], PIPE)] = []
        return tuple(members)

    def member(self, step: ast.Step) -> Node | Cluster:
        path = self.resolution.paths[step]
        node = Node(
            f"s{len(self.ids) + 1}", path, step.tool.text, step.label.text if step.label else None, self.effects.get(path, ())
        )
        self.ids[step] = node.id
        blocks = list(step_blocks(step))
        if not blocks:
            return node
        self.clusters += 1
        cluster_id = f"c{self.clusters}"
        inner = []
        for block, name in blocks:
            self.clusters += 1
            inner.append(Cluster(f"c{self.clusters}", name, self.level(block.pipelines)))
        return Cluster(cluster_id, f"step {path}", (node, *inner))

    def reference_edges(self) -> None:
        targets = self.resolution.targets
        for step, target_id in self.ids.items():
            for argument, read in reads_by_argument(step, targets):
                source = ARGS_NODE if read == ARGS else self.ids.get(read) if isinstance(read, ast.Step) else None
                if source is not None:
                    self.edges.setdefault((source, target_id, REFERENCE), []).append(argument)
