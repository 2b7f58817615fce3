"""MCP servers: the lock, `planc registry sync`, reaching a server, its credentials and OAuth login. Imports `provenance/`, `tools/` and `settings/`."""
