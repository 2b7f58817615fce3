"""`planc run --approve`: the gate (hooks.py) on a terminal.

Before every effectful call (a tool whose `effects.read_only` is false), and
every call the policy refuses only for where its values came from (flagged),
it shows the step path, the tool, its effects, the rendered input and each
argument's labels on stderr, and asks y/n; a yes to a flagged call is a
person letting it through, and the record keeps it. Yes calls the tool; no (or end of input) aborts the run before
the call. Read-only calls pass without a question. The question blocks the
event loop on purpose: one question at a time, even from the items of a `map`
running concurrently. Ctrl-C (or SIGTERM) at the question interrupts the run
(`interrupts.py`) rather than answering it: the call is not made, and a resume
asks again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, ContextManager, TextIO, cast

from planc.backend.calls.approvals import needs_approval
from planc.backend.calls.hooks import Abort, Call, Proceed
from planc.backend.state.interrupts import TerminalLine

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.panel import Panel


def call_flags(call: Call) -> list[str]:
    """What a person deciding on `call` should know of its tool's effects, in words."""
    effects = call.tool.effects.normalised()
    # A tool that takes its calls' idempotency keys may be called again safely, idempotent or not.
    return [
        flag
        for flag, on in (
            ("destructive", effects.destructive),
            ("open-world", effects.open_world),
            ("not idempotent", not effects.idempotent and not call.tool.takes_key),
            ("deduplicates by its idempotency key", call.tool.takes_key),
        )
        if on
    ]


def describe(call: Call) -> Panel:
    """The call as a rich renderable: step path, tool, effects and input."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    effects = call.tool.effects.normalised()
    flags = call_flags(call)
    title = Text.assemble(("step ", "dim"), (call.step, "bold"), ("  ", ""), (call.tool.name, "bold cyan"))
    # As planc writes it anywhere: a `secret` argument as its mark (docs/policy.md).
    rendered = json.dumps(call.shown_input(), indent=2, ensure_ascii=False, default=str)
    kind = "read-only" if effects.read_only else "effectful" + (f": {', '.join(flags)}" if flags else "")
    parts: list[RenderableType] = [
        Text(kind, style="yellow"),
        Syntax(rendered, "json", word_wrap=True, background_color="default"),
    ]
    labelled = {name: labels for name, labels in call.sources.items() if labels}
    if labelled or call.control:  # where the values came from
        lines = [f"{name}: {', '.join(sorted(labels))}" for name, labels in labelled.items()]
        lines += [f"(whether it runs): {', '.join(sorted(call.control))}"] if call.control else []
        parts.append(Text("labels  " + "; ".join(lines), style="magenta"))
    if call.flagged is not None:
        parts.append(Text(f"flagged: {call.flagged}", style="bold red"))
    return Panel(Group(*parts), title=title, title_align="left", border_style="red" if call.flagged else "yellow")


def approval_gate(
    console: Console, ask: Callable[[str], bool] | None = None, pause: Callable[[], ContextManager] | None = None
) -> Callable[[Call], Awaitable[Proceed | Abort]]:
    """The `--approve` gate: `console` shows the call (stderr), `ask` answers y/n (default: the terminal).

    `pause` stops a live progress display while the question is on the screen.
    """

    def terminal(question: str) -> bool:
        from rich.prompt import Confirm

        # rich reads the stream's lines only (readline), which is all TerminalLine has of a TextIO
        return Confirm.ask(question, console=console, default=False, stream=cast(TextIO, TerminalLine()))

    answer = ask or terminal

    async def gate(call: Call) -> Proceed | Abort:
        if not needs_approval(call, every_effectful=True):
            return Proceed()
        with (pause or _nothing)():
            console.print(describe(call), soft_wrap=False)  # wrapped inside the panel: nothing in it is cut
            try:
                yes = answer(f"Call [bold]{call.tool.name}[/bold]?")
            except EOFError:
                yes = False
            except KeyboardInterrupt:  # the run is interrupted: the task stops here, the call unmade
                raise asyncio.CancelledError from None
        return Proceed() if yes else Abort(f"`{call.tool.name}` was not approved")

    return gate


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield
