"""A plan's data-flow graph as a Mermaid flowchart: `planc show PLAN --format mermaid`.

The same picture as `dot.py`'s: a read-only step is a rounded box, a step that may change something
a hexagon (class `effectful`), filled red when it may destroy (`destructive`); a step that reaches the
open world is dashed (`openworld`); a pipe is a thick arrow, a reference a dotted one labelled with its
arguments; a step holding blocks is a subgraph, each block a subgraph inside it.

Every node id is one planc makes (`s1`, `c1`, `args`), never a name from the plan, and every text is
quoted with anything but letters, digits and plain punctuation written as a Mermaid entity code
(`#35;`), so no plan or file name can end a label, start a comment or reach the HTML a label becomes.
"""

from __future__ import annotations

from planc.pictures.graph import ARGS_NODE, PIPE, Cluster, Graph, Node

# Fill and stroke as in the DOT picture; a class later in this list wins where two set the same property.
CLASSES = (
    ("effectful", "fill:#fff3cd,stroke:#8a6d3b"),
    ("destructive", "fill:#f8d7da,stroke:#b02a37,stroke-width:2px"),
    ("openworld", "stroke-dasharray:5 3"),
)
PLAIN = frozenset(" _-./=,:")  # punctuation that means nothing inside a quoted Mermaid text


def render_mermaid(graph: Graph) -> str:
    """The Mermaid flowchart of `graph`, ending with a newline.

    >>> from planc.passes.check import check
    >>> from planc.pictures.graph import plan_graph
    >>> print(render_mermaid(plan_graph(check("map(over: [1], do: { reshape(value: $args.x) })"), None, "p.plan")),
    ...       end="")
    flowchart TB
        %% p.plan
        args[/"#36;args"/]
        subgraph c1 ["step 1"]
            s1("1 map")
            subgraph c2 ["do"]
                s2("1/do.1 reshape")
            end
        end
        args -.->|"value"| s2
        classDef effectful fill:#fff3cd,stroke:#8a6d3b
        classDef destructive fill:#f8d7da,stroke:#b02a37,stroke-width:2px
        classDef openworld stroke-dasharray:5 3
    """
    lines = ["flowchart TB", f"    %% {text(graph.title)}"]
    if graph.reads_args:
        lines.append(f"    {ARGS_NODE}[/{quote('$args')}/]")
    nodes: list[Node] = []
    for member in graph.members:
        lines.extend(_member(member, "    ", nodes))
    for edge in graph.edges:
        arrow = "==>" if edge.kind == PIPE else f"-.->|{quote(', '.join(edge.arguments))}|"
        lines.append(f"    {edge.source} {arrow} {edge.target}")
    for name, style in CLASSES:
        lines.append(f"    classDef {name} {style}")
    for name, _ in CLASSES:
        members = [node.id for node in nodes if name in (word.replace("-", "") for word in node.effects)]
        if members:
            lines.append(f"    class {','.join(members)} {name}")
    return "\n".join(lines) + "\n"


def _member(member: Node | Cluster, indent: str, nodes: list[Node]) -> list[str]:
    if isinstance(member, Node):
        nodes.append(member)
        label = quote(member.title + (f"\n{', '.join(member.effects)}" if member.effects else ""))
        shape = f"{{{{{label}}}}}" if "effectful" in member.effects else f"({label})"
        return [f"{indent}{member.id}{shape}"]
    lines = [f"{indent}subgraph {member.id} [{quote(member.title)}]"]
    for inner in member.members:
        lines.extend(_member(inner, indent + "    ", nodes))
    lines.append(f"{indent}end")
    return lines


def quote(value: str) -> str:
    """`value` as a quoted Mermaid text, line breaks as `<br/>`.

    >>> quote('say "hi" <b>#1</b>\\nthen')
    '"say #34;hi#34; #60;b#62;#35;1#60;/b#62;<br/>then"'
    """
    return '"' + "<br/>".join(text(line) for line in value.split("\n")) + '"'


def text(value: str) -> str:
    """`value` with every character but letters, digits and PLAIN as a decimal entity code."""
    return "".join(char if char.isalnum() or char in PLAIN else f"#{ord(char)};" for char in value)
