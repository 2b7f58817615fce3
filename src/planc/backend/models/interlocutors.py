"""Who answers `ask` for `planc run` and `planc resume`: an answers file, or the person at the terminal.

`--answers FILE` is a JSON object whose keys are step paths (`2`, `3/do.1[4]`) or question texts, and
whose values are the answers (any JSON); a question is looked up by its step path first, then by its
text. A question the file does not answer is put to the person when standard input is a terminal:
the question on stderr, the answer typed on one line (an empty line, or the end of input, answers
nothing). Ctrl-C (or SIGTERM) at the question interrupts the run rather than answering it, as at the
`--approve` question. Where nobody answers, the step's `when_unanswered` decides, and its error says
how to answer next time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager, TextIO, cast

from planc.backend.calls.hooks import Question, Unanswered
from planc.backend.state.interrupts import TerminalLine
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from rich.console import Console

HOW_TO_ANSWER = "give the answers with `--answers FILE` (a JSON object from a step path or question to its answer)"


def read_answers(path: str) -> dict:
    """The answers `--answers` names, as a JSON object; a ValueError saying what is wrong with the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"--answers {path}: cannot read it: {getattr(error, 'strerror', None) or error}") from None
    try:
        answers = read_json(text)
    except ValueError as error:
        raise ValueError(f"--answers {path}: not JSON: {error}") from None
    if not isinstance(answers, dict):
        raise ValueError(
            f"--answers {path}: must be a JSON object from a step path or question to its answer, not {type(answers).__name__}"
        )
    return answers


def interlocutor(
    console: Console,
    *,
    answers: Mapping | None = None,
    source: str | None = None,
    terminal: bool = False,
    pause: Callable[[], ContextManager] | None = None,
) -> Callable[[Question], Awaitable[object]]:
    """The interlocutor of a run: `answers` (read from the file `source`) first, then, on a `terminal`, the
    person, asked on `console` (stderr) with `pause` stopping a live progress display meanwhile."""

    async def answer(question: Question) -> object:
        if answers is not None:
            for key in (question.step, question.text):
                if key in answers:
                    return answers[key]
        if terminal:
            with (pause or contextlib.nullcontext)():
                return _ask_on_the_terminal(console, question)
        if answers is not None:
            return Unanswered(
                f"--answers {source} answers neither step {question.step} nor this question, and there is no terminal to ask on"
            )
        return Unanswered(f"there is no terminal to ask on: {HOW_TO_ANSWER}")

    return answer


def _ask_on_the_terminal(console: Console, question: Question) -> str | Unanswered:
    """The person's answer; it blocks the run's loop, so nothing else happens meanwhile (as `--approve`)."""
    from rich.markup import escape

    try:
        typed = console.input(
            f"[dim]step {escape(question.step)}[/dim] [bold]{escape(question.text)}[/bold] ", stream=cast(TextIO, TerminalLine())
        )  # rich reads its lines only
    except EOFError:
        return Unanswered(f"the terminal's input ended before an answer; {HOW_TO_ANSWER}")
    except KeyboardInterrupt:  # the run is interrupted: the task stops here, the question unanswered
        raise asyncio.CancelledError from None
    return typed if typed.strip() else Unanswered("the answer on the terminal was empty")
