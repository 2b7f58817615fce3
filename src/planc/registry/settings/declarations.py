"""What planc.toml declares besides tools, as typed values, with every default in one place.

`config.py` turns each table into one of these when the file is loaded, so a
mistake is a `file:line` error before anything runs, and nothing downstream
reads a raw TOML table or supplies a default of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

import attrs

from planc.registry.provenance.labels import NO_LABELS, UNTRUSTED_ONLY

if TYPE_CHECKING:
    from planc.registry.loading.registry import Registry

TOOL_TIMEOUT_S = 60.0  # a tool call, when neither the tool nor `[limits]` says otherwise
RESULT_BYTES = 16 * 2**20  # the largest tool result a run takes, as JSON
REGEX_CHARS = 1000  # the longest pattern `matches` runs: its work is (text length) x (pattern states)
PLAN_BYTES = 64 * 2**20  # the largest plan text a check reads
MCP_START_TIMEOUT_S = 30.0  # starting an MCP server and listing its tools
SAMPLES_PER_CALL = 1  # the model inferences a call of an MCP tool may ask for (`[mcp.NAME] sampling`)
MODEL_TIMEOUT_S = 60.0  # one chat completion
MODEL_RETRIES = 3  # a model that fails for a moment is tried again this many times
MODEL_PROVIDERS = ("openai",)  # any OpenAI-compatible chat-completions endpoint
DEFAULT_MODEL_ROLE = "default"  # the `[models.*]` table a role without its own falls back to
EXECUTORS = ("local", "ray")  # where the Python tool calls of `map` items and scheduled steps are made
RAY_RETRIES = 3  # how many times Ray may run an idempotent tool's call again after losing its worker
STORE_PATH = Path(".planc") / "runs.sqlite"  # the run store, from the folder of planc.toml, when it names none


@attrs.frozen
class Limits:
    """`[limits]`: what bounds every call and every plan, unless a tool says otherwise."""

    timeout_s: float = TOOL_TIMEOUT_S  # a tool call that declares no `timeout_s` of its own
    result_bytes: int = RESULT_BYTES  # a larger tool result is refused: the call fails, its completion recorded
    plan_bytes: int = PLAN_BYTES  # a larger plan is refused before it is parsed
    regex_chars: int = REGEX_CHARS  # a longer `matches` pattern fails its step


DEFAULT_LIMITS = Limits()


def limits_of(registry: Registry | None) -> Limits:
    """`registry`'s `[limits]`, or the defaults without a registry."""
    return registry.limits if registry is not None else DEFAULT_LIMITS


@attrs.frozen
class Budgets:
    """`[budget]`: the most a plan may cost before it is refused (E401); a command's options say otherwise."""

    max_usd: float | None = None
    max_calls: int | None = None
    max_inferences: int | None = None


@attrs.frozen
class Executor:
    """`[executor]`: where the Python tool calls of `map`, `filter` and `reduce` items (and of the steps an
    optimized schedule runs side by side) are made: in this process, or as tasks on a Ray cluster."""

    kind: str = EXECUTORS[0]
    address: str | None = None  # the Ray cluster's; None: $RAY_ADDRESS, else a local cluster of this machine


@attrs.frozen
class Root:
    """A folder planc offers an MCP server as a root: as planc.toml writes it, and where it is."""

    written: str  # from the folder of planc.toml, as the lock records it
    path: Path  # absolute, symlinks resolved


OAUTH_CLIENT_NAME = "planc"
MCP_TRANSPORTS = ("streamable-http", "sse")  # how a server at a URL is spoken to: the first unless it says `sse`


@attrs.frozen
class OAuthLogin:
    """`oauth` of a remote `[mcp.NAME]`: its tokens come from `planc registry login NAME` (an OAuth 2.1 flow),
    kept in the user's keyring or a private file, never in the project."""

    scopes: tuple[str, ...] = ()  # asked for; none: what the server's metadata says it supports
    client_name: str = OAUTH_CLIENT_NAME  # how planc names itself when it registers with the authorization server


@attrs.frozen
class McpServer:
    """`[mcp.NAME]`: a server started over stdio (`command`), or reached at its `url`, whose tools come from
    planc.lock.json."""

    name: str
    command: tuple[str, ...] = ()  # empty for a server at a URL
    env: Mapping[str, str] = attrs.field(factory=dict)  # over a minimal inherited environment
    url: str | None = None  # https:// (http:// only on loopback); None for a server planc starts
    transport: str = MCP_TRANSPORTS[0]
    # Header name -> value as planc.toml writes it: `$NAME` is read from the environment when planc connects
    # (`$$` writes `$`), so a token is never in planc.toml, the lock or any record (registry/mcp/mcp_credentials.py).
    headers: Mapping[str, str] = attrs.field(factory=dict)
    oauth: OAuthLogin | None = None
    trust_annotations: bool = False  # take the tools' MCP annotations as declared effects
    timeout_s: float | None = None  # each call of its tools; None: `[limits] timeout_s`
    idempotency_keys: bool = False  # its tools deduplicate calls by the idempotency key planc sends in `_meta`
    labels: frozenset[str] = UNTRUSTED_ONLY  # what its tools' results carry (registry/provenance/labels.py)
    rename: Mapping[str, str] = attrs.field(factory=dict)  # a tool's name on the wire -> its name in plans
    roots: tuple[Root, ...] = ()  # the folders offered as roots; none: planc does not declare roots at all
    allow_project_files: bool = False  # a root may hold planc.toml, the policy or the run store
    sampling: str | None = None  # the `[models]` role that answers its sampling requests; None: refused
    samples_per_call: int = SAMPLES_PER_CALL  # the most sampling requests one call of its tools may make

    @property
    def reached_as(self) -> str:
        """How messages name the server besides its name: its URL, or its command line."""
        import shlex

        return self.url if self.url is not None else f"`{shlex.join(self.command)}`"


