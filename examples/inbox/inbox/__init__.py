"""The inbox assistant's tools (examples/inbox/)."""
