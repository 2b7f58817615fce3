"""`planc show --format mermaid|dot`: the data-flow graph of a plan (planc.pictures), as the tools read it.

The DOT is read by Graphviz's own `dot` (the Debian package `graphviz`; .ci/run installs it, and the
tests that need it skip, saying so, where it is missing). No Mermaid parser runs offline, so the
Mermaid is held to the flowchart grammar line by line: every line one statement of a form Mermaid's
flowchart grammar accepts, every id one planc made, every text quoted and escaped, and what the
statements say (nesting, edges, classes) is the graph's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cli import invoke
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from profiles import examples
from strategies import plans

from planc.passes.check import check
from planc.pictures.dot import render_dot
from planc.pictures.graph import Node, plan_graph
from planc.pictures.mermaid import render_mermaid
from planc.registry.loading.config import registry_from_text
from planc.syntax.printer import print_plan

ROOT = Path(__file__).resolve().parents[1]
DOT = shutil.which("dot")
needs_dot = pytest.mark.skipif(
    DOT is None, reason="Graphviz's `dot` is not installed (Debian: apt-get install graphviz; .ci/run installs it)"
)

TOML = """
[tools.search]
params = { query = { type = "string" } }
effects = { read_only = true, destructive = false, open_world = false }

[tools.get]
params = { id = { type = "string" } }
effects = { read_only = true, destructive = false, open_world = false }

[tools.notify]
params = { text = { type = "string" } }
effects = { read_only = false, destructive = false, open_world = true }

[tools.purge]
params = { id = { type = "string" } }
effects = { read_only = false, destructive = true, open_world = false }

[tools.wipe]
params = { id = { type = "string" } }
"""

PLAN = """hits = search(query: $args.q)
  |> map(do: {
    get(id: item.id)
      |> decide(when: $hits.length > 1, then: { purge(id: "{$hits.first}") })
  })
