"""`planc ARGS` on a pseudo-terminal, as a person runs it: standard input and error on the terminal,
standard output a pipe (the result). The test reads what planc shows until the text it waits for is on
the screen, then types: it never guesses how long planc takes."""

from __future__ import annotations

import os
import select
import subprocess

import pytest
from cli import HANG_GUARD_S, planc_process

needs_a_terminal = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


class Terminal:
    def __init__(self, *args, cwd, env: dict | None = None) -> None:
        self.master, slave = os.openpty()
        env = {**os.environ, **(env or {}), "TERM": "xterm", "COLUMNS": "100"}
        self.process = planc_process(*args, cwd=cwd, stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=env)
        os.close(slave)
        self.screen = b""

    def read(self) -> bool:
        """What planc shows next; False once it has closed the terminal (it has ended)."""
        if not select.select([self.master], [], [], HANG_GUARD_S)[0]:
            self.process.kill()
            pytest.fail(f"planc showed nothing for {HANG_GUARD_S} s:\n{self.text}")
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side is closed
            return False
        self.screen += chunk
        return bool(chunk)

    @property
    def text(self) -> str:
        return self.screen.decode(errors="replace")

    def until(self, shown: str, count: int = 1) -> None:
        """Read until `shown` is on the screen `count` times."""
        while self.screen.count(shown.encode()) < count:
            if not self.read():
                pytest.fail(f"planc ended before showing {shown!r} {count} times:\n{self.text}")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def end(self) -> tuple[int, str, str]:
        """Exit status, stdout and the screen, once planc has ended; no traceback reached the screen."""
        while self.read():
            pass
        code = self.process.wait(timeout=HANG_GUARD_S)
        out = self.process.stdout.read().decode()
        self.process.stdout.close()
        os.close(self.master)
        assert "Traceback" not in self.text, self.text
        return code, out, self.text
