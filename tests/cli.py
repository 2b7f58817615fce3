"""The `planc` command as the tests call it: in this process, or as a real process of its own.

- `invoke(*args, input=None)`: `planc ARGS` in this process through click's CliRunner, the way
  most tests call it (`result.exit_code`, `result.stdout`, `result.stderr`, `result.output`).
- `planc_process(*args, **popen)`: the installed console script started as a real process, for
  what needs one: a signal, a terminal, real standard streams, an environment of its own.
- `planc_completed(*args, input=None, **options)`: the same, run to its end, output as text.

A real process is waited for at most `HANG_GUARD_S` seconds: a guard against a hung test, never
a claim about speed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from planc.cli import main

HANG_GUARD_S = 300


def invoke(*args, input: str | None = None, env: dict[str, str | None] | None = None) -> Result:
    """`planc ARGS` in this process; `env` is set in os.environ while it runs (None unsets)."""
    return CliRunner().invoke(main, [str(arg) for arg in args], input=input, env=env)


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
    return subprocess.run([planc_executable(), *(str(arg) for arg in args)], input=input, capture_output=True,
                          text=True, timeout=HANG_GUARD_S, **options)
