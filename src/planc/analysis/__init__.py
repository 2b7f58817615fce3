"""Analyses several stages share: literal values, JSON Schema reading, what a step may do."""
