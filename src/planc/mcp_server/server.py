"""The tools `planc mcp` serves, and its transports.

- `describe`: the system prompt `planc prompt` prints for the project, with the plan written bare.
- `check_plan(plan)`: the plan checked as `planc run` would check it here: `planc check --format json`'s
  object for it, and, when it has errors, `repair`: the message `planc plan` sends a model back.
- `run_plan(plan, arguments)`: checked so, then run and recorded in the project's run store as
  `planc run --approve` runs it, with the client asked in the person's place (`asking.py`); the run's
  id, its status and its result. A plan refused by the check, or arguments that do not fit it, are
  the tool's result (`status: "refused"`, with the diagnostics and the repair), not a protocol error.
  A client that goes away during the run leaves it recorded as interrupted, which `planc resume`
  continues.
- `show_run(run)`: a run of the project's store, as `planc show-run --format json` prints it.

A client chooses none of the project, registry, policy, principal, budgets or store: they are the
planc.toml's the server was started with. What it sends was written by an agent that may have read
anything, so the plan's literals and `$args` carry the labels `[mcp_server] labels` says
(`untrusted` unless planc.toml says otherwise).
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from planc.backend.calls.hooks import Hooks
from planc.backend.calls.ray_executor import RayUnavailable
from planc.backend.run.interpreter import run_arguments
from planc.backend.run.recorded_run import RecordedRun, choose_executor, connect_executor
from planc.backend.state.values import RunError
from planc.diagnostics.render_json import check_json
from planc.diagnostics.render_repair import render_repair
from planc.mcp_server.asking import ProgressNotes, elicitation_gate
from planc.planning.prompt import system_prompt
from planc.project import Project
from planc.registry.declarations import McpServing
from planc.store.run_store import RunStore, RunStoreError

PLAN_NAME = "plan"  # what a client's plan is called in diagnostics: it has no file
WENT_AWAY = "the MCP client went away during the run"
INSTRUCTIONS = ("planc checks and runs plans written in its plan language against this project's tools, policy "
                "and budgets. Call `describe` for the language and the tools, `check_plan` with a plan to see "
                "what is wrong with it, `run_plan` to run it, `show_run` to see a recorded run.")
DESCRIBE_NOTE = ("Send the plan as the `plan` argument of `check_plan` or `run_plan`; `$args.NAME` reads the "
                 "`arguments` given to `run_plan`.")


def planc_version() -> str:
    """planc's version, the installed package's: what `planc --version` prints, and `initialize` answers."""
    from importlib.metadata import version

    return version("planc")


def can_elicit(context: Context) -> bool:
    """Whether the client declared that it answers elicitation requests."""
    capabilities = context.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


class PlancServer:
    """The project's tools over MCP; `mcp` is the SDK's server holding them."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.serving = project.registry.mcp_server if project.registry is not None else McpServing()
        self._store: RunStore | None = None
        self.mcp = MCPServer("planc", version=planc_version(), instructions=INSTRUCTIONS, log_level="WARNING")
        for tool in (self.describe, self.check_plan, self.run_plan, self.show_run):
            self.mcp.add_tool(tool)

    @property
    def store(self) -> RunStore:
        if self._store is None:
            self._store = RunStore(self.project.store)
        return self._store

    def checked(self, plan: str, context: Context):
        """`plan` checked for this project, written by the client (its labels), with approvals where an
        accepted elicitation counts as a person's."""
        approvals = self.serving.answers_from_person and can_elicit(context)
        return self.project.check(plan, approvals=approvals, written_by=self.serving.labels)

    def describe(self) -> str:
        """The plan language and this project's tools: how to write a plan that `check_plan` and `run_plan` take."""
        project = self.project
        return system_prompt(project.registry, fenced=False, policy=project.policy,
                             principal=project.principal) + "\n" + DESCRIBE_NOTE + "\n"

    def check_plan(self, plan: str, ctx: Context) -> dict[str, Any]:
        """Check a plan without running it: `ok`, the diagnostics, its cost, and when it has errors `repair`, a
        message saying what to change."""
        return refusal(self.checked(plan, ctx))

    async def run_plan(self, plan: str, ctx: Context, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Check a plan, then run it (effectful calls are asked about first); its `run` id, `status` (ok, error,
        failed, refused) and `result`. `arguments` are read by `$args.NAME`."""
        checked = self.checked(plan, ctx)
        if not checked.ok:
            return {**refusal(checked), "status": "refused"}
        try:
            arguments = run_arguments(checked, arguments or {})
        except RunError as error:
            return {"ok": False, "status": "refused", "message": str(error)}
        project = self.project
        how = choose_executor(project.registry, None, None)
        try:
            connected = connect_executor(how, project.registry, project.store)
        except RayUnavailable as error:  # nothing ran, nothing recorded
            return {"ok": False, "status": "failed", "message": str(error)}
        try:
            try:
                recorded = RecordedRun.record(self.store, checked, registry=project.registry, policy=project.policy,
                                              principal=project.principal, arguments=arguments,
                                              options=self.options(how))
            except RunStoreError as error:  # nothing ran: the store cannot be opened or written
                return {"ok": False, "status": "failed", "message": str(error)}
            return await self.execute(recorded, ctx)
        finally:
            if connected is not None:
                connected.close()

    async def execute(self, recorded: RecordedRun, ctx: Context) -> dict[str, Any]:
        """Run `recorded` for the client of `ctx`; its record ends as the run does, interrupted when the client
        goes away (the run's task is cancelled then)."""
        notes = ProgressNotes(ctx)
        hooks = Hooks(gate=elicitation_gate(ctx, can_elicit(ctx), self.serving.answers_from_person),
                      events=notes.sink)
        try:
            async with notes:
                result = await recorded.running(hooks, cancelled=WENT_AWAY)
        except RunError as error:
            return {"ok": False, "run": recorded.run_id, "status": "failed", "message": str(error)}
        # A value labelled `secret` reaches the client as planc records it: its length and hash.
        return {"ok": result.status == "ok", "run": recorded.run_id, "status": result.status,
                "result": result.kept(), **({"message": result.message} if result.message else {})}

    def options(self, how) -> dict:
        """How a client's run runs, kept with it so that `planc resume` and `replay` run it the same way: as
        `planc run --approve` does (a resume without a terminal makes no effectful call the run had not)."""
        registry = self.project.registry
        return {"config": str(registry.source.resolve()) if registry is not None and registry.source else None,
                "policy": None, "finish": "output", "query": None, "approve": True,
                "budget": [None, None, None], "returns": None,
                "executor": {"kind": how.kind, "address": how.address}, "client": "mcp"}

    def show_run(self, run: str) -> dict[str, Any]:
        """A recorded run of this project, by id, a prefix of one, or `last`: its plan, calls, events and result."""
        try:
            return self.store.run(self.store.find(run))
        except RunStoreError as error:
            return {"ok": False, "message": str(error)}

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def refusal(checked) -> dict[str, Any]:
    """`checked` as `planc check --format json` gives it, with the repair message when it has errors."""
    data = check_json(PLAN_NAME, checked)
    if not checked.ok:
        data["repair"] = render_repair(checked.source, checked.diagnostics)
    return data


def serve_stdio(project: Project) -> None:
    """Serve `project` over standard input and output until the client closes them."""
    server = PlancServer(project)
    try:
        server.mcp.run("stdio")
    finally:
        server.close()


class ClientGone(logging.Filter):
    """Leaves out what the MCP SDK and uvicorn log, with a traceback, of an answer they could not send because
    its client had gone: the connection closed mid-response, or the session's streams closed with it. A
    client that leaves mid-run is no error of the server's: its run is recorded as interrupted (`WENT_AWAY`),
    resumable. Any other error is logged as it was.

    >>> import anyio
    >>> ClientGone.gone(anyio.ClosedResourceError()), ClientGone.gone(RuntimeError("a bug"))
    (True, False)
    """

    GONE = ("after response already completed", "response already started")

    @classmethod
    def gone(cls, error: BaseException | None) -> bool:
        import anyio

        if isinstance(error, BaseExceptionGroup):
            return all(cls.gone(inner) for inner in error.exceptions)
        return (isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError))
                or isinstance(error, RuntimeError) and any(words in str(error) for words in cls.GONE))

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and self.gone(record.exc_info[1]))