notify(text: "{$hits.length} found, {$2.x}")
wipe(id: $1.id)
"""


def graph_of(text: str, toml: str | None = TOML, title: str = "p.plan"):
    registry = registry_from_text(toml, ROOT / "planc.toml") if toml is not None else None
    return plan_graph(check(text, registry=registry), registry, title)


def nodes_of(members) -> list[Node]:
    found = []
    for member in members:
        found += [member] if isinstance(member, Node) else nodes_of(member.members)
    return found


def outline(members) -> list:
    """The nesting of the graph: a node as its title, a cluster as (title, its outline)."""
    return [member.title if isinstance(member, Node) else (member.title, outline(member.members)) for member in members]


# --- the graph ------------------------------------------------------------------------------------


def test_the_graph_has_a_node_per_step_nested_in_its_blocks_clusters():
    graph = graph_of(PLAN)
    assert outline(graph.members) == [
        "1 hits = search",
        ("step 2", ["2 map", ("do", ["2/do.1 get", ("step 2/do.2", ["2/do.2 decide", ("then", ["2/do.2/then.1 purge"])])])]),
        "3 notify",
        "4 wipe",
    ]
    assert [node.id for node in nodes_of(graph.members)] == ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]


def test_edges_are_pipes_and_references_from_the_step_read_to_the_reader():
    graph = graph_of(PLAN)
    path = {node.id: node.path for node in nodes_of(graph.members)} | {"args": "$args"}
    edges = {(path[edge.source], path[edge.target], edge.kind, edge.arguments) for edge in graph.edges}
    assert edges == {
        ("1", "2", "pipe", ()),
        ("2/do.1", "2/do.2", "pipe", ()),  # a pipe inside a block too
        ("$args", "1", "reference", ("query",)),
        ("1", "2/do.2", "reference", ("when",)),  # `$hits` in a condition, read by the nested step itself
        ("1", "2/do.2/then.1", "reference", ("id",)),  # a hole in a template, two blocks down
        ("1", "3", "reference", ("text",)),
        ("2", "3", "reference", ("text",)),  # one edge per step read
        ("1", "4", "reference", ("id",)),
    }
    assert graph.reads_args


def test_each_step_carries_the_effects_the_registry_declares():
    effects = {node.path: node.effects for node in nodes_of(graph_of(PLAN).members)}
    assert effects == {
        "1": (),
        "2": (),
        "2/do.1": (),
        "2/do.2": (),  # read-only tools and control steps
        "2/do.2/then.1": ("effectful", "destructive"),
        "3": ("effectful", "open-world"),
        "4": ("effectful", "destructive", "open-world"),
    }  # no effects declared: the worst


def test_without_a_registry_every_tool_is_effectful_destructive_and_open_world():
    effects = {node.path: node.effects for node in nodes_of(graph_of(PLAN, toml=None).members)}
    assert effects["1"] == effects["3"] == ("effectful", "destructive", "open-world")
    assert effects["2"] == ()  # a control step is known without a registry


def test_a_reference_that_resolves_nowhere_draws_no_edge():
    graph = graph_of("a(x: $5)\nb(y: $nothing)", toml=None)
    assert graph.edges == () and not graph.reads_args


# --- DOT, read by Graphviz --------------------------------------------------------------------------


def graphviz(dot_text: str) -> dict:
    """What Graphviz reads in `dot_text` (its JSON output); it must read it without a warning."""
    done = subprocess.run([DOT, "-Tjson"], input=dot_text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


def dot_label(text: str) -> str:
    """A label as Graphviz's JSON gives it (DOT's label escapes left in) as the text drawn."""
    return re.sub(r"\\(.)", lambda match: "\n" if match.group(1) == "n" else match.group(1), text)


@needs_dot
def test_graphviz_reads_the_clusters_nodes_and_edges_as_meant():
    graph = graph_of(PLAN)
    read = graphviz(render_dot(graph))
    objects = read["objects"]
    by_name = {item["name"]: item for item in objects}

    def cluster_outline(item) -> tuple:
        """A cluster's title and, by name, the nodes directly in it and its clusters."""
        inner = [objects[number] for number in item.get("subgraphs", ())]
        nested = {node for sub in inner for node in sub.get("nodes", ())}
        direct = sorted(objects[number]["name"] for number in item.get("nodes", ()) if number not in nested)
        return (item["label"], direct, [cluster_outline(sub) for sub in inner])

    top = [
        item
        for item in objects
        if item["name"].startswith("cluster_") and not any(item["_gvid"] in other.get("subgraphs", ()) for other in objects)
    ]
    assert [cluster_outline(item) for item in top] == [
        ("step 2", ["s2"], [("do", ["s3"], [("step 2/do.2", ["s4"], [("then", ["s5"], [])])])])
    ]
    drawn = {
        (objects[edge["tail"]]["name"], objects[edge["head"]]["name"], edge["style"], edge.get("label", ""))
        for edge in read["edges"]
    }
    assert ("s1", "s2", "bold", "") in drawn and ("s3", "s4", "bold", "") in drawn
    assert ("args", "s1", "dashed", "query") in drawn and ("s1", "s5", "dashed", "id") in drawn
    assert len(drawn) == len(graph.edges) == 8
    assert by_name["s1"]["shape"] == "box" and by_name["s1"]["style"] == "rounded"
    purge = by_name["s5"]
    assert (purge["shape"], purge["style"], purge["fillcolor"]) == ("hexagon", "filled", "#f8d7da")
    assert (by_name["s6"]["style"], by_name["s6"]["fillcolor"]) == ("filled,dashed", "#fff3cd")
    assert dot_label(by_name["s7"]["label"]) == "4 wipe\neffectful, destructive, open-world"
    assert by_name["args"]["shape"] == "parallelogram"


HOSTILE_TITLE = 'odd "name"\\N\n}; digraph x { %%{init: {}}%% <script>alert(1)</script> #35; `md` $$x$$ é\x00'


@needs_dot
def test_a_hostile_file_name_is_only_the_graph_label():
    read = graphviz(render_dot(graph_of("a() |> b()", title=HOSTILE_TITLE)))
    assert dot_label(read["label"]) == HOSTILE_TITLE.replace("\x00", "")
    assert {item["name"] for item in read["objects"]} == {"s1", "s2"}


