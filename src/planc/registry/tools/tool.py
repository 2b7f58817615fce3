"""What planc knows about a tool: its parameters, result, effects and cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

import attrs

from planc.registry.provenance.labels import UNTRUSTED_ONLY, label_set
from planc.registry.tools.learned_shapes import LearnedShape


@attrs.frozen
class Effects:
    """What calling the tool may do. The defaults are the conservative side, as MCP's are."""

    read_only: bool = False
    deterministic: bool = False
    idempotent: bool = False
    destructive: bool = True
    open_world: bool = True
    # Whether a declaration said anything of these (planc.toml's `effects`, trusted MCP annotations,
    # `@planc.tool` effect options): what the optimizer's N602 asks for. Not part of equality, nor of
    # a declaration's hash: `effects = { destructive = true }` is the same effects as none at all.
    declared: bool = attrs.field(default=False, eq=False, repr=False)

    def normalised(self) -> Effects:
        """The effects as every reader takes them (the policy, `registry list`, `show`, `diff`'s risk, the
        approval): a read-only tool changes nothing, so it is neither destructive nor anything but
        idempotent, as MCP's annotations mean them.

        >>> Effects(read_only=True).normalised().destructive, Effects().normalised().destructive
        (False, True)
        """
        return attrs.evolve(self, destructive=False, idempotent=True) if self.read_only else self


@attrs.frozen
class Cost:
    usd: float = 0.0
    latency_ms: float = 0.0


# Where an MCP `tools/call` request carries the call's idempotency key: `params._meta`, under this name.
MCP_META_KEY = "planc/idempotency_key"

# The Python types of the JSON values of each JSON Schema `type`, exactly: a bool is not an integer here.
PYTHON_TYPES = {
    "string": frozenset({str}),
    "number": frozenset({int, float}),
    "integer": frozenset({int}),
    "boolean": frozenset({bool}),
    "array": frozenset({list}),
    "object": frozenset({dict}),
    "null": frozenset({type(None)}),
}
ANNOTATIONS = frozenset({"description", "title", "default", "examples"})  # what a validator does not check


def plain_types(schema: Mapping) -> frozenset[type] | None:
    """The Python types of the values `schema` allows, when it says nothing but their `type` (annotations
    aside): a JSON value whose type is exactly one of them is valid for it without a validator. None when
    the schema says more (bounds, a format, items, a type it does not know): only a validator can tell.

    >>> sorted(kind.__name__ for kind in plain_types({"type": ["string", "array"], "description": "text"}))
    ['list', 'str']
    >>> plain_types({"type": "string", "minLength": 1}), plain_types({"type": "date"})
    (None, None)
    """
    if not isinstance(schema, Mapping) or any(key != "type" and key not in ANNOTATIONS for key in schema):
        return None
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else None
    if not names or not all(isinstance(name, str) and name in PYTHON_TYPES for name in names):
        return None
    return frozenset().union(*(PYTHON_TYPES[name] for name in names))


# What provides a tool, the first word of its `provider`: a Python function, a query over SQLite or
# PostgreSQL, an MCP server's tool, a declared plan, or a step planc runs itself (a pure step, or a
# control step). The one reading of `provider`'s text: everything else asks `Tool.kind`.
ToolKind = Literal["python", "sql", "postgresql", "mcp", "plan", "pure", "control"]
TOOL_KINDS: tuple[ToolKind, ...] = get_args(ToolKind)
_KINDS: dict[str, ToolKind] = {kind: kind for kind in TOOL_KINDS}  # what a provider's first word names
PLANC_KINDS = frozenset({"plan", "pure", "control"})  # the kinds planc.toml's `[tools]` cannot declare


def provider_kind(provider: str) -> ToolKind | None:
    """The kind of tool `provider` names; None for a provider planc does not run (a tool that is
    checked, never called).

    >>> provider_kind("python:tools:search"), provider_kind("pure"), provider_kind("http://x")
    ('python', 'pure', None)
    """
    return _KINDS.get(provider.partition(":")[0])


def provider_address(provider: str) -> str:
    """What `provider` names after its kind: the module and function, the database, the server or
    the declared plan.

    >>> provider_address("plan:triage"), provider_address("mcp:git"), provider_address("control")
    ('triage', 'git', '')
    """
    return provider.partition(":")[2]


# JSON Schema marks for the parameter kinds only control steps have.
CONDITION = {"x-planc": "condition"}
BLOCK = {"x-planc": "block"}


