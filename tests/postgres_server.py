"""A throwaway PostgreSQL server for the tests: `initdb` in a temporary folder, `pg_ctl` on a socket there.

The server listens on no TCP port, only on a Unix socket in its own folder, and trusts whoever
connects through it (the folder is the machine's to guard). `initdb` refuses to run as root, so
where the tests run as root (CI does) the server is made and run as `nobody`, in a folder that user
owns. Debian's `postgresql` package keeps its programs in /usr/lib/postgresql/NN/bin, off PATH:
they are looked for there too. `stop()` stops it at once, whatever it was doing.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

ADMIN = "planc_admin"  # the superuser initdb makes
SERVER_BUILD_GUARD_S = 300  # a hang guard only: initdb and the start are waited for by pg_ctl's own -w


def programs() -> Path | None:
    """The folder holding initdb and pg_ctl: on PATH, else the newest of Debian's; None when there is none."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    folders = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda f: int(Path(f).parent.name) if Path(f).parent.name.isdigit() else 0
    )
    for folder in reversed(folders):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


class PostgresServer:
    """A server of its own; `database()` gives each test a fresh database and its DSN."""

    def __init__(self, bin_folder: Path, durable: bool = False) -> None:
        """`durable`: every commit reaches the disk (fsync), as a real server's do; the tests need no such
        thing, and are spared its cost."""
        self.bin = bin_folder
        self.folder = Path(tempfile.mkdtemp(prefix="planc-pg-", dir="/tmp"))  # short: a socket path has ~100 bytes
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("nobody")
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        self.data = self.folder / "data"
        self._run("initdb", "-D", str(self.data), "-U", ADMIN, "--auth=trust", "-E", "UTF8", "--no-locale", "-N")
        fsync = "on" if durable else "off"
        self._run(
            "pg_ctl",
            "start",
            "-w",
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "log"),
            "-o",
            f"-c listen_addresses='' -c unix_socket_directories={self.folder} -c fsync={fsync} -c max_connections=100",
        )
        self.names = itertools.count()

    def _run(self, program: str, *args: str) -> None:
        kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []} if self.user else {}
        done = subprocess.run(
            [str(self.bin / program), *args],
            capture_output=True,
            text=True,
            cwd=self.folder,
            timeout=SERVER_BUILD_GUARD_S,
            **kwargs,
        )
        if done.returncode != 0:
            log = self.folder / "log"
            raise RuntimeError(f"{program} failed: {done.stderr}{log.read_text() if log.is_file() else ''}")

    def dsn(self, database: str = "postgres", user: str = ADMIN) -> str:
        return f"host={self.folder} dbname={database} user={user}"

    def database(self) -> str:
        """A new, empty database, and its DSN (as the superuser)."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self.names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def stop(self) -> None:
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


def skip_reason() -> str | None:
    """Why the tests of PostgreSQL cannot run here, or None."""
    if programs() is None:
        return "PostgreSQL is not installed (initdb and pg_ctl; Debian: apt-get install postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[dev]' or '.[postgresql]')"
    return None
