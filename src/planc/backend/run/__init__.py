"""Running a plan: the interpreter and its control steps, what a run holds open (`session.py`), the
run's arguments, a run recorded in the run store, and a batch of runs. Imports `state/`, `calls/`,
`models/` and `report/`."""