@needs_dot
@hypothesis_settings(max_examples=examples(60))
@given(plans(max_depth=3))
def test_graphviz_reads_the_picture_of_any_plan(plan):
    graph = plan_graph(check(print_plan(plan)), None, "random.plan")
    read = graphviz(render_dot(graph))
    assert sorted(item["name"] for item in read["objects"] if not item["name"].startswith("cluster_")) == sorted(
        [node.id for node in nodes_of(graph.members)] + (["args"] if graph.reads_args else [])
    )
    assert len(read.get("edges", ())) == len(graph.edges)


# --- Mermaid, held to the flowchart grammar -------------------------------------------------------------

ID = r"[A-Za-z][A-Za-z0-9_]*"
TEXT = r'"(?:[^"#<>&`\n]|#\d+;|<br/>)*"'  # a quoted text: a quote, `#`, `<`, `&` and a backtick only escaped
STYLE = r"[a-z-]+:[^,\s]+(?: [^,\s]+)*"
STATEMENTS = {
    "comment": r"%%(?!\{).*",  # `%%{` would be a directive
    "node": rf"(?P<id>{ID})(?P<shape>\({TEXT}\)|\{{\{{{TEXT}\}}\}}|\[/{TEXT}/\]|\[{TEXT}\])",
    "subgraph": rf"subgraph (?P<id>{ID}) \[{TEXT}\]",
    "end": r"end",
    "edge": rf"(?P<source>{ID}) (?:==>|-\.->\|{TEXT}\|) (?P<target>{ID})",
    "classDef": rf"classDef {ID} {STYLE}(?:,{STYLE})*",
    "class": rf"class (?P<ids>{ID}(?:,{ID})*) (?P<name>{ID})",
}
KEYWORDS = {
    "end",
    "subgraph",
    "graph",
    "flowchart",
    "class",
    "classDef",
    "click",
    "style",
    "linkStyle",
    "direction",
    "default",
    "call",
    "href",
}


def mermaid_statements(text: str) -> list[tuple[str, re.Match]]:
    """Each line of `text` as (kind, match), asserting it is a well-formed flowchart statement, that
    subgraphs close, that every id is safe and every node is declared before an edge or class names it."""
    lines = text.split("\n")
    assert lines[0] == "flowchart TB" and lines[-1] == "", text
    found, ids, nodes, depth = [], set(), set(), 0
    for line in lines[1:-1]:
        statement = line.strip()
        kind, match = next(
            ((kind, match) for kind, pattern in STATEMENTS.items() if (match := re.fullmatch(pattern, statement))), (None, None)
        )
        assert kind is not None, f"not a flowchart statement: {line!r}"
        if kind == "end":
            depth -= 1
            assert depth >= 0, f"`end` without a subgraph: {line!r}"
        assert line == "    " * (depth + 1) + statement, f"indentation: {line!r}"
        for name in ("id", "source", "target", "name"):
            if match.groupdict().get(name) is not None:
                assert match[name] not in KEYWORDS, f"unsafe id: {line!r}"
        if kind in ("node", "subgraph"):
            assert match["id"] not in ids, f"declared twice: {line!r}"
            ids.add(match["id"])
            nodes |= {match["id"]} if kind == "node" else set()
            depth += kind == "subgraph"
        elif kind == "edge":
            assert {match["source"], match["target"]} <= nodes, f"not a declared node: {line!r}"
        elif kind == "class":
            assert set(match["ids"].split(",")) <= nodes, f"not a declared node: {line!r}"
        found.append((kind, match))
    assert depth == 0, "a subgraph is not closed"
    return found


def mermaid_text(quoted: str) -> str:
    """A quoted Mermaid text as the words it shows."""
    return re.sub(r"#(\d+);", lambda match: chr(int(match[1])), quoted[1:-1].replace("<br/>", "\n"))