class NotLoopback(ValueError):
    """An address `planc mcp --http` will not serve at: it has no authentication, so only this machine may reach it."""


def is_loopback(host: str) -> bool:
    """Whether `host` is an address of this machine that no other machine can reach.

    >>> [is_loopback(host) for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2", "0.0.0.0", "::", "example.org")]
    [True, True, True, True, False, False, False]
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def transport_security(host: str, port: int):
    """What a request to `http://host:port/mcp` must say in `Host` and `Origin`: one of the loopback names with the
    bound port. A web page that a DNS rebinding points at the server sends its own name, and is refused (421 for
    `Host`, 403 for `Origin`), as is a page of another origin; set here, not left to the SDK's default.

    >>> transport_security("127.0.0.1", 8000).allowed_hosts
    ['127.0.0.1:8000', 'localhost:8000', '[::1]:8000']
    """
    from mcp.server.transport_security import TransportSecuritySettings

    names = ["127.0.0.1", "localhost", "[::1]"]
    bound = f"[{host}]" if ":" in host else host
    hosts = [f"{name}:{port}" for name in (names if bound in names else [*names, bound])]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{each}" for each in hosts])


def serve_http(project: Project, host: str, port: int) -> None:
    """Serve `project` over streamable HTTP at `http://HOST:PORT/mcp` until stopped; port 0 takes a free one.
    The address it listens on goes to stderr once it does. NotLoopback, before it listens, for an address other
    machines can reach: nothing authenticates a client yet."""
    import anyio
    import uvicorn

    if not is_loopback(host):
        raise NotLoopback("planc mcp serves plans that run, and authenticates no client, so it listens only on "
                          "this machine's loopback address (127.0.0.1, localhost or [::1]); to serve other machines, "
                          "put it behind a proxy that authenticates them")
    for name in ("mcp.server.streamable_http", "uvicorn.error"):
        logging.getLogger(name).addFilter(ClientGone())
    server = PlancServer(project)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)  # connections wait from now on, so the line below may be acted on at once
    bound = listener.getsockname()[1]
    app = server.mcp.streamable_http_app(host=host, transport_security=transport_security(host, bound))
    config = uvicorn.Config(app, log_level="warning")
    where = f"[{host}]" if family == socket.AF_INET6 else host
    print(f"planc mcp: listening on http://{where}:{bound}/mcp", file=sys.stderr, flush=True)
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[listener]))
    finally:
        server.close()
