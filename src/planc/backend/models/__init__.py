"""Talking to models and to the person who answers: the model client by role (`client.py`), inferences
recorded as calls (`model_calls.py`), the agent loop, `ask` and its interlocutors, the `solver`
finish, and what an MCP server asks during a call. Imports `state/` and `calls/`."""
