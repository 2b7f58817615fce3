"""What every part of a run shares: its values, scopes and errors (`values.py`), and whether it must
stop, after a failure (`stop.py`) or a signal (`interrupts.py`). Imports no other backend folder."""
