"""Backends: the interpreter that runs a checked plan, its tools and models."""
