"""The built-in steps: the control steps and the pure steps, each declared once. Imports `provenance/` and `tools/`."""
