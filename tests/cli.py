"""The `planc` command as the tests call it: in this process, or as a real process of its own.

- `invoke(*args, input=None, env=None)`: `planc ARGS` in this process through click's CliRunner, the way
  most tests call it (`result.exit_code`, `result.stdout`, `result.stderr`, `result.output`). The runner
  catches whatever the command raises, so its output never holds a traceback: `invoke` fails the test
  on any exception but SystemExit (how click ends a command), which a user would have seen as one.
- `planc_process(*args, **popen)`: the installed console script started as a real process, for
  what needs one: a signal, a terminal, real standard streams, an environment of its own.
- `planc_completed(*args, input=None, **options)`: the same, run to its end, output as text.
- `planc_forks()`: real processes by the dozen (a test that kills planc again and again): each
  `planc ARGS` a process of its own, forked from one that has imported planc already, so that it
  pays for its work and not for Python's and planc's start-up. `planc_forks(listen=SOCKET)` gives
  command lines too (`forks.command(*args)`, tests/forked_planc.py), for a process another program
  starts: the MCP SDK's client starting `planc mcp`.

What `planc` printed for each run it recorded (a `run: ID` line on stderr), by `invoke` or
`planc_completed`, is kept in `PRINTED` (the last command that ran it: a resume's, after a run's), and
appended to the file PLANC_TEST_PRINTED names (conftest.py gives each test process one), so that
tests/test_replay_every_run.py compares each replay with what its run really printed, in whichever
process of the session (`pytest -n`) it ran.

A real process is waited for at most `HANG_GUARD_S` seconds: a guard against a hung test, never
a claim about speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner, Result

from planc.cli import main

HANG_GUARD_S = 300
RUN_LINE = re.compile(r"^run: (\S+)", re.MULTILINE)
PRINTED: dict[str, tuple[int, str, str]] = {}  # run id -> (exit code, stdout, stderr) of the last command that ran it


def journal_run(exit_code: int, stdout: str, stderr: str) -> None:
    """Keep what a command that recorded a run printed, by the run's id."""
    found = RUN_LINE.search(stderr)
    if found:
        PRINTED[found[1]] = (exit_code, stdout, stderr)
        journal = os.environ.get("PLANC_TEST_PRINTED")
        if journal:
            with open(journal, "a", encoding="utf-8") as lines:
                lines.write(json.dumps([found[1], exit_code, stdout, stderr]) + "\n")


def printed_in(root: Path) -> dict[str, tuple[int, str, str]]:
    """What the runs recorded by the test processes whose temporary folders are under `root` printed."""
    printed = {}
    for journal in sorted(root.rglob("printed.jsonl")):
        for line in journal.read_text(encoding="utf-8").splitlines():
            run_id, exit_code, stdout, stderr = json.loads(line)
            printed[run_id] = (exit_code, stdout, stderr)
    return printed