@attrs.frozen
class Tool:
    """One callable tool: a Python function, an MCP server's tool, a plan, or a control step."""

    name: str
    params: Mapping[str, Mapping] = attrs.field(factory=dict)  # name -> JSON Schema
    required: tuple[str, ...] = ()
    pipe: str | None = None  # the parameter a `|>` fills
    returns: Mapping | None = None  # JSON Schema of the result; None: unknown
    returns_at_most: str | None = None  # the parameter that bounds the result's length
    effects: Effects = Effects()
    cost: Cost = Cost()
    description: str = ""
    timeout_s: float | None = None  # how long a call may take at run time; None: `[limits] timeout_s`
    # "python:module:function", "mcp:server", "sql:/path/to.sqlite", "postgresql:$NAME", "plan:NAME",
    # "pure" or "control": read through `kind` and `address`
    provider: str = ""
    query: str | None = None  # an SQL tool's query
    # Where the tool takes the idempotency key of each call, and deduplicates by it: the parameter of a
    # Python function that receives it, or MCP_META_KEY for an MCP tool whose server declares that it
    # does (every MCP tool is sent the key in `_meta`); None: it takes none. Never a plan's parameter.
    idempotency_key: str | None = None
    one_of: tuple[tuple[str, ...], ...] = ()  # groups of parameters of which exactly one is given
    at_most_one: tuple[tuple[str, ...], ...] = ()  # groups of parameters of which one at most is given
    required_when: tuple[tuple[str, object, str], ...] = ()  # (param, value, needed): `needed` when param == value
    binds: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)  # param -> names its block binds
    # What its results carry besides its arguments' labels (registry/provenance/labels.py): `untrusted` unless a
    # declaration says otherwise (`labels = []` declares a tool trusted).
    labels: frozenset[str] = attrs.field(default=UNTRUSTED_ONLY, converter=label_set)
    # What its results looked like, learned by the run store when it declares no `returns`
    # (registry/tools/learned_shapes.py): read only to warn, and to show the planner. Not part of what it is.
    learned: LearnedShape | None = attrs.field(default=None, eq=False, repr=False)
    # What provides it (`ToolKind`); None for a provider planc does not run. Read from `provider` once:
    # a run asks it of every call many times.
    kind: ToolKind | None = attrs.field(init=False, eq=False, repr=False)

    @kind.default
    def _provider_kind(self) -> ToolKind | None:
        return provider_kind(self.provider)

    @property
    def address(self) -> str:
        """What its provider names after its kind: `plan:NAME`'s NAME, `mcp:SERVER`'s SERVER, ..."""
        return provider_address(self.provider)

    @property
    def builtin(self) -> bool:
        """Whether it is one of planc's own steps (a pure step or a control step), run by the interpreter."""
        return self.kind in ("pure", "control")

    @property
    def plan(self) -> str | None:
        """The declared plan it runs (`[plans.NAME]`), None for any other tool."""
        return self.address if self.kind == "plan" else None

    @property
    def learns(self) -> bool:
        """Whether the run store learns the shape of its results: a trusted tool (`labels = []`) of planc.toml,
        an MCP server or code, whose `returns` nothing declares."""
        return not self.labels and self.returns is None and self.kind not in PLANC_KINDS

    @property
    def takes_key(self) -> bool:
        """Whether the tool takes its calls' idempotency keys and deduplicates by them: calling it again with
        the same key is safe, idempotent or not."""
        return self.idempotency_key is not None

    @property
    def server(self) -> str | None:
        """The MCP server a tool comes from."""
        return self.address if self.kind == "mcp" else None

    def param_kind(self, param: str) -> str:
        """ "condition", "block" or "value"."""
        return self.params.get(param, {}).get("x-planc", "value")

    def to_data(self) -> dict:
        """A registry tool's declaration as JSON data (control steps' groups and bindings left out):
        what a run keeps of a tool declared in code, so that a replay needs not import it.

        >>> tool = Tool("a", {"x": {"type": "integer"}}, ("x",), effects=Effects(read_only=True, declared=True))
        >>> Tool.from_data(tool.to_data()) == tool and Tool.from_data(tool.to_data()).effects.declared
        True
        """
        return {
            "name": self.name,
            "params": dict(self.params),
            "required": list(self.required),
            "pipe": self.pipe,
            "returns": self.returns,
            "returns_at_most": self.returns_at_most,
            "effects": {**attrs.asdict(self.effects)},
            "cost": attrs.asdict(self.cost),
            "description": self.description,
            "timeout_s": self.timeout_s,
            "provider": self.provider,
            "query": self.query,
            "idempotency_key": self.idempotency_key,
            "labels": sorted(self.labels),
        }

    @classmethod
    def from_data(cls, data: Mapping) -> Tool:
        return cls(
            **{
                **data,
                "required": tuple(data["required"]),
                "effects": Effects(**data["effects"]),
                "cost": Cost(**data["cost"]),
                "labels": data.get("labels", UNTRUSTED_ONLY),
            }
        )
