"""A batch (`planc batch`): one plan, run once per line of a file of arguments, some runs at a time.

Every line is checked before any runs (`check_line`). A line must be a JSON object of the plan's
arguments that the plan accepts (`run_arguments`: a declared plan's `params`, every `$args.NAME`
given), and the plan must check with them, each argument typed by its value: a list given where a
tool takes a string is refused here, never found in the middle of a run. A refused line never runs.

`Batch` runs the lines, `parallel` at a time, in one event loop (so the store is written from one
thread), each a run recorded as `planc run` records one, with the batch's id and its line; they
share one executor. A run that fails does not stop the others. SIGINT or SIGTERM stops them all,
each recorded as interrupted. `planc batch --resume` then finishes only what did not finish: a
line whose run was cut short is resumed in its own record, as `planc resume` resumes a run (a call
whose outcome is unknown is made again only if that is safe); a line that never started starts;
a finished line is left as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import attrs

from planc.backend.calls.results import NotPlain, plain
from planc.backend.run.interpreter import run_arguments
from planc.backend.run.launch import Launch
from planc.backend.state.interrupts import Interrupted, Interrupts
from planc.backend.state.stop import settle
from planc.backend.state.values import RunError
from planc.passes.check import CheckResult
from planc.passes.cost.budget import Budget
from planc.registry.tools.schemas import type_of
from planc.store.run_store import RunStoreError
from planc.store.stored import StoredPlanError, dump, load_plan
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from planc.passes.policy.load import Policy
    from planc.registry.loading.registry import Registry
    from planc.store.run_store import RunStore

# What became of a line, in the order a summary lists them; a run's status as the store has it -> this.
OUTCOMES = ("ok", "failed", "exited", "refused", "interrupted")
RUN_OUTCOMES = {"ok": "ok", "error": "exited", "failed": "failed", "interrupted": "interrupted"}


@attrs.frozen
class Line:
    """One line of a batch's arguments: its number in the file (from 1), its arguments (None when it holds
    no JSON object), and either the plan checked with them or why the check refused it."""

    number: int
    arguments: Mapping | None
    checked: CheckResult | None = None
    refused: str | None = None


def read_lines(text: str) -> list[tuple[int, Mapping | None, str | None]]:
    """Each line of a JSON-lines file but the blank ones: its number, its arguments, and what is wrong with it.

    >>> read_lines('{"team": "ENG"}\\n\\n[1]\\n{"x": NaN}\\n')[1:]
    [(3, None, 'not a JSON object of arguments'), (4, None, 'not JSON data: at $.x: nan, which JSON cannot hold')]
    """
    lines: list[tuple[int, Mapping | None, str | None]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = plain(read_json(line))
        except ValueError as error:
            lines.append((number, None, f"not JSON: {error}"))
            continue
        except NotPlain as error:
            lines.append((number, None, f"not JSON data: {error}"))
            continue
        if not isinstance(value, dict):
            lines.append((number, None, "not a JSON object of arguments"))
            continue
        lines.append((number, value, None))
    return lines


def check_line(
    plan: CheckResult,
    stored: Mapping,
    number: int,
    arguments: Mapping | None,
    *,
    registry: Registry | None,
    policy: Policy | None,
    principal: str,
    budget: list,
) -> Line:
    """Line `number`, whose `arguments` are to run `plan` (checked, and `stored` as the store keeps it):
    the plan as it checks with them (and `budget`: `[max_usd, max_calls, max_inferences]`), or why it is
    refused."""
    if arguments is None:
        return Line(number, None, refused="not a JSON object of arguments")
    try:
        arguments = run_arguments(plan, arguments)  # with a declared plan's defaults
    except RunError as error:
        return Line(number, arguments, refused=str(error))
    types = {name: type_of(value) for name, value in arguments.items()}
    try:
        checked = load_plan(
            dump(stored), registry=registry, policy=policy, principal=principal, arguments=types, **Budget(*budget).keywords()
        )
    except StoredPlanError as error:
        return Line(
            number, arguments, refused=str(error).removeprefix("stored plan has errors against the current registry and policy: ")
        )
    return Line(number, arguments, checked=checked)


@attrs.define
class Batch:
    """The runs of one batch (`batch_id` in `store`), `parallel` at a time, each a `Launch` wired to the store
    and the executor the batch shares.

    `finished(line, run_id, outcome)` is told of each run as it ends (an outcome of OUTCOMES)."""

    store: RunStore
    batch_id: str
    parallel: int
    finished: Callable[[int, str, str], None] = lambda line, run_id, outcome: None
    in_flight: dict = attrs.field(factory=dict)  # line -> its Launch, while it runs
    failure: RunStoreError | None = None  # a store that failed: no run starts after it

    def execute(self, starts: list[tuple[int, Launch]]) -> None:
        """Run every `(line, launch)`: the launch records the line's run (or takes one up again) and runs it.
        Interrupted when a signal stopped them, each run in flight recorded as interrupted; RunStoreError
        when the store failed, once the runs in flight have ended."""
        with Interrupts() as signals:
            try:
                signals.run(self.run(starts))
            except Interrupted as error:
                for launch in self.in_flight.values():
                    if launch.recorded is not None:
                        launch.recorded.interrupted(error)
                raise Interrupted(
                    f"{error}: batch {self.batch_id} stopped, and `planc batch --resume {self.batch_id}` finishes it"
                ) from None
        if self.failure is not None:
            raise self.failure

    async def run(self, starts: list[tuple[int, Launch]]) -> None:
        limit = asyncio.Semaphore(self.parallel)

        async def one(line: int, launch: Launch) -> None:
            async with limit:
                if self.failure is not None:
                    return
                self.in_flight[line] = launch
                try:
                    result = await launch.run()
                    outcome = RUN_OUTCOMES[result.status]
                except RunStoreError as error:
                    self.failure, outcome = error, "failed"
                except RunError:
                    outcome = "failed"
                del self.in_flight[line]
                if launch.recorded is not None:
                    self.finished(line, launch.recorded.run_id, outcome)

        await settle([asyncio.ensure_future(one(line, launch)) for line, launch in starts])