def invoke(*args, input: str | None = None, env: dict[str, str | None] | None = None) -> Result:
    """`planc ARGS` in this process; `env` is set in os.environ while it runs (None unsets). A test fails
    here when the command raised anything but SystemExit: a traceback, had it run as `planc`."""
    result = CliRunner().invoke(main, [str(arg) for arg in args], input=input, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        shown = "".join(traceback.format_exception(*result.exc_info))
        raise AssertionError(
            f"`planc {' '.join(map(str, args))}` raised (a traceback for its user):\n{shown}output:\n{result.output}"
        )
    journal_run(result.exit_code, result.stdout, result.stderr)
    return result


def planc_executable() -> str:
    """The installed `planc` console script: beside this Python, or on PATH."""
    beside = Path(sys.executable).with_name("planc")
    found = str(beside) if beside.exists() else shutil.which("planc")
    assert found, "the `planc` console script is not installed"
    return found


def planc_process(*args, **popen) -> subprocess.Popen:
    """`planc ARGS` started as a real process; `popen` (cwd, env, stdin, stdout, ...) goes to subprocess.Popen."""
    return subprocess.Popen([planc_executable(), *(str(arg) for arg in args)], **popen)


def planc_completed(*args, input: str | None = None, **options) -> subprocess.CompletedProcess:
    """`planc ARGS` as a real process run to its end, stdout and stderr captured as text; `options`
    (cwd, env, ...) go to subprocess.run."""
    done = subprocess.run(
        [planc_executable(), *(str(arg) for arg in args)],
        input=input,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        **options,
    )
    journal_run(done.returncode, done.stdout, done.stderr)
    return done


class Forked:
    """`planc ARGS` in a process forked by the fork server: the parts of subprocess.Popen a test needs."""

    def __init__(self, server: _ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit status (negative: killed by that signal) once the process has ended, else None."""
        if self.returncode is None:
            self.returncode = self.server.ask(op="poll", pid=self.pid)["returncode"]
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = self.server.ask(op="wait", pid=self.pid)["returncode"]
        return self.returncode

    def kill(self) -> None:
        """SIGKILL, unless it has ended: until the server reaps it (poll or wait), its pid is its own."""
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


PLANC = "planc"  # what a fork server imports, unless told otherwise: planc's commands (`_warm`)
UNWARMED = ("planc.lsp", "planc.mcp_server", "planc.adapters")  # the language server's and MCP's SDKs: seconds


class _ForkServer:
    def __init__(self, listen: Path | None = None, warm: tuple[str, ...] = (PLANC,)) -> None:
        self.listen = listen
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--fork-server", str(listen or ""), *warm],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = self.process.stdout.readline()
        assert ready == "ready\n", f"the fork server did not start: {ready!r}"

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        assert reply, f"the fork server ended ({self.process.poll()}) at {request}"
        return json.loads(reply)

    def start(
        self, *args, cwd: Path | str, env: dict[str, str], stdout: Path | str | None = None, stderr: Path | str | None = None
    ) -> Forked:
        """`planc ARGS` in `cwd` with exactly `env`; stdin empty, stdout and stderr to files (or nowhere)."""
        reply = self.ask(
            op="start",
            args=[str(arg) for arg in args],
            cwd=str(cwd),
            env=env,
            stdout=str(stdout) if stdout else os.devnull,
            stderr=str(stderr) if stderr else os.devnull,
        )
        return Forked(self, reply["pid"])

    def command(self, *args, entry: str | None = None, script: Path | None = None) -> list[str]:
        """The command line of `planc ARGS` forked by this server (started with `listen`), for whatever starts
        it: tests/forked_planc.py hands the server its standard streams, folder and environment. With `entry`
        (`MODULE:FUNCTION`, a console script's entry point, its module among those the server was to `warm`),
        that command with ARGS instead of `planc`; with `script`, `python SCRIPT ARGS`."""
        assert self.listen is not None, "a fork server started without `listen` runs no command line"
        chosen = ["--entry", entry] if entry else ["--script", str(script)] if script else []
        return [
            sys.executable,
            "-S",
            str(Path(__file__).with_name("forked_planc.py")),
            str(self.listen),
            *chosen,
            *(str(arg) for arg in args),
        ]

    def close(self) -> None:
        self.process.stdin.close()  # the server kills and reaps what is left, then ends
        self.process.wait(timeout=HANG_GUARD_S)
        self.process.stdout.close()


@contextmanager
def planc_forks(listen: Path | None = None, warm: tuple[str, ...] = (PLANC,)):
    """A fork server: `forks.start(*args, cwd=, env=, stdout=, stderr=)` gives a `Forked` process; with
    `listen` (a Unix socket's path, to be made), `forks.command(*args)` is a command line for `planc ARGS`
    that any process may start (tests/forked_planc.py), run on that command's own standard streams, and
    `forks.command(*args, entry="MODULE:FUNCTION")` one for another Python command (an MCP server).
    The server imports the modules `warm` names at its start: by default `PLANC`, the modules of the
    `planc` commands but `planc lsp` and `planc mcp` (whose SDKs take seconds to import: name them, as
    for an MCP server's entry point, where they are wanted).

    The server is one Python process, started once, that imports planc and nothing else runs in it
    (no thread, no open database); each start forks it, and the child sets up `cwd`, `env` and its
    standard streams and calls the `planc` command with ARGS, as the console script would."""
    server = _ForkServer(listen, warm)
    try:
        yield server
    finally:
        server.close()


def _serve_forks(listen: str | None = None, *warm: str) -> None:
    """The fork server's loop: one JSON request a line on stdin, one JSON reply a line on stdout; and, with
    `listen`, a command line's request on each connection to that Unix socket (`_serve_command`)."""
    import selectors
    import socket

    _warm(warm)
    children: set[int] = set()
    waiting = selectors.DefaultSelector()  # stdin, the socket, and each command line's process (its pidfd)
    waiting.register(sys.stdin, selectors.EVENT_READ, "request")
    listener = None
    if listen is not None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(listen)
        listener.listen()
        waiting.register(listener, selectors.EVENT_READ, "command")
    print("ready", flush=True)
    while True:
        for key, _ in waiting.select():
            if key.data == "command":
                pid, connection = _serve_command(listener, waiting)
                children.add(pid)
                waiting.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, connection))
            elif key.data != "request":  # a command line's process ended: tell its command line how
                (pid, connection), pidfd = key.data, key.fileobj
                waiting.unregister(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                children.discard(pid)
                with contextlib.suppress(OSError):  # the command line may have gone already
                    connection.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
                connection.close()
            else:
                line = sys.stdin.readline()
                if not line:  # the test has gone: nothing it started outlives it
                    for pid in children:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    return
                request = json.loads(line)
                if request["op"] == "start":
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        _run_child(request)  # never returns
                    children.add(pid)
                    reply = {"pid": pid}
                else:
                    pid = request["pid"]
                    done, status = os.waitpid(pid, os.WNOHANG if request["op"] == "poll" else 0)
                    returncode = os.waitstatus_to_exitcode(status) if done else None
                    if done:
                        children.discard(pid)
                    reply = {"returncode": returncode}
                print(json.dumps(reply), flush=True)


def _serve_command(listener, waiting) -> tuple[int, object]:
    """Take one command line's request (tests/forked_planc.py: its arguments, folder and environment, and its
    standard streams as file descriptors), fork `planc ARGS` on those streams, and tell it the pid."""
    import socket

    connection, _ = listener.accept()
    message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while not message.endswith(b"\n"):
        more = connection.recv(1 << 16)
        assert more, "a command line went away before its request ended"
        message += more
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # nothing of the server's stays open here: its socket, the other command lines, their pidfds
        for key in list(waiting.get_map().values()):
            if key.fileobj is not sys.stdin:
                os.close(key.fd)
        waiting.close()
        connection.close()
        _run_child(request, fds)  # never returns
    for fd in fds:
        os.close(fd)
    connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid, connection


def _warm(modules: tuple[str, ...]) -> None:
    """Import `modules`; `PLANC` among them stands for every module of planc a command runs (but those of
    `planc lsp` and `planc mcp`, and the adapters, which name their own), and the libraries they import
    lazily."""
    import importlib
    import pkgutil

    import planc

    for name in modules:
        if name != PLANC:
            importlib.import_module(name)
            continue
        for module in pkgutil.walk_packages(planc.__path__, "planc."):
            if module.name.startswith(UNWARMED):
                continue
            try:
                importlib.import_module(module.name)
            except ImportError:  # an optional dependency: the command imports it, or says so
                pass
        import concurrent.futures.thread  # noqa: F401

        import jsonschema.validators  # noqa: F401
        import rich.console  # noqa: F401


def _run_child(request: dict, fds: list[int] | None = None) -> None:
    """`planc ARGS` (or the request's `entry` or `script` with ARGS) in this forked process, on `fds` (stdin, stdout,
    stderr) or else on the files the request names; then the process ends, with the command's exit status."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if fds is None:
            writing = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            fds = [
                os.open(path, flags, 0o644)
                for path, flags in ((os.devnull, os.O_RDONLY), (request["stdout"], writing), (request["stderr"], writing))
            ]
        for fd, given in enumerate(fds):
            os.dup2(given, fd)
        for given in set(fds) - {0, 1, 2}:
            os.close(given)
        try:
            if request.get("entry"):  # as its console script would: sys.exit(FUNCTION()), with ARGS in sys.argv
                import importlib

                module, function = request["entry"].split(":")
                sys.argv = [module, *request["args"]]
                code = getattr(importlib.import_module(module), function)() or 0
            elif request.get("script"):  # as `python SCRIPT ARGS` would
                import runpy

                sys.argv = [request["script"], *request["args"]]
                runpy.run_path(request["script"], run_name="__main__")
                code = 0
            else:
                main(args=request["args"], prog_name="planc")
                code = 0
        except SystemExit as exit:
            if exit.code is None or isinstance(exit.code, int):
                code = exit.code or 0
            else:
                print(exit.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback on stderr, exit 1
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__" and sys.argv[1:2] == ["--fork-server"]:
    _serve_forks(sys.argv[2] or None, *sys.argv[3:])
