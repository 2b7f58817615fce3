"""The tools `planc mcp` serves, over stdio here (HTTP is http.py's).

- `describe`: the system prompt `planc prompt` prints for the project, with the plan written bare.
- `check_plan(plan)`: the plan checked as `planc run` would check it here: `planc check --format json`'s
  object for it, and, when it has errors, `repair`: the message `planc plan` sends a model back.
- `run_plan(plan, arguments)`: checked so, then run and recorded in the project's run store as
  `planc run --approve` runs it, with the client asked in the person's place (`asking.py`); the run's
  id, its status and its result. A plan refused by the check, or arguments that do not fit it, are
  the tool's result (`status: "refused"`, with the diagnostics and the repair), not a protocol error.
  A client that goes away during the run leaves it recorded as interrupted; a call the client cannot
  be asked about leaves it awaiting approval.
- `show_run(run)` and `list_runs()`: the caller's runs, as `planc show-run --format json` and `planc runs`
  give them; `approve_run(run, deny, call)` answers the call a run waits on and continues it, as
  `planc approve` does; `resume_run(run)` continues a run that did not finish, as `planc resume` does.

A client chooses none of the project, registry, policy, budgets or store: they are the planc.toml's
the server was started with. Nor does it choose its principal: over HTTP with `[mcp_server.auth]` it
is the one the request's verified token names (auth.py), with the attributes its claims give, and
otherwise planc.toml's. Each run is recorded under its principal, and a caller sees, approves and
resumes only the runs recorded under its own: another's are as if they were not there. What a client
sends was written by an agent that may have read anything, so the plan's literals and `$args` carry
the labels `[mcp_server] labels` says (`untrusted` unless planc.toml says otherwise). A run's calls
to upstream MCP servers are made with planc's own credentials for them (planc.toml's); a client's
token is never sent on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs
from mcp.server.mcpserver import Context, MCPServer

from planc.backend.calls.approvals import AwaitingApproval
from planc.backend.calls.hooks import Hooks
from planc.backend.calls.ray_executor import RayUnavailable
from planc.backend.run.approved_run import approved, as_recorded
from planc.backend.run.launch import ArgumentsRefused, Launch
from planc.backend.run.recorded_run import RecordedRun, choose_executor
from planc.backend.run.spec import RunSpec, RunWiring, file_path
from planc.backend.state.values import RunError
from planc.diagnostics.render_json import check_json
from planc.diagnostics.render_repair import render_repair
from planc.mcp_server.asking import ClientAsks, ProgressNotes
from planc.mcp_server.auth import NoPrincipal, principal_of
from planc.passes.policy.load import PolicyError
from planc.planning.prompt import system_prompt
from planc.project import Project, find_policy
from planc.registry.settings.declarations import McpServing
from planc.registry.settings.errors import ConfigError
from planc.store.run_store import RunStore, RunStoreError
from planc.store.stored import StoredPlanError
from planc.version import installed_version

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings

    from planc.mcp_server.auth import IntrospectionVerifier, JwtVerifier
    from planc.passes.check import CheckResult

PLAN_NAME = "plan"  # what a client's plan is called in diagnostics: it has no file
CALLERS_KEPT = 256  # the principals whose policy is kept loaded, the earliest seen dropped first
RESUMABLE = ("interrupted", "failed")  # what `resume_run` continues: a run that did not finish
WENT_AWAY = "the MCP client went away during the run"
INSTRUCTIONS = (
    "planc checks and runs plans written in its plan language against this project's tools, policy "
    "and budgets. Call `describe` for the language and the tools, `check_plan` with a plan to see "
    "what is wrong with it, `run_plan` to run it, `show_run` to see a recorded run."
)
DESCRIBE_NOTE = (
    "Send the plan as the `plan` argument of `check_plan` or `run_plan`; `$args.NAME` reads the `arguments` given to `run_plan`."
)


def can_elicit(context: Context) -> bool:
    """Whether the client declared that it answers elicitation requests."""
    capabilities = context.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


@attrs.frozen
class Caller:
    """Who sent a request: the principal its plans are judged and recorded under, and the project as that
    principal sees it (its policy knowing the principal's attributes)."""

    principal: str
    project: Project


class PlancServer:
    """The project's tools over MCP; `mcp` is the SDK's server holding them. With `auth` (the SDK's AuthSettings)
    and `verifier`, every HTTP request carries a verified token, and its principal is the caller's."""

    def __init__(
        self,
        project: Project,
        *,
        auth: AuthSettings | None = None,
        verifier: JwtVerifier | IntrospectionVerifier | None = None,
        serving: McpServing | None = None,
    ) -> None:
        self.project = project
        self.serving = serving or (project.registry.mcp_server if project.registry is not None else McpServing())
        self._store: RunStore | None = None
        self._callers: dict[str, Caller] = {}  # a principal's JSON -> the project as it sees it
        self.mcp = MCPServer(
            "planc",
            version=installed_version(),
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            auth=auth,
            token_verifier=verifier,
        )
        for tool in (
            self.describe,
            self.check_plan,
            self.run_plan,
            self.show_run,
            self.list_runs,
            self.approve_run,
            self.resume_run,
        ):
            self.mcp.add_tool(tool)

    @property
    def store(self) -> RunStore:
        if self._store is None:
            self._store = RunStore(self.project.store)
        return self._store

    def caller(self, context: Context) -> Caller:
        """The principal of the request `context` is answering: the one its verified token names (auth.py), or,
        where nothing verifies tokens (stdio, loopback without `[mcp_server.auth]`), planc.toml's. Never read from
        a tool's arguments or the session: the SDK's middleware put the token's verification in the request."""
        token = verified_token(context)
        if token is None:
            if self.serving.auth is not None and is_http(context):
                raise NoPrincipal("the request carries no verified token")  # the middleware lets none through
            return Caller(self.project.principal, self.project)
        assert self.serving.auth is not None  # a token was verified: by [mcp_server.auth]'s verifier
        principal = principal_of(token, self.serving.auth)
        key = json.dumps(principal, sort_keys=True)
        if key not in self._callers:
            project = self.project
            policy = find_policy(None, project.registry, principal["uid"], (principal,))
            if len(self._callers) >= CALLERS_KEPT:
                self._callers.pop(next(iter(self._callers)))
            self._callers[key] = Caller(principal["uid"], attrs.evolve(project, policy=policy, principal=principal["uid"]))
        return self._callers[key]

    def checked(self, plan: str, caller: Caller) -> CheckResult:
        """`plan` checked for this project as `caller`, written by the client (its labels), with approvals where
        the client's answer counts as a person's."""
        return caller.project.check(plan, approvals=self.serving.answers_from_person, written_by=self.serving.labels)

    def describe(self, ctx: Context) -> str:
        """The plan language and this project's tools: how to write a plan that `check_plan` and `run_plan` take."""
        project = self.caller(ctx).project
        return (
            system_prompt(project.registry, fenced=False, policy=project.policy, principal=project.principal)
            + "\n"
            + DESCRIBE_NOTE
            + "\n"
        )

    def check_plan(self, plan: str, ctx: Context) -> dict[str, Any]:
        """Check a plan without running it: `ok`, the diagnostics, its cost, and when it has errors `repair`, a
        message saying what to change."""
        return refusal(self.checked(plan, self.caller(ctx)))

    async def run_plan(self, plan: str, ctx: Context, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Check a plan, then run it (effectful calls are asked about first); its `run` id, `status` (ok, error,
        failed, refused, awaiting_approval) and `result`. `arguments` are read by `$args.NAME`."""
        caller = self.caller(ctx)
        checked = self.checked(plan, caller)
        if not checked.ok:
            return {**refusal(checked), "status": "refused"}
        project = caller.project
        # As `planc run --approve` runs it: a resume without a terminal makes no effectful call the run had not.
        spec = RunSpec(
            principal=caller.principal,
            approve=True,
            arguments=arguments or {},
            client="mcp",
            executor=choose_executor(project.registry, None, None),
            config=file_path(project.registry.source) if project.registry is not None else None,
        )
        wiring, notes = self.wiring(ctx)
        try:
            launch = Launch.new(checked, spec, wiring, registry=project.registry, policy=project.policy)
        except ArgumentsRefused as error:  # nothing ran, nothing recorded
            refused = refusal(error.checked) if error.checked is not None else {"ok": False, "message": str(error)}
            return {**refused, "status": "refused"}
        return await self.execute(launch, notes)

    def wiring(self, ctx: Context) -> tuple[RunWiring, ProgressNotes]:
        """What a client's run is connected to: the project's store, the client asked in the person's place,
        its progress as notifications (sent by the ProgressNotes), a client gone recorded as an interruption."""
        notes = ProgressNotes(ctx)
        asks = ClientAsks(ctx, can_elicit(ctx), self.serving.answers_from_person)
        hooks = Hooks(gate=asks.gate, events=notes.sink, interlocutor=asks.interlocutor)
        return RunWiring(store=self.store, hooks=hooks, cancelled=WENT_AWAY), notes

    async def execute(self, launch: Launch, notes: ProgressNotes) -> dict[str, Any]:
        """Run `launch` for its client; its record ends as the run does, interrupted when the client goes away
        (the run's task is cancelled then), awaiting approval when it cannot be asked about a call."""
        try:
            async with notes:
                result = await launch.run()
        except RayUnavailable as error:  # nothing ran, nothing recorded
            return {"ok": False, "status": "failed", "message": str(error)}
        except AwaitingApproval as waiting:
            run_id = waiting.run_id
            return {
                "ok": False,
                "run": run_id,
                "status": "awaiting_approval",
                "awaiting": waiting.calls,
                "message": f"run {run_id} waits for an approval: `approve_run` with this `run` approves "
                "the call (`deny: true` refuses it) and continues the run",
            }
        except RunStoreError as error:  # the store cannot be written, or the call was answered already
            return {"ok": False, "status": "failed", "message": str(error)}
        except RunError as error:
            ran = {"run": launch.recorded.run_id} if launch.recorded is not None else {}
            return {"ok": False, **ran, "status": "failed", "message": str(error)}
        # A value labelled `secret` reaches the client as planc records it: its length and hash.
        return {
            "ok": result.status == "ok",
            "run": result.run_id,
            "status": result.status,
            "result": result.kept(),
            **({"message": result.message} if result.message else {}),
        }

    def own_run(self, run: str, caller: Caller) -> dict:
        """The record of the run `run` names among `caller`'s own runs; a RunStoreError, worded as for a run that
        is not there, for another principal's."""
        record = self.store.run(self.store.find(run, principal=caller.principal))
        assert RunSpec.from_record(record).principal == caller.principal
        return record

    def show_run(self, run: str, ctx: Context) -> dict[str, Any]:
        """One of your recorded runs, by id, a prefix of one, or `last`: its plan, calls, events and result."""
        try:
            return self.own_run(run, self.caller(ctx))
        except RunStoreError as error:
            return {"ok": False, "message": str(error)}

    def list_runs(self, ctx: Context) -> dict[str, Any]:
        """Your recorded runs, oldest first: each one's `id`, `status`, when it started and finished, its calls, and
        what a run awaiting approval waits for."""
        try:
            return {"ok": True, "runs": self.store.runs(principal=self.caller(ctx).principal)}
        except RunStoreError as error:
            return {"ok": False, "message": str(error)}

    async def approve_run(self, run: str, ctx: Context, deny: bool = False, call: int | None = None) -> dict[str, Any]:
        """Approve the call one of your runs waits on (`deny: true` refuses it; `call`: which, when several wait),
        then continue the run as `run_plan` runs it."""
        caller = self.caller(ctx)
        try:
            record = self.own_run(run, caller)
            wiring, notes = self.wiring(ctx)
            launch = approved(
                record, self.store, wiring, deny=deny, call=call, registry=caller.project.registry, policy=caller.project.policy
            )
        except (RunStoreError, ConfigError, PolicyError, StoredPlanError, ValueError) as error:
            return {"ok": False, "status": "refused", "message": str(error)}
        return await self.execute(launch, notes)

    async def resume_run(self, run: str, ctx: Context) -> dict[str, Any]:
        """Continue one of your runs that did not finish (its client went away, its server stopped), in the same
        record: what it did comes from the record, the rest is run as `run_plan` runs it."""
        caller = self.caller(ctx)
        try:
            record = self.own_run(run, caller)
            if record["status"] not in RESUMABLE:
                return {
                    "ok": False,
                    "run": record["id"],
                    "status": record["status"],
                    "message": f"run {record['id']} is {record['status']}: nothing to resume"
                    + (" (`approve_run` answers the call it waits on)" if record["status"] == "awaiting_approval" else ""),
                }
            spec = RunSpec.from_record(record)
            registry, policy, checked = as_recorded(record, caller.project.registry, caller.project.policy)
        except (RunStoreError, ConfigError, PolicyError, StoredPlanError, ValueError) as error:
            return {"ok": False, "status": "refused", "message": str(error)}

        def resumed(store: RunStore | None) -> RecordedRun:
            assert store is not None  # the server's store, always open
            return RecordedRun.resume(store, record, checked, registry=registry, policy=policy)

        wiring, notes = self.wiring(ctx)
        return await self.execute(Launch.continued(checked, spec, wiring, resumed, registry=registry, policy=policy), notes)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def verified_token(context: Context) -> AccessToken | None:
    """The AccessToken the SDK's bearer middleware verified for the request `context` answers, or None."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    request = getattr(context.request_context, "request", None)
    user = request.scope.get("user") if request is not None and hasattr(request, "scope") else None
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def is_http(context: Context) -> bool:
    return getattr(context.request_context, "request", None) is not None


def refusal(checked: CheckResult) -> dict[str, Any]:
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
