"""The run store's side of a run (`calls/run_view.py`'s `Recorder`, the protocol it meets): recording, replaying, resuming.

`Recorder` commits an intent row before each call and its outcome after. `Replay` feeds a
recorded run's results back to the interpreter instead of calling anything, and stops with a
divergence error when the plan asks for a call the record does not hold. `Resume` continues a
run in its own record: what the record holds comes from it, the rest is called and recorded.

Each call's row has an outcome (`planc.store.run_store.OUTCOMES`). Replay and resume never
make a call again whose effect may have happened unless that is safe:

| outcome | replay | resume |
|---|---|---|
| ok | its result | its result |
| failed, refused | fails as the run did | fails as the run did |
| not_approved | stops as the run did | stops as the run did: no resume makes it |
| unknown | fails as the run did | calls it again only if that is safe (`safe_again`) |
| awaiting_approval | stops: the run waits | stops: the run still waits (`planc approve` answers) |
| approved | stops: the run waits | makes it, once: the row is its intent row again |

A result labelled `secret` is recorded as its mark only: a replay stops there, and a resume makes
the call again when the new answer may stand for the run's and the call changes nothing (its tool is
deterministic, a model, or untrusted whatever it answers; and read-only or idempotent:
`gives_again`), else stops too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from planc.backend.calls.approvals import AwaitingApproval
from planc.backend.calls.hooks import Call, Proceed, Skip
from planc.backend.models.model_calls import is_model
from planc.backend.report.events import STAMP, seconds
from planc.backend.state.interrupts import Interrupted
from planc.backend.state.values import RunError, ToolFailed
from planc.registry.provenance.labels import UNTRUSTED
from planc.registry.provenance.redaction import Redactor, is_redacted
from planc.store.large_values import to_json
from planc.store.run_store import RunStore, RunStoreError, plain_json

if TYPE_CHECKING:
    from planc.syntax import ast


def outcome_of(error: Exception | None) -> str:
    """How a call ended, from what it raised: `ok`, else the error's own `outcome` (a timeout's is
    `unknown`, a refused result's `refused`), else `failed`."""
    return "ok" if error is None else getattr(error, "outcome", "failed")


class Recorder:
    """The interpreter's `recorder` while recording: commits an intent row, then the outcome.

    Once the store fails to take a write (RunStoreError: a full disk, another process holding it),
    every later one fails with that same error, so no call starts whose intent a store that has
    failed might or might not keep: the run stops, and says why. Every row passes through the run's
    redaction step (`redactor`) before it is written.
    """

    calls_tools = True

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.redactor = Redactor()
        self.sequence = 0
        self.events = 0  # the number of the run's last event recorded
        self.open: dict[int, int] = {}  # id(call) -> its sequence
        self.failed: RunStoreError | None = None

    def write(self, write: Callable[..., None], *args: object) -> None:
        if self.failed is not None:
            raise self.failed
        try:
            write(self.run_id, *self.redactor.data(args))  # type: ignore[misc]  # data keeps a tuple a tuple
        except RunStoreError as error:
            self.failed = error
            raise

    def replayed(self, call: Call, step: ast.Step | None) -> Skip | Proceed | None:
        return None  # recording: every call is real

    def started(self, call: Call) -> None:
        self.sequence += 1
        self.open[id(call)] = self.sequence
        self.write(
            self.store.call_started,
            self.sequence,
            call.step,
            call.tool.name,
            call.shown_input(),
            call.shown_key(),
            call_labels(call, made=True),
        )

    def finished(self, call: Call, result: object, error: Exception | None) -> None:
        labels = call.result_labels()
        self.write(
            self.store.call_ended,
            self.open.pop(id(call)),
            outcome_of(error),
            self.redactor.labelled(result, labels),
            str(error) if error is not None else None,
            # A shape is learned only from what no one else wrote: a trusted tool's result, its arguments
            # and what decided the call carrying no labels either.
            call.tool.name if call.tool.learns and not labels else None,
        )

    def declined(self, call: Call, message: str) -> None:
        self.sequence += 1
        self.write(
            self.store.call_declined,
            self.sequence,
            call.step,
            call.tool.name,
            call.shown_input(),
            message,
            call_labels(call, made=False),
        )

    def abandoned(self, call: Call) -> None:
        self.write(self.store.call_ended, self.open.pop(id(call)), "unknown")

    def awaiting(self, call: Call, asks: str) -> None:
        """`call` waits for a person's answer (`asks` says what it asks): recorded, not made."""
        self.sequence += 1
        self.write(
            self.store.call_awaiting,
            self.sequence,
            call.step,
            call.tool.name,
            call.shown_input(),
            asks,
            call.shown_key(),
            call_labels(call, made=False),
        )

    def event(self, event: dict) -> None:
        """A stamped event (`planc.backend.report.events`): kept under its number and time."""
        self.events = event["seq"]
        self.write(
            self.store.event,
            event["seq"],
            seconds(event["time"]),
            {field: value for field, value in event.items() if field not in STAMP},
        )


