"""Pictures of plans and runs: a plan's data-flow graph as Graphviz DOT or Mermaid, a recorded run as
one self-contained HTML page. They read what the check and the run store already know; nothing here
runs a plan or a tool."""
