"""`ask` at run time: the question put to the run's interlocutor, one at a time, its answer recorded.

Questions are asked one at a time, even from the items of a `map` running at once (the run's lock).
What came of a question, an answer or none and why, is recorded like a call of the pseudo-tool
`ask` at the step's path, its input the question: a replay takes it from the record and asks
nobody, and a resume asks again only a question whose answer was never recorded (its process died,
or it was interrupted, while the question was open).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from planc.backend.calls import plan_stack
from planc.backend.calls.dispatch import recorded_call, result_bytes
from planc.backend.calls.hooks import Call, Question, Skip, Unanswered
from planc.backend.calls.run_view import RunView
from planc.backend.state.stop import current as current_stop
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.syntax import ast

NO_INTERLOCUTOR = "no one is there to ask: the run has no interlocutor"


async def answer(run: RunView, step: ast.Step, path: str, text: str, schema: Mapping | None = None) -> object:
    """The answer to the question `text` of the `ask` step at `path` (or of an MCP server, during the call at
    `path`, which recorded with the `schema` it asks the answer to fit), or Unanswered with the reason."""
    question = Question(path, text, plan_stack.current())
    asked = {"question": text, **({"schema": schema} if schema is not None else {})}
    call = Call(path, CONTROL_STEPS["ask"], asked, stack=question.stack)
    recorder = run.session.recorder
    replayed = recorder.replayed(call, step) if recorder is not None else None
    if isinstance(replayed, Skip):  # a question is never approved (Proceed): it is no tool call
        return _verdict(cast(dict, replayed.result))  # recorded as `_ask` gives it
    async with run.asking:
        current_stop().check(path, step.tool)  # the run may have failed while this question waited its turn
        came = await recorded_call(
            recorder,
            call,
            lambda: _ask(run.hooks.interlocutor, question),
            what=f"step {path}: the answer",
            explain=lambda error: error,
            limit_bytes=result_bytes(run.registry),
        )
    return _verdict(came)


async def _ask(interlocutor: Callable[[Question], Awaitable[object]] | None, question: Question) -> dict:
    """What came of `question`, as it is recorded: `{"answer": ...}`, or `{"unanswered": REASON}`."""
    said = await interlocutor(question) if interlocutor is not None else Unanswered(NO_INTERLOCUTOR)
    return {"unanswered": said.reason} if isinstance(said, Unanswered) else {"answer": said}


def _verdict(came: dict) -> object:
    return Unanswered(came["unanswered"]) if "unanswered" in came else came["answer"]