def call_labels(call: Call, made: bool) -> dict:
    """What the record keeps of where a call's values came from; for a call the policy flagged, why, and
    whether a person let it through (it is `made`)."""
    kept: dict[str, object] = {
        "sources": {name: sorted(labels) for name, labels in call.sources.items()},
        "control": sorted(call.control),
    }
    if call.flagged is not None:
        kept.update(flagged=call.flagged, approved=made)
    return kept


def _calls_by_step(run: dict) -> dict[str, list[dict]]:
    """The run's recorded calls by step path, in the order they were made."""
    by_step: dict[str, list[dict]] = {}
    for call in run["calls"]:
        by_step.setdefault(call["step"], []).append(call)
    return by_step


def _same_call(held: dict, call: Call, asked: dict, step: ast.Step | None, run_id: str, doing: str) -> None:
    """A DivergenceError unless the plan's `call` (input `asked`) is the recorded call `held`."""
    if held["tool"] != call.tool.name:
        raise DivergenceError(
            f"step {call.step}: {doing} diverged: the plan calls `{call.tool.name}`, and run "
            f"{run_id} recorded `{held['tool']}` here",
            _node(step),
        )
    if held["input"] != asked:
        raise DivergenceError(
            f"step {call.step}: {doing} diverged: `{call.tool.name}` is called with {_difference(held['input'], asked)}",
            _node(step),
        )


def _usable(held: dict, call: Call, step: ast.Step | None) -> object:
    """The recorded result of `held`, unless the record kept a mark in its place, or in a part's
    (it was `secret`)."""
    if is_redacted(held["output"]):
        raise DivergenceError(
            f"step {call.step}: the record keeps only the mark of what "
            f"`{call.tool.name}` returned, or of its parts, as they were "
            "labelled secret: it cannot be given again without calling the tool, which is "
            "done only for a tool declared read-only and deterministic "
            "(`effects = { read_only = true, deterministic = true }`), whose answer is the run's, "
            "or one whose answers are untrusted",
            _node(step),
        )
    return held["output"]


def _node(step: ast.Step | None) -> ast.Name | None:
    """Where an error about a call points: the step's tool name; nothing for a call outside any step (the finish)."""
    return getattr(step, "tool", None)


def _recorded_end(held: dict, step: ast.Step | None) -> None:
    """Raise what the run was told when the call `held` failed, was refused or was not approved."""
    if held["outcome"] in ("failed", "refused"):
        raise ToolFailed(held["error"], _node(step))
    if held["outcome"] == "not_approved":
        raise RunError(held["error"], _node(step))


def _no_result(held: dict) -> bool:
    """Whether the run never learnt how the call `held` ended: its process died or was interrupted during it.
    (A call that timed out, or whose Ray worker was lost, is unknown too, but the run was told so: its
    error is recorded.)"""
    return held["outcome"] == "unknown" and held["error"] is None


