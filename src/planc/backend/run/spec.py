"""A run's options in two parts: what decides what it does (`RunSpec`, recorded with it) and what
this process connects it to (`RunWiring`, never recorded).

A run continued later (`planc resume`, `planc approve`, `planc replay`, MCP's `approve_run` and
`resume_run`) reads its `RunSpec` back from its record (`RunSpec.from_record`): the principal it ran
as, the labels of whoever wrote its plan, whether a person lets flagged calls through, its budgets
and the files it read, so that it is checked and continued with the choices it was started with.
`from_record` is the one place a record's options are read, the defaults of an older record's
version included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from planc.backend.calls.hooks import Hooks
from planc.optimize.schedule import Schedule
from planc.passes.cost.budget import Budget
from planc.passes.policy.load import DEFAULT_PRINCIPAL
from planc.registry.settings.declarations import Executor

# The version of the options a run is recorded with. 0 is every record made before the options had
# one: its keys came one at a time, and each one missing reads as the run then ran (`from_record`).
SPEC_VERSION = 1
# What `--finish` prints of a run's result: its value as JSON, nothing, or the `solver` model's
# report.
FINISHES = ("output", "none", "solver")


@attrs.frozen
class ReadFiles:
    """The files a run read, each by the hash the store keeps its text under (None: not read, or not
    kept)."""

    config: str | None = None  # planc.toml
    lock: str | None = None  # planc.lock.json
    policy: str | None = None  # the Cedar policy


@attrs.frozen
class RunSpec:
    """Every choice that decides what a run does, recorded with it as versioned JSON."""

    principal: str = DEFAULT_PRINCIPAL  # whom every call is decided for (a Cedar entity uid)
    principals: tuple[Mapping, ...] = ()  # principals given as Cedar entity JSON, with attributes
    written_by: frozenset[str] = frozenset()  # the labels of whoever wrote the plan (MCP client's)
    approvals: bool = False  # a person lets through calls flagged for where their values came from
    approve: bool = False  # every effectful call waits for a person (`--approve`)
    budget: Budget = Budget()  # the `--max-*` limits it was checked with
    optimize: bool = False  # run as `planc optimize` rewrites it, independent steps at once
    arguments: Mapping[str, Any] = attrs.field(factory=dict)  # its `$args`, defaults filled in
    returns: Mapping | None = None  # what its result must be: a declared plan's `returns`
    config: str | None = None  # the planc.toml it ran with (an absolute path)
    policy: str | None = None  # the policy file given besides planc.toml's (an absolute path)
    read: ReadFiles | None = None  # the files it read, kept by hash: None before runs kept them
    code_tools: Mapping[str, Mapping] | None = None  # its Python and SQL tools, for a replay
    executor: Executor = Executor()  # where its Python tool calls are made
    finish: str = "output"  # what is printed of its result (FINISHES)
    query: str | None = None  # what `--finish solver`'s report answers
    client: str | None = None  # who started it when not a person at a terminal: "mcp"
    planned: Mapping | None = None  # `planc plan`'s task, rounds and model role, for a planned run
    clock: Mapping | None = None  # a clock and ids fixed for a deterministic run, or None

    @property
    def waits_for(self) -> str | None:
        """Whose approval its calls wait for in the store when no gate asks: every effectful call's
        under `--approve`, flagged calls' when a person lets them through, else none."""
        from planc.backend.calls.approvals import EFFECTFUL, FLAGGED

        return EFFECTFUL if self.approve else FLAGGED if self.approvals else None

    def check_keywords(self) -> dict:
        """What a plan is checked with for this run, as `check` and `load_plan` take them."""
        return {
            "principal": self.principal,
            "approvals": self.approvals,
            "written_by": self.written_by,
            **self.budget.keywords(),
        }

    def to_record(self) -> dict:
        """The options as the run store keeps them (`arguments` are a column of their own)."""
        return {
            "spec": SPEC_VERSION,
            "principal": self.principal,
            "principals": list(self.principals),
            "written_by": sorted(self.written_by),
            "approvals": self.approvals,
            "approve": self.approve,
            "budget": [self.budget.usd, self.budget.calls, self.budget.inferences],
            "optimize": self.optimize,
            "returns": self.returns,
            "config": self.config,
            "policy": self.policy,
            "read": attrs.asdict(self.read) if self.read is not None else None,
            "code_tools": dict(self.code_tools) if self.code_tools is not None else None,
            "executor": {"kind": self.executor.kind, "address": self.executor.address},
            "finish": self.finish,
            "query": self.query,
            "client": self.client,
            "planned": dict(self.planned) if self.planned is not None else None,
            "clock": dict(self.clock) if self.clock is not None else None,
        }

    @classmethod
    def from_record(cls, run: Mapping) -> RunSpec:
        """The options `run` (a record of the run store) was started with. A record of version 0 has
        the keys of its day: before a key was recorded, runs ran as its default says (no author
        labels, no approvals, no budget, the local executor, no kept files); a newer version is
        refused."""
        options = run.get("options") or {}
        version = options.get("spec", 0)
        if not isinstance(version, int) or version > SPEC_VERSION:
            raise ValueError(
                f"run {run.get('id')} was recorded by a newer planc (options version {version}); upgrade planc to continue it"
            )
        planned = options.get("planned")
        budget = options.get("budget") or (planned or {}).get("budget") or (None, None, None)
        read = options.get("read")
        executor = options.get("executor")
        return cls(
            principal=options.get("principal") or DEFAULT_PRINCIPAL,
            principals=tuple(options.get("principals") or ()),
            written_by=frozenset(options.get("written_by") or ()),
            approvals=bool(options.get("approvals", False)),
            approve=bool(options.get("approve", False)),
            budget=Budget(*budget),
            optimize=bool(options.get("optimize", False)),
            arguments=dict(run.get("arguments") or {}),
            returns=options.get("returns"),
            config=options.get("config"),
            policy=options.get("policy"),
            read=ReadFiles(**read) if read is not None else None,
            code_tools=options.get("code_tools"),
            executor=Executor(**executor) if executor is not None else Executor(),
            finish=options.get("finish") or "output",
            query=options.get("query"),
            client=options.get("client"),
            planned=planned,
            clock=options.get("clock"),
        )


@attrs.frozen
class RunWiring:
    """What this process connects a run to; never recorded, and free to differ when the run is
    continued."""

    store: Any = None  # the run store: a path (opened and closed here), an open RunStore, or None
    hooks: Hooks = Hooks()  # the gate, `on_tool_error`, where events go, who answers `ask`
    schedule: Schedule | None = None  # the order `--optimize` found for its top-level steps
    executor: Any = None  # a connected executor (RayExecutor) several runs share; None: the spec's
    batch: tuple[str, int] | None = None  # the batch and its line, for a run of `planc batch`
    cancelled: str | None = None  # why a cancelled run is recorded interrupted, when the door knows
    store_named: str | None = None  # how `planc approve` must name the store, when it must
    recorded: Callable[[str], None] | None = None  # told the run's id once it is recorded


def file_path(path: str | Path | None) -> str | None:
    """`path` as a spec keeps it: absolute, so a run continued elsewhere finds the same file."""
    return str(Path(path).resolve()) if path else None