def test_mermaid_statements_say_what_the_graph_says():
    graph = graph_of(PLAN)
    statements = mermaid_statements(render_mermaid(graph))
    labels = {
        match["id"]: mermaid_text(re.search(TEXT, match[0])[0]) for kind, match in statements if kind in ("node", "subgraph")
    }
    nodes = nodes_of(graph.members)
    assert {node.id: labels[node.id] for node in nodes} == {
        node.id: node.title + (f"\n{', '.join(node.effects)}" if node.effects else "") for node in nodes
    }
    assert labels["args"] == "$args"
    shapes = {match["id"]: match["shape"][:2] for kind, match in statements if kind == "node"}
    assert {node.id for node in nodes if shapes[node.id] == "{{"} == {"s5", "s6", "s7"}  # the effectful: hexagons
    assert all(shapes[node.id][0] == "(" for node in nodes if not node.effects)  # the read-only: rounded
    classes = {(match["name"], node) for kind, match in statements if kind == "class" for node in match["ids"].split(",")}
    assert classes == {
        ("effectful", "s5"),
        ("effectful", "s6"),
        ("effectful", "s7"),
        ("destructive", "s5"),
        ("destructive", "s7"),
        ("openworld", "s6"),
        ("openworld", "s7"),
    }
    arrows = [(match["source"], match[0].split()[1][:3], match["target"]) for kind, match in statements if kind == "edge"]
    assert ("s1", "==>", "s2") in arrows and ("s1", "-.-", "s5") in arrows and len(arrows) == len(graph.edges)
    opened = [match["id"] for kind, match in statements if kind == "subgraph"]
    assert [labels[cluster] for cluster in opened] == ["step 2", "do", "step 2/do.2", "then"]


def test_a_hostile_file_name_stays_in_its_comment():
    statements = mermaid_statements(render_mermaid(graph_of("a() |> b()", title=HOSTILE_TITLE)))
    (comment,) = [match[0] for kind, match in statements if kind == "comment"]
    assert mermaid_text(f'"{comment[3:]}"') == HOSTILE_TITLE


@hypothesis_settings(max_examples=examples(200))
@given(plans(max_depth=3))
def test_the_mermaid_of_any_plan_is_well_formed(plan):
    graph = plan_graph(check(print_plan(plan)), None, "random.plan")
    statements = mermaid_statements(render_mermaid(graph))
    assert sum(kind == "edge" for kind, _ in statements) == len(graph.edges)
    assert {match["id"] for kind, match in statements if kind == "node"} == (
        {node.id for node in nodes_of(graph.members)} | ({"args"} if graph.reads_args else set())
    )


# --- the command ----------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "planc.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "p.plan").write_text(PLAN, encoding="utf-8")
    return tmp_path


def test_show_prints_the_mermaid_and_the_dot_of_a_plan(project):
    mermaid = invoke("show", "p.plan", "--format", "mermaid")  # PLAN has errors: drawn, and exit 1
    assert mermaid.exit_code == 1 and "E301" in mermaid.stderr, mermaid.output
    assert mermaid.stdout == render_mermaid(graph_of(PLAN))
    dot = invoke("show", "p.plan", "--format", "dot")
    assert dot.exit_code == 1, dot.output
    assert dot.stdout == render_dot(graph_of(PLAN)) and dot.stdout.startswith("digraph plan {")


def test_show_draws_a_plan_with_errors_and_refuses_one_that_does_not_parse(project):
    (project / "unknown.plan").write_text("frobnicate(x: 1) |> notify(text: $9)\n", encoding="utf-8")
    drawn = invoke("show", "unknown.plan", "--format", "dot")  # drawn, its errors said, exit 1
    assert drawn.exit_code == 1 and '"s1" -> "s2"' in drawn.stdout and "E200" in drawn.stderr
    (project / "broken.plan").write_text("a(x: 1 2)\n", encoding="utf-8")
    refused = invoke("show", "broken.plan", "--format", "mermaid")
    assert refused.exit_code == 1 and refused.stdout == "" and "E100" in refused.stderr


@pytest.mark.parametrize(
    "line",
    [
        's1("say "hi"")',  # a raw quote ends the text
        's1("a <b>bold</b>")',  # HTML in a label
        "s1(unquoted)",
        's1("a #x")',  # `#` that is no entity code
        'end("1 a")',  # a keyword as an id
        "s1 --> s9",  # an arrow of a kind planc does not draw, to a node never declared
        "%%{init: {}}%%",  # a directive, not a comment
        'subgraph c1 ["x"]',  # never closed
    ],
)
def test_the_mermaid_check_refuses_what_mermaid_would_misread(line):
    with pytest.raises(AssertionError):
        mermaid_statements(f'flowchart TB\n    s0("0 a")\n    {line}\n')
