"""A plan's data-flow graph in Graphviz's DOT language: `planc show PLAN --format dot`.

A read-only step is a rounded box; a step that may change something a hexagon, filled red when it
may destroy (amber when not); a step that reaches the open world is dashed; its label says which. A pipe is a
bold arrow, a reference a thin dashed one labelled with the arguments that hold it. Each step that
holds blocks is a cluster, and each block a cluster inside it.
"""

from __future__ import annotations

from planc.pictures.graph import ARGS_NODE, PIPE, Cluster, Graph, Node

FONT = "Helvetica"


def render_dot(graph: Graph) -> str:
    """The DOT text of `graph`, ending with a newline.

    >>> from planc.passes.check import check
    >>> from planc.pictures.graph import plan_graph
    >>> print(render_dot(plan_graph(check("reshape(value: 1) |> exit()\\nask(question: $1)"), None, "p.plan")),
    ...       end="")
    digraph plan {
      graph [label="p.plan", labelloc=t, fontname="Helvetica"];
      node [fontname="Helvetica", shape=box, style=rounded];
      edge [fontname="Helvetica", fontsize=10];
      "s1" [label="1 reshape", style="rounded"];
      "s2" [label="2 exit", style="rounded"];
      "s3" [label="3 ask\\nopen-world", style="rounded,dashed"];
      "s1" -> "s2" [style=bold, penwidth=2];
      "s1" -> "s3" [style=dashed, label="question"];
    }
    """
    lines = [
        "digraph plan {",
        f"  graph [label={quote(graph.title)}, labelloc=t, fontname={quote(FONT)}];",
        f"  node [fontname={quote(FONT)}, shape=box, style=rounded];",
        f"  edge [fontname={quote(FONT)}, fontsize=10];",
    ]
    if graph.reads_args:
        lines.append(f'  {quote(ARGS_NODE)} [label="$args", shape=parallelogram];')
    for member in graph.members:
        lines.extend(_member(member, "  "))
    for edge in graph.edges:
        if edge.kind == PIPE:
            style = "style=bold, penwidth=2"
        else:
            style = f"style=dashed, label={quote(', '.join(edge.arguments))}"
        lines.append(f"  {quote(edge.source)} -> {quote(edge.target)} [{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _member(member: Node | Cluster, indent: str) -> list[str]:
    if isinstance(member, Node):
        return [f"{indent}{quote(member.id)} [{_node_attributes(member)}];"]
    # Graphviz draws a subgraph as a box only when its name starts with `cluster`.
    lines = [
        f"{indent}subgraph {quote('cluster_' + member.id)} {{",
        f'{indent}  label={quote(member.title)}; style=rounded; color="#6c757d";',
    ]
    for inner in member.members:
        lines.extend(_member(inner, indent + "  "))
    lines.append(f"{indent}}}")
    return lines


def _node_attributes(node: Node) -> str:
    text = node.title + (f"\n{', '.join(node.effects)}" if node.effects else "")
    effectful, destructive = "effectful" in node.effects, "destructive" in node.effects
    styles = (
        ([] if effectful else ["rounded"])
        + (["filled"] if effectful or destructive else [])
        + (["dashed"] if "open-world" in node.effects else [])
    )
    attributes = [f"label={quote(text)}"] + (["shape=hexagon"] if effectful else [])
    attributes.append(f"style={quote(','.join(styles))}")
    if destructive:
        attributes += ['fillcolor="#f8d7da"', 'color="#b02a37"', "penwidth=2"]
    elif effectful:
        attributes.append('fillcolor="#fff3cd"')
    return ", ".join(attributes)


def quote(text: str) -> str:
    """`text` as a DOT double-quoted string: backslashes and quotes escaped (a backslash starts DOT's own
    escapes, `\\N` the node's name), a line break as DOT's centred `\\n`, other control characters dropped.

    >>> print(quote('a "b" \\\\N\\nc\\x00'))
    "a \\"b\\" \\\\N\\nc"
    """
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + "".join(char for char in escaped if char >= " " and char != "\x7f") + '"'
