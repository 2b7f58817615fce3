"""Making a tool call: the one dispatch every call takes (`dispatch.py`), what an embedding program
decides about it (`hooks.py`, and `approve.py` on a terminal), its key, budget and result, and the
providers that make it: Python functions, Ray tasks, MCP servers. Imports `state/`."""
