"""Progress of `planc run` on stderr, built on the events hook (hooks.py); and of `planc batch` (`BatchProgress`).

On a terminal, a rich progress display: a spinner with the step running now
and the tool calls made (out of the cost pass's most, when it is bounded),
with a line per finished call above it. Elsewhere, plain lines as steps start
and finish:

    [1] search {"query": "disk", "limit": 5}
    [1] search -> list of 5
    [3/do.1[4]] get_incident {"id": "INC-7"}
    [3/do.1[4]] get_incident -> object

stdout is left to the result.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Self

from planc.registry.provenance.redaction import cut
from planc.registry.steps.builtins import CONTROL_STEPS

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import ProgressColumn

INPUT_CHARS = 80


def summary(value: object) -> str:
    """A few words on a result.

    >>> summary([1, 2]), summary({"a": 1}), summary("x" * 100)[:6], summary(None)
    ('list of 2', 'object', '"xxxxx', 'null')
    """
    if isinstance(value, list):
        return f"list of {len(value)}"
    if isinstance(value, dict):
        return "object"
    return _short(json.dumps(value, ensure_ascii=False, default=str))


def _short(text: str, limit: int = INPUT_CHARS) -> str:
    return cut(" ".join(text.split()), limit - 1)


ENDED_CALLS = ("tool_finished", "tool_failed")  # the events of a tool call that ended, as it ended


def line(event: dict) -> str | None:
    """The plain line of an event, or None for the events that get none.

    >>> line({"event": "tool_started", "step": "3/do.1[4]", "tool": "get", "input": {"id": "I4"}})
    '[3/do.1[4]] get {"id": "I4"}'
    >>> line({"event": "step_started", "step": "3", "tool": "map"})
    '[3] map ...'
    >>> line({"event": "tool_finished", "step": "2", "tool": "get", "error": "...", "replacement": {}})
    '[2] get -> failed, replaced by object'
    >>> line({"event": "tool_failed", "step": "2", "tool": "get", "error": "..."})
    '[2] get -> failed'
    >>> line({"event": "tool_progress", "step": "4", "tool": "index", "progress": 2.0, "total": 5.0, "message": None})
    '[4] index ... 2/5'
    """
    kind, step = event.get("event"), event.get("step")
    if kind == "tool_started":
        return f"[{step}] {event['tool']} {_short(json.dumps(event.get('input', {}), ensure_ascii=False, default=str))}"
    if kind == "tool_progress":
        done = (
            [f"{event['progress']:g}" + (f"/{event['total']:g}" if event.get("total") is not None else "")]
            if event.get("progress") is not None
            else []
        )
        said = [_short(event["message"])] if event.get("message") else []
        return " ".join([f"[{step}] {event['tool']} ...", *done, *said])
    if kind == "tool_failed" or (kind == "tool_finished" and "error" in event):
        replaced = f", replaced by {summary(event['replacement'])}" if "replacement" in event else ""
        return f"[{step}] {event['tool']} -> failed{replaced}"
    if kind == "tool_finished":
        return f"[{step}] {event['tool']} -> {summary(event.get('result'))}"
    if kind == "step_started" and event.get("tool") in CONTROL_STEPS:
        return f"[{step}] {event['tool']} ..."
    if kind == "step_finished" and event.get("tool") in CONTROL_STEPS:
        return f"[{step}] {event['tool']} -> {summary(event.get('result'))}"
    if kind == "inference_started":
        return f"[{step}] infer {_short(str(event.get('question')))}"
    if kind == "inference_finished":
        return f"[{step}] infer -> {'yes' if event.get('answer') else 'no'}"
    if kind == "run_finished":
        return f"run finished: {event.get('status')}"
    return None


class LiveDisplay:
    """A rich progress display on a terminal (`display`; None elsewhere), one task in it, shown inside `with`.

    `columns(progress)` gives its columns from the module `rich.progress`, imported only for a terminal."""

    def __init__(
        self, console: Console, columns: Callable[[ModuleType], list[ProgressColumn]], description: str, total: int | None
    ) -> None:
        self.console = console
        self.display = None
        if console.is_terminal:
            from rich import progress

            self.display = progress.Progress(*columns(progress), console=console, transient=True)
            self.task = self.display.add_task(description, total=total)

    def __enter__(self) -> Self:
        if self.display is not None:
            self.display.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.display is not None:
            self.display.stop()


class Progress(LiveDisplay):
    """The stderr progress of one run: `sink` takes the events; use it in `with` around the run."""

    def __init__(self, console: Console, total_calls: int | None = None) -> None:
        super().__init__(
            console,
            lambda rich: [
                rich.SpinnerColumn(),
                rich.TextColumn("{task.description}"),
                rich.BarColumn(),
                rich.MofNCompleteColumn(),
                rich.TextColumn("tool calls"),
                rich.TimeElapsedColumn(),
            ],
            "starting",
            total_calls,
        )
        self.calls = 0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The live display off for a while (an `--approve` question)."""
        if self.display is None:
            yield
            return
        self.display.stop()
        try:
            yield
        finally:
            self.display.start()

    def sink(self, event: dict) -> None:
        kind = event.get("event")
        if kind in ENDED_CALLS:
            self.calls += 1
        text = line(event)
        if self.display is None:
            if text is not None:
                self.console.print(text, markup=False, highlight=False)
            return
        if kind in ("step_started", "tool_started", "inference_started"):
            self.display.update(self.task, description=f"[{event.get('step')}] {event.get('tool', 'infer')}")
        if kind == "tool_progress":
            self.display.update(self.task, description=text)
        if kind in ENDED_CALLS:
            self.display.update(self.task, completed=self.calls)
        if text is not None and kind in (*ENDED_CALLS, "inference_finished", "run_finished"):
            from rich.text import Text

            self.display.console.print(Text(text, style="dim"))  # a style= here would dim the live display too


class BatchProgress(LiveDisplay):
    """The stderr progress of `planc batch`, given each run as it ends (`finished`): on a terminal a bar of the
    lines run, with what became of them so far; elsewhere a plain line per run:

        line 12: ok (run 20250101-120000-1a2b3c4d)
    """

    def __init__(self, console: Console, total: int) -> None:
        super().__init__(
            console,
            lambda rich: [
                rich.TextColumn("runs"),
                rich.BarColumn(),
                rich.MofNCompleteColumn(),
                rich.TextColumn("{task.description}"),
                rich.TimeElapsedColumn(),
            ],
            "",
            total,
        )
        self.counts: dict[str, int] = {}

    def finished(self, line: int, run_id: str, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        if self.display is None:
            self.console.print(f"line {line}: {outcome} (run {run_id})", markup=False, highlight=False)
            return
        so_far = ", ".join(f"{count} {name}" for name, count in self.counts.items())
        self.display.update(self.task, advance=1, description=so_far)
