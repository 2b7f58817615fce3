"""What `planc run`, `replay`, `resume`, `approve`, `plan --run` and `batch` share: the run store, the executor,
the events file, the traces, the answers to `ask`, the solver, a run on the terminal (`run_on_terminal`),
and the end of a run."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import attrs
import click

from planc.cli.usage import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.console import Console

    from planc.backend.calls.hooks import Question
    from planc.backend.calls.run_view import Recorder
    from planc.backend.models.client import ModelClient
    from planc.backend.report.traces import RunSpans
    from planc.backend.run.interpreter import RunResult
    from planc.backend.run.launch import ArgumentsRefused, Launch
    from planc.registry.loading.registry import Registry
    from planc.registry.settings.declarations import Executor
    from planc.store.run_store import RunStore


def open_store(store: str | None, registry: Registry | None = None, read_only: bool = False) -> RunStore:
    """The run store (`--store`, else where the project keeps it: `project.store_path`), or a UsageError;
    `read_only` for a command that only reads it (there is none then: a UsageError too)."""
    from planc.cli.project import store_path
    from planc.store.run_store import RunStore, RunStoreError

    try:
        return RunStore(store_path(store, registry), read_only=read_only)
    except RunStoreError as error:
        raise UsageError(str(error)) from None


def executor_declared(
    kind: str | None, address: str | None, registry: Registry | None, recorded: Mapping | None = None
) -> Executor:
    """The executor a run uses, as declared (`--executor`, `--ray-address`, a resumed run's record, planc.toml);
    a UsageError for an address the local executor cannot take."""
    from planc.backend.run.recorded_run import choose_executor

    try:
        return choose_executor(registry, kind, address, recorded)
    except ValueError as error:
        raise UsageError(f"--ray-address: {error}") from None


@contextmanager
def executor_connected(how: Executor, registry: Registry | None, store: Path | None) -> Iterator[Any]:
    """The executor `how` declares, connected (None: this process) and closed after; a UsageError when it
    cannot be connected, before anything runs."""
    from planc.backend.run.recorded_run import connect_executor

    connected = None
    if how.kind != "local":
        from planc.backend.calls.ray_executor import RayUnavailable

        try:
            connected = connect_executor(how, registry, store)
        except RayUnavailable as error:
            raise UsageError(str(error)) from None
    try:
        yield connected
    finally:
        if connected is not None:
            connected.close()


@contextmanager
def executor_for(
    kind: str | None, address: str | None, registry: Registry | None, store: Path | None, recorded: Mapping | None = None
) -> Iterator[tuple[Executor, Any]]:
    """The executor runs use, as declared and connected, as `(declaration, connected)`, closed after."""
    how = executor_declared(kind, address, registry, recorded)
    with executor_connected(how, registry, store) as connected:
        yield how, connected


@contextmanager
def tool_output_to_stderr() -> Iterator[None]:
    """While the plan runs, what its tools print goes to stderr: stdout holds the result alone.

    Both the Python-level `sys.stdout` (a tool's `print()`, in any thread) and file descriptor 1 (a
    tool's subprocess, a C library) point at stderr until the run ends."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 to move aside (a closed stdout): Python's stdout alone
        saved = None
    else:
        os.dup2(2, 1)
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stdout = stdout
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def events_file(path: str, keep: dict[str, Path | str | None]) -> TextIO:
    """`--events FILE` opened for writing, or a UsageError naming it (a missing folder, no permission).

    `keep` names the files the run reads or writes (what each is -> its path: the run store, the plan,
    planc.toml): FILE is refused when it is one of them, or the store's journal files, before anything
    is opened for writing, as opening it truncates it."""
    for what, kept in keep.items():
        if kept is None:
            continue
        journals = (Path(f"{kept}{suffix}") for suffix in ("-wal", "-shm", "-journal")) if what == "the run store" else ()
        for candidate, said in ((Path(kept), what), *((journal, f"a journal file of {what}") for journal in journals)):
            if same_file(Path(path), candidate):
                raise UsageError(f"--events {path}: that is {said}, which writing the events would destroy; give another file")
    try:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed when the run ends
    except OSError as error:
        raise UsageError(f"--events {path}: cannot write the events there: {error.strerror}") from None


def kept_files(store: str | None, registry: Registry | None, plan: str | None, policy_file: str | None) -> dict:
    """The files a run reads or writes, which its `--events` file must not be (`events_file`)."""
    from planc.cli.project import store_path

    return {
        "the run store": store_path(store, registry),
        "the plan": plan,
        "planc.toml": registry.source if registry is not None else None,
        "the policy": policy_file or (registry.policy if registry is not None else None),
    }


def same_file(one: Path, other: Path) -> bool:
    """Whether `one` and `other` name one file: the same file on disk (through links), or, for a file not
    yet made, the same path."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return one.resolve() == other.resolve()


def events_writer(sink: TextIO | None, path: str | None) -> Callable[[dict], None] | None:
    """Each event as a JSON line in `sink` (None: no writer); a failure to write it (a full disk) fails the run,
    naming the file."""
    if sink is None:
        return None
    import json

    from planc.backend.state.values import RunError

    def write(event: dict) -> None:
        try:
            sink.write(json.dumps(event, default=str) + "\n")
        except OSError as error:
            raise RunError(f"--events {path}: cannot write the events there: {error.strerror}") from None

    return write


# Either turns traces on without --otel, as for any OpenTelemetry program.
OTLP_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
INSTALL_OTEL = "pip install 'planc[otel]'"


def run_traces(otel: bool, name: str, plan: str | None = None) -> AbstractContextManager[RunSpans | None]:
    """A context manager around a run that gives the events sink of its spans (`planc.backend.report.traces`), or
    None when the run is not traced: traced with `--otel`, or when an OTLP endpoint variable is set.

    Without OpenTelemetry installed, `--otel` is a UsageError before anything is recorded, and a variable
    set is a warning (the run goes on untraced).
    """
    variable = next((each for each in OTLP_VARIABLES if os.environ.get(each)), None)
    if not otel and variable is None:
        return contextlib.nullcontext()
    try:
        from planc.backend.report.traces import traced
    except ImportError:
        if otel:
            raise UsageError(
                f"--otel sends the run as OpenTelemetry spans, and OpenTelemetry is not installed: {INSTALL_OTEL}"
            ) from None
        click.echo(
            f"warning: {variable} is set, and this run is not traced: OpenTelemetry is not installed ({INSTALL_OTEL})", err=True
        )
        return contextlib.nullcontext()
    return traced(name, plan, warn=lambda text: click.echo(f"warning: {text}", err=True))


def ask_hook(
    answers_file: str | None,
    console: Console,
    pause: Callable[[], AbstractContextManager] | None = None,
) -> Callable[[Question], Awaitable[object]]:
    """The interlocutor of `planc run` and `resume`: `--answers FILE` (read now: a UsageError for a file that
    cannot be used, before anything runs), then the person when standard input is a terminal."""
    from planc.backend.models.interlocutors import interlocutor, read_answers

    answers = None
    if answers_file is not None:
        try:
            answers = read_answers(answers_file)
        except ValueError as error:
            raise UsageError(str(error)) from None
    return interlocutor(console, answers=answers, source=answers_file, terminal=sys.stdin.isatty(), pause=pause)


def run_failed(error: Exception) -> NoReturn:
    """A run that failed (exit 1), was interrupted by a signal (exit 130), or waits for a person's approval
    (exit 3: the calls that wait, and how to answer them): what it says, on stderr."""
    from planc.backend.calls.approvals import AwaitingApproval
    from planc.backend.state.interrupts import Interrupted

    if isinstance(error, AwaitingApproval):
        click.echo(str(error), err=True)
        sys.exit(3)
    click.echo(f"error: {error}", err=True)
    sys.exit(130 if isinstance(error, Interrupted) else 1)


def solver_client(registry: Registry | None) -> ModelClient:
    """The `solver` role's model client for `--finish solver`, or a usage error saying what is missing."""
    from planc.backend.models.client import ModelClient, ModelError

    if registry is None:
        raise UsageError(
            "--finish solver needs a model: no planc.toml here or above declares [models.solver] or [models.default]"
        )
    try:
        return ModelClient.for_role(registry, "solver")
    except ModelError as error:
        raise UsageError(f"--finish solver: {error}") from None


def print_result(
    result: RunResult, finish: str, query: str | None, solver: Callable[[], ModelClient] | None, recorder: Recorder | None
) -> None:
    """Print what `--finish` asks for and exit with the result's status.

    `solver()` gives the `solver` model's client, asked through `recorder` as step `finish`, so a
    replay prints the recorded report without asking the model.
    """
    if finish == "solver":
        import asyncio

        from planc.backend.models.client import ModelError
        from planc.backend.models.finish import solver_report
        from planc.backend.models.model_calls import StepModel

        assert query is not None and solver is not None  # --finish solver: its --query, and its model
        model = StepModel(solver, "solver", "finish", recorder)  # the client made once an inference needs it

        async def report() -> str:
            try:
                return await solver_report(model, query, result.value, result.status, result.message)
            finally:
                await model.aclose()

        try:
            click.echo(asyncio.run(report()))
        except ModelError as error:
            click.echo(f"error: the solver's report failed: {error}", err=True)
            sys.exit(1)
    elif finish == "output":
        _print_json(result.value)
    _exit_status(result)


def _print_json(value: object) -> None:
    """The plan's result as JSON on stdout."""
    import json

    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _exit_status(result: RunResult) -> None:
    if result.status == "error":
        click.echo(f"exit: {result.message or 'the plan stopped with status error'}", err=True)
        sys.exit(4)


def refused_arguments(error: ArgumentsRefused, plan: str, then: str | None = None) -> NoReturn:
    """Arguments that do not fit the plan (`ArgumentsRefused`): its diagnostics, or what is wrong, and `then`
    (an error line after them); exit 1, and nothing ran or was recorded."""
    if error.checked is not None:
        from planc.cli.printing import print_checked

        print_checked([(plan, error.checked)], stderr=True)
    else:
        click.echo(f"error: {error}", err=True)
    if then is not None:
        click.echo(f"error: {then}", err=True)
    sys.exit(1)


def run_on_terminal(
    launch: Launch,
    *,
    registry: Registry | None,
    store: str | None,
    events: str | None,
    otel: bool,
    answers_file: str | None,
    name: str,
    plan: str | None = None,
    policy_file: str | None = None,
    asks: bool = False,
    said: str | None = "",
    solver: ModelClient | None = None,
    writes: bool = True,
    opened: RunStore | None = None,
) -> None:
    """`launch` run for a person at a terminal, as every command that runs a plan runs one: `--answers`,
    `--otel` and `--events` made ready, the store opened and the executor connected (each a UsageError,
    exit 2, before anything is recorded); its progress on stderr, made from its events as `--events` and
    the traces get them; `run: ID` once it is recorded (`said`: how, as "resumed"); `asks`: the gate asks
    on the terminal; `writes`: false for a replay, which opens no store; `opened`: the store, already open
    (its caller closes it). Then its result printed as its spec's `--finish` says, and the exit code."""
    from planc.backend.calls.approve import approval_gate
    from planc.backend.calls.hooks import Hooks
    from planc.backend.report.events import fan_out
    from planc.backend.report.progress import Progress
    from planc.backend.state.interrupts import Interrupts
    from planc.backend.state.values import RunError
    from planc.cli.printing import console
    from planc.store.run_store import NotWaiting, RunStoreError

    err = console(stderr=True)
    checked = launch.checked
    most = checked.cost.total.calls if checked.cost is not None else None
    progress = Progress(err, int(most.high) if most is not None and most.bounded else None)
    answer = ask_hook(answers_file, err, progress.paused)  # a file that cannot be used: exit 2, nothing run
    traces = run_traces(otel, name, plan)  # before the run is recorded, so that --otel without OpenTelemetry,
    sink = events_file(events, kept_files(store, registry, plan, policy_file)) if events else None  # or an
    runs = (opened or open_store(store, registry)) if writes else None  # --events FILE it cannot write (or
    # must not), runs nothing.

    def recorded(run_id: str) -> None:
        click.echo(f"run: {run_id}" + (f" ({said})" if said else ""), err=True)

    with traces as spans:  # sent once the result is out
        # Connected before the run is recorded: a cluster that cannot be reached records nothing. A signal from
        # the moment the run is recorded ends it as interrupted.
        with (
            executor_connected(launch.spec.executor, registry, runs.path if runs else None) as connected,
            Interrupts() as interrupts,
        ):
            hooks = Hooks(
                gate=approval_gate(err, pause=progress.paused) if asks else None,
                events=fan_out(events_writer(sink, events), progress.sink, spans),
                interlocutor=answer,
            )
            launch.wiring = attrs.evolve(
                launch.wiring,
                store=runs,
                hooks=hooks,
                executor=connected,
                recorded=recorded if said is not None and runs else None,
                store_named=_store_named(runs),
            )
            try:
                with progress, tool_output_to_stderr():
                    result = launch.run_to_end(interrupts)
            except NotWaiting as error:  # answered already, by this process or another: nothing ran
                click.echo(f"error: {error}", err=True)
                sys.exit(1)
            except RunStoreError as error:  # nothing ran when it is not recorded: a store that cannot be written
                if runs is not None and opened is None:
                    runs.close()
                if launch.recorded is None:
                    raise UsageError(str(error)) from None
                run_failed(error)
            except RunError as error:
                if runs is not None and opened is None:
                    runs.close()
                run_failed(error)
            finally:
                if sink:
                    sink.close()
        try:
            print_result(
                result,
                launch.spec.finish,
                launch.spec.query,
                lambda: solver or solver_client(registry),
                launch.recorded.recorder if launch.recorded is not None else None,
            )
        finally:
            if runs is not None and opened is None:
                runs.close()


def _store_named(runs: RunStore | None) -> str | None:
    """How `planc approve` must be told of `runs`: None when, run here, it finds that store by itself."""
    if runs is None:
        return None
    from planc.cli.project import store_path

    try:
        found = store_path(os.environ.get("PLANC_STORE"))
    except UsageError:
        return str(runs.path)
    return None if same_file(found, runs.path) else str(runs.path)
