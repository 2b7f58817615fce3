"""`planc ARGS` as a command line, run by a fork server (cli.py, `planc_forks(listen=...)`): for a test
whose `planc` process is started by something else (the MCP SDK's stdio client starts `planc mcp` itself).

    python -S forked_planc.py SOCKET ARGS...
    python -S forked_planc.py SOCKET --entry MODULE:FUNCTION ARGS...
    python -S forked_planc.py SOCKET --script SCRIPT ARGS...

It hands its standard streams, working directory and environment to the fork server listening on the
Unix socket SOCKET, which forks a process that has imported planc (and MODULE) and runs `planc ARGS`
there (or the console script whose entry point is MODULE:FUNCTION, or `python SCRIPT`: an MCP server
that planc starts), on those very streams; it waits for that process, passes on SIGTERM and SIGINT to
it, and exits as it exited. Only the standard library: it starts in a few milliseconds, where `planc`
or an MCP server starts in a second or two.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def main(path: str, args: list[str]) -> None:
    chosen = {"entry": None, "script": None}
    if args[:1] in (["--entry"], ["--script"]):
        chosen[args[0].removeprefix("--")], args = args[1], args[2:]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    request = json.dumps({"args": args, **chosen, "cwd": os.getcwd(), "env": dict(os.environ)}).encode() + b"\n"
    socket.send_fds(connection, [request], [0, 1, 2])
    replies = connection.makefile("r", encoding="utf-8")
    pid = json.loads(replies.readline())["pid"]

    def passed_on(number, frame):
        os.kill(pid, number)

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, passed_on)
    for fd in (0, 1):  # the process reads and writes them; this one holds them open no longer
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, fd)
        os.close(devnull)
    reply = replies.readline()
    returncode = json.loads(reply)["returncode"] if reply else 1
    if returncode < 0:  # ended by a signal: end by the same one
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    sys.exit(returncode)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
