"""What a program embedding planc can decide during a run: the hooks.

- `gate(call)`, before every real tool dispatch at any depth (a plan's steps, blocks, declared plans,
  an agent's tools): `Proceed`, `Skip` with a result to use instead, or `Abort`. It is not asked for a
  call the record answers (a replay, a resume), nor for control steps, which call no tool.
- `on_tool_error(call, error)`, when a dispatched call raised: `Propagate` (the step fails), `Replace`
  with a result the run goes on with, or `Abort`.
- `events(event)`: every run, step, tool call and inference as it starts and finishes (docs/api.md).
- `interlocutor(question)`: the answer to an `ask` step, or `Unanswered`. Questions come one at a
  time, even from the items of a `map` running at once.

An `Abort` stops the run with `planc.backend.state.values.Aborted`, which holds the results of the steps
that finished (the partial state) and, when `on_tool_error` aborted, the tool's error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import attrs

from planc.analysis.result_labels import call_labels
from planc.registry.provenance.labels import SECRET
from planc.registry.provenance.redaction import mark, shown_arguments
from planc.registry.tools.tool import Tool


@attrs.frozen
class PlanCall:
    """A declared plan being run: `plan__NAME` (`plan` is NAME) called at the step path `step`."""

    plan: str
    step: str


@attrs.frozen
class Call:
    """One real tool dispatch, about to happen or done."""

    step: str  # the step path, `3/do.1[4]` inside the fifth item of a map, `2/1` in a declared plan called at 2
    tool: Tool
    args: Mapping  # the rendered arguments
    # What its templates were rendered against: `$1`, `$label`, `$args`, and `item`, `index`, `accumulator`
    # inside a block (planc.backend.state.values.TemplateScope).
    scope: Mapping = attrs.field(factory=dict)
    stack: tuple[PlanCall, ...] = ()  # the declared plans it is in, outermost first
    key: str | None = None  # its idempotency key (planc.backend.calls.idempotency), given by the dispatch
    id: str | None = None  # the model's id of the call, for a call an agent's model asked for
    # Where its values came from: each argument's labels, and the labels of what decided that it runs.
    sources: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    control: frozenset[str] = frozenset()
    # Why the policy refuses it for where its values came from, when it does: then it is made only if the
    # gate (a person) lets it through, and the record says so.
    flagged: str | None = None

    def result_labels(self) -> frozenset[str]:
        """What its result carries, and its error: its tool's, arguments' and control's labels."""
        return call_labels(self.tool.labels, self.sources, self.control)

    def shown_input(self) -> dict:
        """Its arguments as planc writes them (records, events): a `secret` one as its mark."""
        return shown_arguments(self.args, self.sources)

    def shown_key(self) -> str | None:
        """Its idempotency key as planc writes it: its mark when a `secret` argument made it."""
        if self.key is None or not any(SECRET in labels for labels in self.sources.values()):
            return self.key
        return mark(self.key)


@attrs.frozen
class Question:
    """What an `ask` step asks: `text`, at the step path `step`, in the declared plans of `stack`."""

    step: str
    text: str
    stack: tuple[PlanCall, ...] = ()


@attrs.frozen
class Proceed:
    """Call the tool."""


@attrs.frozen
class Skip:
    """Do not call the tool; use `result` as if it had returned it."""

    result: object = None


@attrs.frozen
class Abort:
    """Stop the run here."""

    reason: str


@attrs.frozen
class Propagate:
    """Let the tool's error fail the run."""


@attrs.frozen
class Replace:
    """Use `result` instead of the error."""

    result: object = None


@attrs.frozen
class Unanswered:
    """Nobody answered the question; `reason` says why (the step's error when it has `when_unanswered: "fail"`)."""

    reason: str = "nobody is there to ask"


@attrs.frozen
class Hooks:
    gate: Callable[[Call], Awaitable[Proceed | Skip | Abort]] | None = None
    on_tool_error: Callable[[Call, Exception], Awaitable[Propagate | Replace | Abort]] | None = None
    events: Callable[[dict], None] | None = None  # the run, its steps, tool calls and inferences: events.py
    interlocutor: Callable[[Question], Awaitable[object]] | None = None  # an answer, or Unanswered