JWT_ALGORITHMS = ("RS256", "ES256")  # the signatures `[mcp_server.auth]` takes unless `algorithms` says others
SIGNATURE_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


@attrs.frozen
class ServerAuth:
    """`[mcp_server.auth]`: `planc mcp --http` as an OAuth resource server. Every request carries a bearer token
    that `issuer` issued for `audience` with every one of `scopes`; the token's subject and claims are the Cedar
    principal whose policy judges that client's plans."""

    issuer: str
    scopes: tuple[str, ...]  # every one required
    audience: str | None = None  # None: the server's canonical URL (`resource_server_url`, else where it listens)
    jwks_url: str | None = None  # JWT access tokens, their signatures checked with the keys published here
    algorithms: tuple[str, ...] = JWT_ALGORITHMS  # of SIGNATURE_ALGORITHMS; never `none`, never a shared secret
    introspection_url: str | None = None  # else opaque tokens, asked about there (RFC 7662)
    client_id_env: str | None = None  # the environment variables of planc's credentials at the introspection
    client_secret_env: str | None = None  # endpoint
    principal_type: str = "User"  # a token of subject S is the principal `User::"S"`
    attributes: Mapping[str, str] = attrs.field(factory=dict)  # the principal's attribute -> the claim it is read from


@attrs.frozen
class McpServing:
    """`[mcp_server]`: what `planc mcp` makes of the plans its clients send and of their answers."""

    labels: frozenset[str] = UNTRUSTED_ONLY  # what a client's plan's literals and `$args` carry
    # Whether a client's accepted elicitation is a person's decision, which may let through a call the policy
    # refuses for where its values came from; false: such a call is refused whatever the client answers.
    answers_from_person: bool = False
    auth: ServerAuth | None = None  # None: no client is authenticated, so it serves this machine only
    resource_server_url: str | None = None  # the URL clients reach `--http` at (behind a proxy, the proxy's)
    allowed_hosts: tuple[str, ...] = ()  # `Host` values served besides the loopback names with the bound port
    allowed_origins: tuple[str, ...] = ()  # `Origin` values likewise


@attrs.frozen
class ModelConfig:
    """`[models.NAME]`: where the model of a role (or `default`) answers."""

    name: str  # the table's name: the role itself, or "default"
    base_url: str
    model: str
    provider: str = MODEL_PROVIDERS[0]
    api_key_env: str | None = None  # the environment variable holding the API key
    timeout_s: float = MODEL_TIMEOUT_S
    retries: int = MODEL_RETRIES  # more attempts after a transient failure (429, 5xx, a timeout)
    # What every request to this model carries (`max_tokens`, `temperature`, `top_p`, `seed`, `stop`),
    # as the request body spells it; a field left out is the server's to decide.
    sampling: Mapping[str, object] = attrs.field(factory=dict)
    # What its tokens cost, in dollars per million (`input_usd_per_million`, `output_usd_per_million`).
    input_usd_per_million: float = 0.0
    output_usd_per_million: float = 0.0

    def usd(self, input_tokens: float, output_tokens: float) -> float:
        """What an inference of `input_tokens` in and `output_tokens` out costs, in dollars.

        >>> ModelConfig("chat", "http://x/v1", "m", input_usd_per_million=0.5, output_usd_per_million=2).usd(1000, 500)
        0.0015
        """
        return (input_tokens * self.input_usd_per_million + output_tokens * self.output_usd_per_million) / 1e6

    def most_usd(self, input_tokens: float) -> float:
        """The most an inference of `input_tokens` in may cost: its reply is at most `max_tokens` long, and
        without `max_tokens` a priced reply has no bound (`math.inf`)."""
        most_out = self.sampling.get("max_tokens")
        if most_out is None:
            return math.inf if self.output_usd_per_million else self.usd(input_tokens, 0)
        return self.usd(input_tokens, cast(int, most_out))  # planc.toml's reader checked it is a whole number


@attrs.frozen
class PlanDeclaration:
    """`[plans.NAME]`: a plan file callable as the tool `plan__NAME`."""

    name: str
    file: Path  # absolute: the table's `file`, from the folder of planc.toml
    written: str  # `file` as planc.toml writes it, for messages
    params: Mapping[str, Mapping] = attrs.field(factory=dict)  # name -> JSON Schema; they type `$args`
    returns: Mapping | None = None
    description: str = ""
    labels: frozenset[str] = NO_LABELS  # what its result carries besides what its own steps' results carry
