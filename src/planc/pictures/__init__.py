"""Pictures of plans: a plan's data-flow graph as Graphviz DOT or Mermaid. They read what the check
already knows; nothing here runs a plan or a tool."""
