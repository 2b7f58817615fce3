"""Backends: the interpreter that runs a checked plan, its tools and models, one folder per job.

`state/` (a run's values, and whether it must stop), `calls/` (the one path every tool call takes),
`models/` (what a run asks of models and of the person answering), `run/` (running a plan from its
first step to its record), `report/` (what a run tells whoever watches it). Each folder imports only
the folders its docstring names; tests/test_architecture.py holds the rule.
"""