class Replay:
    """The interpreter's `recorder` while replaying: every call's result comes from the record."""

    calls_tools = False  # every call is answered from the record, or the replay stops
    events = 0  # a replay's events are numbered from 1 again

    def __init__(self, run: dict) -> None:
        self.run = run
        self.redactor = Redactor()  # for its events: the record it reads holds no secret to learn
        self.run_id = run["id"]
        self.by_step = _calls_by_step(run)

    def replayed(self, call: Call, step: ast.Step | None) -> Skip:
        recorded = self.by_step.get(call.step) or []
        asked = plain_json(call.shown_input())
        if self._ended_here(recorded):
            ended = Interrupted if self.run["status"] == "interrupted" else RunError
            raise ended(self.run["message"] or f"run {self.run['id']} {self.run['status']} here", _node(step))
        if not recorded:
            raise DivergenceError(
                f"step {call.step}: replay diverged: the plan calls `{call.tool.name}` with "
                f"{to_json(asked)}, and run {self.run['id']} recorded no call at this step",
                _node(step),
            )
        held = recorded[0]
        _same_call(held, call, asked, step, self.run["id"], "replay")
        recorded.pop(0)
        if held["outcome"] in ("awaiting_approval", "approved"):  # the run waits here (or stopped before the call)
            raise AwaitingApproval(
                self.run["message"]
                if self.run["status"] == "awaiting_approval"
                else f"step {call.step}: run {self.run_id} has not made the call of `{call.tool.name}` a person approved here",
                _node(step),
                run_id=self.run_id,
            )
        _recorded_end(held, step)
        if held["outcome"] == "unknown":
            if held["error"] is not None:  # it timed out (or lost its worker): the run was told, and failed or went on
                raise ToolFailed(held["error"], _node(step))
            raise DivergenceError(
                f"step {call.step}: replay cannot go on: run {self.run['id']} recorded the call "
                f"of `{call.tool.name}` here, and no result for it",
                _node(step),
            )
        return Skip(_usable(held, call, step))

    def _ended_here(self, recorded: list[dict]) -> bool:
        """Whether the recorded run failed or was interrupted at this call, so the replay ends as it did,
        with the run's last message (a resume may have ended it there since): the run stopped during this
        call (no result), at it (its outcome unknown, and no call started after), or before it with no
        call left."""
        if self.run["status"] not in ("failed", "interrupted"):
            return False
        if not recorded:
            return not any(self.by_step.values())
        held = recorded[0]
        return _no_result(held) or (
            held["outcome"] == "unknown" and not any(call["started_at"] >= held["finished_at"] for call in self.run["calls"])
        )

    def started(self, call: Call) -> None:  # never reached: replayed() answers every call or raises
        raise DivergenceError(f"step {call.step}: replay would call `{call.tool.name}`")

    def finished(self, call: Call, result: object, error: Exception | None) -> None:
        pass

    def declined(self, call: Call, message: str) -> None:
        pass

    def abandoned(self, call: Call) -> None:
        pass

    def awaiting(self, call: Call, asks: str) -> None:
        pass

    def event(self, event: dict) -> None:
        pass  # a replay writes nothing


class Resume(Recorder):
    """The interpreter's `recorder` while resuming a run, recording into the same run.

    A call with a recorded outcome ends as it did; a call whose outcome is unknown (an intent row
    and no result, or a timeout) is called again only when that is safe (the same row then gets
    the outcome): its tool is idempotent, or it takes the idempotency key the call was made with
    and is given the same key; else the run stops with "outcome unknown". A call a person approved
    (`planc approve`) is made, not asked about again; one that waits for approval is put to the gate
    again (a terminal asks; else it waits on). Either way its row becomes the call's. A call past the
    record is called and recorded.
    """

    def __init__(self, store: RunStore, run: dict) -> None:
        super().__init__(store, run["id"])
        self.run = run
        self.sequence = max((call["sequence"] for call in run["calls"]), default=0)
        self.events = store.last_event(run["id"])
        self.by_step = _calls_by_step(run)
        self.again: dict[int, int] = {}  # id(call) -> the sequence of the row it is called again for
        self.unmade: set[int] = set()  # id(call) of each call again whose row says it was never made

    def replayed(self, call: Call, step: ast.Step | None) -> Skip | Proceed | None:
        recorded = self.by_step.get(call.step) or []
        if not recorded:
            return None  # past the record: a real call
        held = recorded.pop(0)
        _same_call(held, call, plain_json(call.shown_input()), step, self.run_id, "resume")
        if held["outcome"] in ("approved", "awaiting_approval"):  # approved: made now; waiting: the gate asks again
            self.again[id(call)] = held["sequence"]
            self.unmade.add(id(call))
            return Proceed() if held["outcome"] == "approved" else None
        _recorded_end(held, step)
        if held["outcome"] == "ok" and is_redacted(held["output"]) and gives_again(call):
            self.again[id(call)] = held["sequence"]  # its result holds a mark: call again
            return None
        if held["outcome"] == "ok":
            return Skip(_usable(held, call, step))
        if not safe_again(call, held):
            how = (
                "no result is recorded"
                if held["error"] is None
                else "its Ray worker was lost"
                if ": WorkerLost: " in held["error"]
                else "it timed out"
            )
            raise OutcomeUnknown(
                f"step {call.step}: outcome unknown: run {self.run_id} made the call of "
                f"`{call.tool.name}` here and {how}, and `{call.tool.name}` is not "
                f"idempotent{_no_key(call, held)}, so it is not called again",
                _node(step),
            )
        self.again[id(call)] = held["sequence"]
        return None

    def started(self, call: Call) -> None:
        sequence = self.again.pop(id(call), None)
        if sequence is None:
            super().started(call)
            return
        self.open[id(call)] = sequence
        if id(call) in self.unmade:  # its row becomes the intent row of the call made now
            self.unmade.discard(id(call))
            self.write(self.store.call_made, sequence, call.shown_key(), call_labels(call, made=True))

    def declined(self, call: Call, message: str) -> None:
        sequence = self.again.pop(id(call), None)
        if sequence is None:
            super().declined(call, message)
        elif id(call) in self.unmade:  # a call that waited, answered no now: its row says so
            self.unmade.discard(id(call))
            self.write(
                self.store.call_declined,
                sequence,
                call.step,
                call.tool.name,
                call.shown_input(),
                message,
                call_labels(call, made=False),
            )
        # else: asked again for a call made before, and refused: its outcome stays unknown

    def awaiting(self, call: Call, asks: str) -> None:
        sequence = self.again.pop(id(call), None)  # a call that waited already, or whose outcome is unknown
        self.unmade.discard(id(call))
        if sequence is None:
            super().awaiting(call, asks)
        else:
            self.write(
                self.store.call_awaiting,
                sequence,
                call.step,
                call.tool.name,
                call.shown_input(),
                asks,
                call.shown_key(),
                call_labels(call, made=False),
            )


