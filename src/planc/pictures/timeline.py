"""A recorded run as a timeline: its steps in the order they started, each with the calls it made,
and when each began and ended. Read from the run store's record of a run (`RunStore.run()`'s dict:
its events and calls), as plain data; `run_page.py` draws it.
"""

from __future__ import annotations

import attrs

from planc.syntax.steps import enclosing_paths

MODEL = "model:"  # a model inference is recorded as a call of the pseudo-tool `model:ROLE`


@attrs.frozen
class Row:
    """A step, or a call one made (or made outside any step: the finish, the planning rounds)."""

    path: str
    tool: str
    started: float
    finished: float | None  # None: it did not finish (the run stopped in it)
    depth: int  # how far it is nested: one per `/` in a step's path, one more for a call under its step
    is_step: bool
    call: dict | None = None  # the recorded call: a tool step's own, or the call this row is
    result: object = None  # a control step's result, when it finished
    error: str | None = None  # why the step failed (refused by the policy, its call failed, ...); None: it did not

    @property
    def took(self) -> float | None:
        return None if self.finished is None else self.finished - self.started

    @property
    def is_inference(self) -> bool:
        return self.call is not None and self.call["tool"].startswith(MODEL)


def row_outcome(row: Row) -> str:
    """How a row ended: its call's outcome; for a step without a call of its own, `failed` when it failed,
    `ok` when it finished, else `unfinished`."""
    if row.call is not None:
        return outcome(row.call)
    return "failed" if row.error is not None else "ok" if row.finished is not None else "unfinished"


def outcome(call: dict) -> str:
    """How a call ended: `ok`, `failed` or `unknown` (no result recorded), or what the record says."""
    if call.get("outcome"):
        return call["outcome"]
    if call["error"] is not None:
        return "failed"
    return "ok" if call["finished_at"] is not None else "unknown"


def span(run: dict) -> tuple[float, float]:
    """When the run started, and when it ended: when it finished, else the last time it recorded."""
    times = [run["started_at"], run["finished_at"] or 0.0]
    times += [event["at"] for event in run["events"]]
    times += [call["finished_at"] or call["started_at"] for call in run["calls"]]
    return run["started_at"], max(times)


def rows(run: dict) -> list[Row]:
    """The run's steps in the order they started, each followed by the calls it made but its own (a tool
    step and its call are one row); the calls made outside any step (the planning rounds, the finish)
    among the top-level steps, in the order they started too.

    A call belongs to the innermost step whose path starts its own: an agent's tool call `1/agent.2/search`
    to step 1, a judged item `2[0]` to step 2.
    """
    started: dict[str, dict] = {}
    for event in run["events"]:
        if event["event"] == "step_started":
            started[event["step"]] = {"tool": event["tool"], "at": event["at"], "finished": None, "result": None, "error": None}
        elif event["event"] == "step_finished" and event["step"] in started:
            started[event["step"]].update(finished=event["at"], result=event.get("result"))
        elif event["event"] == "step_failed" and event["step"] in started:
            started[event["step"]].update(finished=event["at"], error=event.get("error") or "it failed")
    made: dict[str, list[dict]] = {}
    for call in run["calls"]:
        made.setdefault(_owner(call["step"], started), []).append(call)
    found = []
    for path, step in started.items():
        calls = made.get(path, [])
        own = next((call for call in calls if call["step"] == path and call["tool"] == step["tool"]), None)
        finished = step["finished"]
        if finished is None and own is not None:
            finished = own["finished_at"]  # the step failed with its call: it ended when the call did
        depth = path.count("/")
        found.append(Row(path, step["tool"], step["at"], finished, depth, True, own, step["result"], step["error"]))
        found += [_call_row(call, depth + 1) for call in calls if call is not own]
    return _merged(found, [_call_row(call, 0) for call in made.get("", ())])


def _merged(steps: list[Row], outside: list[Row]) -> list[Row]:
    """`outside` (calls of no step, in the order they started) put among `steps` before the first top-level
    step that started after them; a step's own rows stay with it."""
    merged, waiting = [], list(outside)
    for row in steps:
        while waiting and row.depth == 0 and row.is_step and waiting[0].started < row.started:
            merged.append(waiting.pop(0))
        merged.append(row)
    return merged + waiting


def _owner(path: str, steps: dict) -> str:
    """The innermost step of `steps` that `path` is in, or "" for none."""
    return next((enclosing for enclosing in enclosing_paths(path) if enclosing in steps), "")


def _call_row(call: dict, depth: int) -> Row:
    return Row(call["step"], call["tool"], call["started_at"], call["finished_at"], depth, False, call)
