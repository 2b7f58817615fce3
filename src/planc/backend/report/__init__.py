"""Reporting a run: its events, stamped once (`events.py`), shown as progress on a terminal
(`progress.py`) and sent as OpenTelemetry spans (`traces.py`). Imports no other backend folder."""