def changes_nothing(call: Call) -> bool:
    """Whether making `call` again changes nothing: its tool is idempotent or read-only."""
    effects = call.tool.effects
    return getattr(effects, "idempotent", False) or getattr(effects, "read_only", False)


def gives_again(call: Call) -> bool:
    """Whether making `call` again may stand for the call the run made, and changes nothing (its tool
    is read-only or idempotent): its tool is deterministic, or a model asked the same conversation
    (taken to answer as it did: a later call that differs from the record stops the resume), or its
    answers are `untrusted` whatever they are. Another tool's answer may depend on the calls of it
    before, and how many times a run was continued, which others' data may decide, would choose it."""
    tool = call.tool
    return (tool.effects.deterministic or is_model(tool) or UNTRUSTED in tool.labels) and changes_nothing(call)


def safe_again(call: Call, held: dict) -> bool:
    """Whether `call`, made before as `held` with an unknown outcome, may be made again: its tool is
    idempotent (or read-only), or it takes the call's idempotency key, the call was made with it, and it
    is the same key now (the tool then knows the call, and does not act twice)."""
    if changes_nothing(call):
        return True
    held_key = held.get("idempotency_key")
    return call.tool.takes_key and held_key is not None and held_key == call.shown_key()


def _no_key(call: Call, held: dict) -> str:
    """Why a tool that takes idempotency keys is not called again all the same (empty when it takes none)."""
    if not call.tool.takes_key:
        return ""
    if held.get("idempotency_key") is None:
        return " and the call was recorded without an idempotency key"
    return " and the call was made with another idempotency key than it would have now"


class OutcomeUnknown(RunError):
    """A resumed run reaches a non-idempotent call that was started and whose outcome is unknown."""


class DivergenceError(RunError):
    """A replayed plan asks for a call its record does not hold."""


def _difference(recorded: dict, asked: dict) -> str:
    parts = []
    for name in sorted(set(recorded) | set(asked)):
        if name not in asked:
            parts.append(f"no `{name}` (recorded {to_json(recorded[name])})")
        elif name not in recorded:
            parts.append(f"`{name}`: {to_json(asked[name])} (not recorded)")
        elif recorded[name] != asked[name]:
            parts.append(f"`{name}`: {to_json(asked[name])} where {to_json(recorded[name])} was recorded")
    return "; ".join(parts) or f"{to_json(asked)} where {to_json(recorded)} was recorded"
