"""Load `planc.toml` into a Registry of typed declarations, or say exactly what is wrong with it.

The file is found by searching upward from the working directory, as
pyproject-based tools do; `--config` names it directly. Every table becomes a
typed declaration here, once (`declarations.py` holds their defaults), so every
problem is found at load, before anything runs: a `ConfigError` naming the
file, the line of the offending table or key, and what is wrong. TOML syntax,
an unknown key (with the key that was probably meant), a value of the wrong
type, a schema that is not JSON Schema, a `pipe` or `required` naming no
parameter, a reserved name, a model that cannot be reached as declared.
The tools of declared MCP servers come from `planc.lock.json` beside the file (lock.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn, cast

import attrs

from planc.registry.loading.declared_plans import DeclaredPlans, tool_name
from planc.registry.loading.registry import Registry
from planc.registry.mcp.lock import load_locked_tools
from planc.registry.mcp.mcp_transport import url_problem
from planc.registry.provenance.labels import NO_LABELS, UNTRUSTED_ONLY, X_LABELS, label_set
from planc.registry.settings.config_file import CONFIG_NAME, find_config
from planc.registry.settings.declarations import (
    DEFAULT_MODEL_ROLE,
    EXECUTORS,
    JWT_ALGORITHMS,
    MCP_TRANSPORTS,
    MODEL_PROVIDERS,
    MODEL_RETRIES,
    MODEL_TIMEOUT_S,
    OAUTH_CLIENT_NAME,
    SAMPLES_PER_CALL,
    SIGNATURE_ALGORITHMS,
    STORE_PATH,
    TOOL_TIMEOUT_S,
    Budgets,
    Executor,
    Limits,
    McpServer,
    McpServing,
    ModelConfig,
    OAuthLogin,
    PlanDeclaration,
    Root,
    ServerAuth,
)
from planc.registry.settings.errors import ConfigError
from planc.registry.settings.format_settings import FmtTableError, fmt_width
from planc.registry.settings.schema_check import schema_error
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.registry.tools.tool import (
    PLANC_KINDS,
    Cost,
    Effects,
    Tool,
    provider_address,
    provider_kind,
)

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
TOP_LEVEL = {
    "tools",
    "plans",
    "mcp",
    "models",
    "policy",
    "store",
    "limits",
    "budget",
    "principal",
    "principals",
    "executor",
    "mcp_server",
    "fmt",
}
TOOL_KEYS = {
    "description",
    "provider",
    "pipe",
    "params",
    "required",
    "returns",
    "returns_at_most",
    "effects",
    "cost",
    "timeout_s",
    "query",
    "idempotency_key",
    "labels",
}
PLAN_KEYS = {"file", "description", "params", "returns", "labels"}
MCP_KEYS = {
    "command",
    "env",
    "url",
    "transport",
    "headers",
    "oauth",
    "trust_annotations",
    "timeout_s",
    "idempotency_keys",
    "rename",
    "roots",
    "allow_project_files",
    "sampling",
    "samples_per_call",
    "labels",
}
OAUTH_KEYS = {field.name for field in attrs.fields(OAuthLogin)}
MODEL_KEYS = {
    "provider",
    "base_url",
    "model",
    "api_key_env",
    "timeout_s",
    "retries",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "stop",
    "input_usd_per_million",
    "output_usd_per_million",
}
# What an SQL tool may do: read, nothing else (enforced when it runs).
SQL_EFFECTS = Effects(read_only=True, deterministic=False, idempotent=True, destructive=False, open_world=False, declared=True)
LIMIT_KEYS = {field.name for field in attrs.fields(Limits)}
BUDGET_KEYS = {field.name for field in attrs.fields(Budgets)}
EXECUTOR_KEYS = {field.name for field in attrs.fields(Executor)}
SERVING_KEYS = {field.name for field in attrs.fields(McpServing)}
AUTH_KEYS = {field.name for field in attrs.fields(ServerAuth)}
PRINCIPAL = re.compile(r'[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*::"(?:[^"\\]|\\.)*"\Z')
EFFECT_KEYS = {field.name for field in attrs.fields(Effects) if field.init and field.name != "declared"}
COST_KEYS = {field.name for field in attrs.fields(Cost)}

__all__ = ["CONFIG_NAME", "ConfigError", "find_config", "load_registry", "registry_from_text"]


def load_registry(path: str | Path, *, locked: bool = True) -> Registry:
    """The Registry that `path` declares; `locked=False` leaves out the MCP tools of the lock."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(path, None, f"cannot read it: {getattr(error, 'strerror', None) or error}") from None
    return registry_from_text(text, path, locked=locked)


def registry_from_text(
    text: str,
    path: str | Path,
    *,
    locked: bool = True,
    lock_text: str | None = None,
    code_tools: Mapping[str, Tool] | None = None,
) -> Registry:
    """The Registry declared by `text`, reported as if read from `path` (which need not exist).

    The MCP tools come from `lock_text` when given (a recorded run's copy), else from the lock beside `path`.
    A tool declared in code (`@planc.tool`, no `params` in its table) or by an SQL query comes from
    `code_tools` when given (a recorded run keeps them), so its module is not imported, nor its database read.

    >>> registry_from_text('[models.default]\\nbase_url = 5\\nmodel = "m"', Path("planc.toml"))
    Traceback (most recent call last):
    planc.registry.settings.errors.ConfigError: planc.toml:2: `base_url` of model `default` must be a string, not int
    """
    import tomllib  # only where there is a planc.toml: finding none, `planc check` never reads TOML

    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+)", str(error))
        raise ConfigError(path, int(found.group(1)) if found else None, f"not valid TOML: {error}") from None
    return _Reader(path, text, code_tools).registry(data, locked, lock_text)


class _Reader:
    def __init__(self, path: Path, text: str, code_tools: Mapping[str, Tool] | None = None) -> None:
        self.path, self.lines, self.code_tools = path, text.split("\n"), code_tools
        self.folder = path.parent.resolve()

    def fail(self, message: str, table: str | None = None, key: str | None = None) -> NoReturn:
        raise ConfigError(self.path, self.line_of(table, key), message)

    def line_of(self, table: str | None, key: str | None = None) -> int | None:
        """The line of `[table]` (or of `key` inside it, or of `table = ...` inline); of a top-level `key`."""
        if table is None:
            if key is None:
                return None
            top = re.compile(
                r"\s*(" + re.escape(key) + r'|"' + re.escape(key) + r'")\s*=|\s*\[\[?\s*' + re.escape(key) + r"\s*[.\]]"
            )
            return next((n + 1 for n, line in enumerate(self.lines) if top.match(line)), None)
        header = re.compile(r"\s*\[\s*" + r"\s*\.\s*".join(re.escape(p) for p in table.split(".")) + r"\s*\]")
        inline = re.compile(r"\s*" + re.escape(table.split(".")[-1]) + r"\s*=")
        start = next((n for n, line in enumerate(self.lines) if header.match(line)), None)
        if start is None:
            parent = table.rsplit(".", 1)[0] if "." in table else None
            start = (self.line_of(parent) or 1) - 1
            start = next((n for n in range(start, len(self.lines)) if inline.match(self.lines[n])), start)
            return start + 1
        if key is not None:
            pattern = re.compile(r"\s*(" + re.escape(key) + r'|"' + re.escape(key) + r'")\s*[=.]')
            for number in range(start + 1, len(self.lines)):
                if self.lines[number].lstrip().startswith("["):
                    break
                if pattern.match(self.lines[number]):
                    return number + 1
        return start + 1

    # --- the file

    def registry(self, data: dict, locked: bool, lock_text: str | None) -> Registry:
        self.only(data, TOP_LEVEL, None, "planc.toml")
        limits = self.limits(data.get("limits", {}))
        server_tables = self.tables(data, "mcp")
        tools = {}
        for name, table in self.tables(data, "tools").items():
            self.tool_name(name, server_tables)
            tools[name] = self.tool(name, table)
        plans = {name: self.plan(name, table) for name, table in self.tables(data, "plans").items()}
        for plan in plans.values():
            tools[tool_name(plan.name)] = Tool(
                name=tool_name(plan.name),
                params=plan.params,
                required=tuple(p for p, s in plan.params.items() if "default" not in s),
                returns=plan.returns,
                description=plan.description,
                provider=f"plan:{plan.name}",
                labels=plan.labels,
            )
        servers = {name: self.server(name, table) for name, table in server_tables.items()}
        if locked:  # the MCP tools, as planc.lock.json beside this file has them
            for name, tool in load_locked_tools(self.path, servers, lock_text).items():
                tools.setdefault(name, tool)
        models = {name: self.model(name, table) for name, table in self.tables(data, "models").items()}
        self.sampling_roles(servers, models)
        policy, store = self.path_value(data, "policy"), self.store(data)
        self.roots_reach(servers, policy, store)
        return Registry(
            tools=tools,
            source=self.path,
            servers=servers,
            plans=DeclaredPlans(plans),
            models=models,
            policy=policy,
            store=store,
            limits=limits,
            budget=self.budget(data.get("budget", {})),
            principal=self.principal(data),
            principals=self.principals(data.get("principals", {})),
            executor=self.executor(data.get("executor", {})),
            mcp_server=self.serving(data.get("mcp_server", {})),
            fmt_width=self.fmt(data),
        )

    def tables(self, data: dict, key: str) -> dict:
        tables = data.get(key, {})
        if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
            self.fail(f"`{key}` must hold one table per name, like `[{key}.NAME]`", None, key)
        what = key[:-1] if key != "mcp" else "server"
        for name in tables:
            if not NAME.match(name):
                self.fail(f"`{name}` cannot name a {what}: names are letters, digits and underscores", f"{key}.{name}")
            if "__" in name and key != "tools":
                self.fail(
                    f"`{name}` cannot name a {what}: `__` separates a server from its tool, so a {what}'s name has no `__`",
                    f"{key}.{name}",
                )
        return tables

    def tool_name(self, name: str, servers: dict) -> None:
        """A tool's name may have `__` (graph-style registries name tools `builtin__git_diff`), unless the part
        before it is a declared MCP server's, or `plan`: those names are the server's tools and the plans."""
        owner = name.split("__", 1)[0] if "__" in name else None
        if owner is not None and (owner in servers or owner == "plan"):
            whose = f"MCP server `{owner}`" if owner in servers else "declared plans (`plan__NAME`)"
            self.fail(f"`{name}` cannot name a tool: names that start with `{owner}__` are the {whose}'s", f"tools.{name}")

    def path_value(self, data: dict, key: str) -> Path | None:
        if key not in data:
            return None
        if not isinstance(data[key], str) or not data[key]:
            self.fail(f"`{key}` must be a path (a string), relative to the folder of planc.toml", None, key)
        return self.folder / data[key]

    def store(self, data: dict) -> Path | None:
        """`store`: an SQLite file, from the folder of planc.toml, or "postgresql:$NAME", a PostgreSQL database
        whose DSN is in the environment variable NAME (never in this file)."""
        declared = data.get("store")
        if isinstance(declared, str) and declared.startswith("postgresql:"):
            from planc.registry.tools.postgres_tools import PROVIDER

            if not PROVIDER.match(declared):
                self.fail(
                    '`store` names a PostgreSQL run store as "postgresql:$NAME": its DSN is read from the '
                    "environment variable NAME, never written in planc.toml",
                    None,
                    "store",
                )
            return Path(declared)
        return self.path_value(data, "store")

    def only(self, table: dict, allowed: set, where: str | None, what: str) -> None:
        for key in table:
            if key not in allowed:
                import difflib  # only a mistake pays for it

                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                meant = f"did you mean `{close[0]}`? " if close else ""
                self.fail(f"unknown key `{key}` in {what}; {meant}the keys are {', '.join(sorted(allowed))}", where, key)

    # --- values

    def schema(self, schema: object, where: str, key: str, what: str) -> dict:
        if not isinstance(schema, dict):
            self.fail(f"{what} must be a JSON Schema (a table), not {type(schema).__name__}", where, key)
        wrong = schema_error(schema)
        if wrong is not None:
            self.fail(f"{what} is not a valid JSON Schema: {wrong[0]}", where, key)
        self.schema_labels(schema, where, key, what)
        return schema

    def schema_labels(self, schema: object, where: str, key: str, what: str) -> None:
        """Every `x-labels` in `schema` is a list of label names."""
        if isinstance(schema, dict):
            if X_LABELS in schema:
                self.label_names(schema[X_LABELS], where, key, f"`{X_LABELS}` in {what}")
            parts: Iterable = schema.values()
        elif isinstance(schema, list):
            parts = schema
        else:
            return
        for part in parts:
            if isinstance(part, (dict, list)):
                self.schema_labels(part, where, key, what)

    def label_names(self, value: object, where: str, key: str, what: str) -> frozenset[str]:
        if not isinstance(value, list) or not all(isinstance(name, str) and NAME.match(name) for name in value):
            self.fail(f'{what} must be a list of label names, like ["untrusted"] or [] (trusted), found {value!r}', where, key)
        return label_set(value)

    def labels(self, table: dict, where: str, default: frozenset[str]) -> frozenset[str]:
        """`labels = [...]`: what the results carry; left out, `default`."""
        if "labels" not in table:
            return default
        return self.label_names(table["labels"], where, "labels", "`labels`")

    def params(self, params: object, where: str, what: str) -> dict:
        if not isinstance(params, dict):
            self.fail(f"`params` of {what} must be a table of parameter name = JSON Schema", where, "params")
        for param, schema in params.items():
            if not NAME.match(param):
                self.fail(f"`{param}` cannot name a parameter", where, "params")
            self.schema(schema, where, "params", f"the schema of parameter `{param}` of {what}")
        return params

    def param_name(self, value: Any, params: Mapping, where: str, key: str) -> str:
        if value not in params:
            known = ", ".join(f"`{p}`" for p in params) or "none"
            self.fail(f"`{key} = {value!r}` names no parameter; the parameters are {known}", where, key)
        return value

    def param_list(self, values: object, params: Mapping, where: str, key: str) -> tuple[str, ...]:
        if not isinstance(values, list):
            self.fail(f"`{key}` must be a list of parameter names", where, key)
        return tuple(self.param_name(value, params, where, key) for value in values)

    def text(self, table: dict, key: str, where: str, what: str, default: str = "") -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            self.fail(f"`{key}` of {what} must be a string, not {type(value).__name__}", where, key)
        return value

    def seconds(self, table: dict, key: str, where: str, default: float | None) -> float | None:
        value = table.get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            self.fail(f"`{key}` must be a number of seconds above 0, found {value!r}", where, key)
        return float(value) if value is not None else None

    def flag(self, table: dict, key: str, where: str) -> bool:
        value = table.get(key, False)
        if not isinstance(value, bool):
            self.fail(f"`{key}` must be true or false", where, key)
        return value

    def effects(self, table: object, where: str) -> Effects:
        if not isinstance(table, dict):
            self.fail("`effects` must be a table of true/false flags", where, "effects")
        self.only(table, EFFECT_KEYS, where, "`effects`")
        for key, value in table.items():
            if not isinstance(value, bool):
                self.fail(f"`effects.{key}` must be true or false", where, "effects")
        return Effects(**table, declared=True)

    def cost(self, table: object, where: str) -> Cost:
        if not isinstance(table, dict):
            self.fail("`cost` must be a table like { usd = 0.0, latency_ms = 40 }", where, "cost")
        self.only(table, COST_KEYS, where, "`cost`")
        for key, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                self.fail(f"`cost.{key}` must be a number >= 0", where, "cost")
        return Cost(**table)

    # --- the tables

    def budget(self, table: object) -> Budgets:
        if not isinstance(table, dict):
            self.fail("`budget` must be a table, like `[budget]` with `max_calls = 100`", None, "budget")
        self.only(table, BUDGET_KEYS, "budget", "`[budget]`")
        for key, value in table.items():
            whole = key != "max_usd"
            if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or value < 0:
                kind = "a whole number" if whole else "a number"
                self.fail(f"`{key}` must be {kind} of at least 0, found {value!r}", "budget", key)
        return Budgets(**table)

    def fmt(self, data: dict) -> int:
        try:
            return fmt_width(data.get("fmt", {}))
        except FmtTableError as error:
            self.fail(error.message, "fmt" if error.key else None, error.key or "fmt")

    def executor(self, table: object) -> Executor:
        if not isinstance(table, dict):
            self.fail('`executor` must be a table, like `[executor]` with `kind = "ray"`', None, "executor")
        self.only(table, EXECUTOR_KEYS, "executor", "`[executor]`")
        kind = table.get("kind", EXECUTORS[0])
        if kind not in EXECUTORS:
            self.fail(f"`kind` must be one of {', '.join(map(repr, EXECUTORS))}, found {kind!r}", "executor", "kind")
        address = table.get("address")
        if address is not None and (not isinstance(address, str) or not address):
            self.fail(
                f'`address` must be a Ray cluster\'s address, like "10.0.0.5:6379", found {address!r}', "executor", "address"
            )
        return Executor(kind, address)

    def serving(self, table: object) -> McpServing:
        if not isinstance(table, dict):
            self.fail('`mcp_server` must be a table, like `[mcp_server]` with `labels = ["untrusted"]`', None, "mcp_server")
        self.only(table, SERVING_KEYS, "mcp_server", "`[mcp_server]`")
        url = table.get("resource_server_url")
        if url is not None and not (isinstance(url, str) and url.startswith("https://") and "#" not in url):
            self.fail(
                f"`resource_server_url` must be the https:// URL clients reach `planc mcp --http` at, like "
                f'"https://plans.example.org/mcp", found {url!r}',
                "mcp_server",
                "resource_server_url",
            )
        hosts = {
            key: self.strings(table, key, "mcp_server", example)
            for key, example in (("allowed_hosts", '["plans.example.org"]'), ("allowed_origins", '["https://app.example.org"]'))
        }
        return McpServing(
            self.labels(table, "mcp_server", UNTRUSTED_ONLY),
            self.flag(table, "answers_from_person", "mcp_server"),
            auth=self.server_auth(table["auth"]) if "auth" in table else None,
            resource_server_url=url,
            **hosts,
        )

    def strings(self, table: dict, key: str, where: str, example: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            self.fail(f"`{key}` must be a list of strings, like {example}", where, key)
        return tuple(value)

    def server_auth(self, table: object) -> ServerAuth:
        """`[mcp_server.auth]`: who issues the tokens `planc mcp --http` takes, how it checks them, and the principal
        each token names."""
        where = "mcp_server.auth"
        if not isinstance(table, dict):
            self.fail("`auth` of `[mcp_server]` must be a table, `[mcp_server.auth]`", "mcp_server", "auth")
        self.only(table, AUTH_KEYS, where, "`[mcp_server.auth]`")
        for key in ("issuer", "scopes"):
            if key not in table:
                self.fail(
                    f"`[mcp_server.auth]` needs `{key}`: "
                    + (
                        "the authorization server's issuer URL"
                        if key == "issuer"
                        else 'the scopes every token must hold, like ["plans"]'
                    ),
                    where,
                )
        urls = {}
        for key in ("issuer", "audience", "jwks_url", "introspection_url"):
            value = table.get(key)
            if value is not None and not (isinstance(value, str) and value.startswith(("https://", "http://"))):
                self.fail(f"`{key}` must be an https:// URL, found {value!r}", where, key)
            if key in ("jwks_url", "introspection_url") and value is not None and url_problem(value) is not None:
                self.fail(f"`{key}` {url_problem(value)}, found {value!r}", where, key)
            urls[key] = value
        if (urls["jwks_url"] is None) == (urls["introspection_url"] is None):
            self.fail(
                "`[mcp_server.auth]` checks tokens one way: `jwks_url` (JWT access tokens, their signatures "
                "checked with the published keys) or `introspection_url` (RFC 7662), not both nor neither",
                where,
            )
        scopes = self.strings(table, "scopes", where, '["plans"]')
        if not scopes:
            self.fail("`scopes` must name at least one scope every token holds", where, "scopes")
        algorithms = self.strings(table, "algorithms", where, '["RS256", "ES256"]') if "algorithms" in table else JWT_ALGORITHMS
        for algorithm in algorithms:
            if algorithm not in SIGNATURE_ALGORITHMS:
                why = (
                    " (an unsigned token, or one signed with a secret the verifier holds too, is forged by whoever learns it)"
                    if algorithm.lower() == "none" or algorithm.upper().startswith("HS")
                    else ""
                )
                self.fail(
                    f"`algorithms` names {algorithm!r}, which planc does not take{why}; the algorithms are "
                    f"{', '.join(SIGNATURE_ALGORITHMS)}",
                    where,
                    "algorithms",
                )
        if not algorithms:
            self.fail("`algorithms` must name at least one signature algorithm", where, "algorithms")
        variables = {}
        for key in ("client_id_env", "client_secret_env"):
            value = table.get(key)
            if value is not None and not (isinstance(value, str) and NAME.match(value)):
                self.fail(f"`{key}` must name an environment variable, found {value!r}", where, key)
            variables[key] = value
        if urls["introspection_url"] is not None and None in variables.values():
            self.fail(
                "`introspection_url` needs `client_id_env` and `client_secret_env`: the environment variables "
                "that hold planc's own credentials at the introspection endpoint",
                where,
                "introspection_url",
            )
        kind = table.get("principal_type", "User")
        if not (isinstance(kind, str) and NAME.match(kind)) or kind == "Tool":
            self.fail(f'`principal_type` must be a Cedar entity type, like "User", found {kind!r}', where, "principal_type")
        attributes = table.get("attributes", {})
        if not isinstance(attributes, dict) or not all(
            NAME.match(name) and isinstance(claim, str) and claim for name, claim in attributes.items()
        ):
            self.fail(
                "`attributes` must be a table from an attribute of the principal to the claim it is read from, "
                'like { org = "org_id" }',
                where,
                "attributes",
            )
        return ServerAuth(
            issuer=cast(str, urls["issuer"]),
            scopes=scopes,
            audience=urls["audience"],
            jwks_url=urls["jwks_url"],
            algorithms=algorithms,
            introspection_url=urls["introspection_url"],
            **variables,
            principal_type=kind,
            attributes=dict(attributes),
        )

    def principal(self, data: dict) -> str | None:
        value = data.get("principal")
        if value is not None and (not isinstance(value, str) or not PRINCIPAL.match(value)):
            self.fail(f"`principal` must be a Cedar entity like 'User::\"alice\"', found {value!r}", None, "principal")
        return value

    def principals(self, table: object) -> tuple[dict, ...]:
        """`[principals.'User::"alice"']`: each principal's `attributes` and `groups` (their values are checked
        against what a policy can hold when the policy is loaded)."""
        if not isinstance(table, dict) or not all(isinstance(value, dict) for value in table.values()):
            self.fail("`principals` must hold one table per entity, like `[principals.'User::\"alice\"']`", None, "principals")
        declared = []
        for uid, entry in table.items():
            where = f"principals.{uid}"
            if not PRINCIPAL.match(uid):
                self.fail(f"`[principals]` names {uid!r}, which is not a Cedar entity like 'User::\"alice\"'", None, "principals")
            self.only(entry, {"attributes", "groups"}, where, f"`[principals.'{uid}']`")
            attributes, groups = entry.get("attributes", {}), entry.get("groups", [])
            if not isinstance(attributes, dict):
                self.fail(f'`attributes` of {uid} must be a table, like `{{ org = "acme" }}`', None, "principals")
            if not isinstance(groups, list) or not all(isinstance(g, str) and PRINCIPAL.match(g) for g in groups):
                self.fail(f"`groups` of {uid} must be a list of Cedar entities, like ['Group::\"staff\"']", None, "principals")
            declared.append({"uid": uid, "attributes": attributes, "groups": groups})
        return tuple(declared)

    def limits(self, table: object) -> Limits:
        if not isinstance(table, dict):
            self.fail("`limits` must be a table, like `[limits]` with `timeout_s = 30`", None, "limits")
        self.only(table, LIMIT_KEYS, "limits", "`[limits]`")
        for key, unit in (("result_bytes", "bytes"), ("plan_bytes", "bytes"), ("regex_chars", "characters")):
            value = table.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                self.fail(f"`{key}` must be a whole number of {unit} above 0, found {value!r}", "limits", key)
        return Limits(**{**table, "timeout_s": self.seconds(table, "timeout_s", "limits", TOOL_TIMEOUT_S)})

    def tool(self, name: str, table: dict) -> Tool:
        where, what = f"tools.{name}", f"tool `{name}`"
        if name in CONTROL_STEPS:
            reserved = "a pure step" if name in PURE_STEPS else "a control step"
            self.fail(f"`{name}` is {reserved} planc runs itself: the name is reserved", where)
        self.only(table, TOOL_KEYS, where, what)
        provider = self.text(table, "provider", where, what)
        kind = provider_kind(provider)
        if kind in PLANC_KINDS:
            self.fail(
                f"`provider = {provider!r}` is for planc's own steps and declared plans (`[plans.NAME]`); "
                'a tool\'s provider is "python:module:function", "sql:PATH" or "postgresql:$NAME" (an MCP '
                "server's tools come from `[mcp.NAME]`)",
                where,
                "provider",
            )
        if kind in ("sql", "postgresql") or "query" in table:
            tool = self.sql_tool(name, provider, table, where)
        elif "params" not in table and kind == "python":
            tool = self.python_tool(name, provider, where)  # its parameters from the function's signature
        else:
            tool = Tool(name=name, params=self.params(table.get("params", {}), where, what), provider=provider)
        if "idempotency_key" in table:
            tool = self.key_parameter(tool, table, where)
        params = tool.params
        declared: dict = {}  # what the table says, over what the function declares
        if "required" in table:
            declared["required"] = self.param_list(table["required"], params, where, "required")
        for key in ("pipe", "returns_at_most"):
            if key in table:
                declared[key] = self.param_name(table[key], params, where, key)
        if "returns" in table:
            declared["returns"] = self.schema(table["returns"], where, "returns", f"`returns` of `{name}`")
        if "effects" in table:
            declared["effects"] = self.effects(table["effects"], where)
        if "cost" in table:
            declared["cost"] = self.cost(table["cost"], where)
        if "description" in table:
            declared["description"] = self.text(table, "description", where, what)
        if "timeout_s" in table:  # else `[limits] timeout_s`, when it is called
            declared["timeout_s"] = self.seconds(table, "timeout_s", where, None)
        if "labels" in table:  # else `untrusted`, or what its `@planc.tool` function declares
            declared["labels"] = self.labels(table, where, UNTRUSTED_ONLY)
        return attrs.evolve(tool, **declared)

    def key_parameter(self, tool: Tool, table: dict, where: str) -> Tool:
        """`idempotency_key = "PARAM"`: the Python function's parameter that receives each call's idempotency
        key. planc fills it, so it is not a parameter of the plan's."""
        if tool.kind != "python":
            self.fail(
                "`idempotency_key` names the parameter of a Python function that receives each call's "
                "idempotency key; an MCP server's tools take it in `_meta` (`idempotency_keys = true` in "
                "its `[mcp.NAME]` table says they deduplicate by it)",
                where,
                "idempotency_key",
            )
        key = table["idempotency_key"]
        if not isinstance(key, str) or not NAME.match(key):
            self.fail(f"`idempotency_key` must name a parameter of the function, found {key!r}", where, "idempotency_key")
        if key in table.get("params", {}):
            self.fail(
                f"`{key}` receives each call's idempotency key, which planc gives: it cannot be one of "
                "the `params` a plan gives too",
                where,
                "params",
            )
        return attrs.evolve(
            tool,
            idempotency_key=key,
            params={p: s for p, s in tool.params.items() if p != key},
            required=tuple(p for p in tool.required if p != key),
        )

    def sql_tool(self, name: str, provider: str, table: dict, where: str) -> Tool:
        """A tool that runs one read-only query: its parameters are the query's, its result the rows.
        The query is prepared here, against the database, so its mistakes are planc.toml's."""
        from planc.registry.tools.sql_tools import SqlError, query_parameters

        if provider_kind(provider) not in ("sql", "postgresql") or not provider_address(provider):
            self.fail(
                '`query` is for SQL tools: `provider` must be "sql:PATH", an SQLite database, or '
                '"postgresql:$NAME", a PostgreSQL database whose DSN is in the environment variable NAME',
                where,
                "provider",
            )
        if not isinstance(table.get("query"), str) or not table["query"].strip():
            self.fail(f"SQL tool `{name}` needs `query`, the SELECT it runs", where, "query")
        if "effects" in table:
            self.fail("an SQL tool only reads, and planc makes sure of it: it takes no `effects`", where, "effects")
        if self.code_tools is not None and name in self.code_tools:  # as a recorded run kept it: no database read
            return self.code_tools[name]
        query = table["query"]
        try:
            if provider_kind(provider) == "postgresql":
                from planc.registry.tools.postgres_tools import TOKENS, prepare

                names = query_parameters(query, TOKENS)
                columns, typed = prepare(provider, query)
            else:
                from planc.registry.tools.sql_tools import prepare as prepare_sqlite

                path = self.folder / provider_address(provider)
                provider = f"sql:{path}"
                names = query_parameters(query)
                columns, typed = dict.fromkeys(prepare_sqlite(path, query), {}), {}
        except SqlError as error:
            self.fail(f"the query of SQL tool `{name}` cannot be used: {error}", where, "query")
        declared = table.get("params")
        params = self.params(declared, where, f"tool `{name}`") if declared is not None else typed or {n: {} for n in names}
        if set(params) != set(names):
            missing, extra = sorted(set(names) - set(params)), sorted(set(params) - set(names))
            said = [f"the query reads {', '.join(f':{n}' for n in missing)}, which `params` does not declare"] if missing else []
            said += [f"`params` declares {', '.join(extra)}, which the query does not read"] if extra else []
            self.fail(f"SQL tool `{name}`: {'; and '.join(said)}", where, "params")
        for param, schema in params.items():
            wanted, given = typed.get(param, {}).get("type"), schema.get("type")
            fits = {wanted, "null", *(("integer",) if wanted == "number" else ())}
            if wanted and given and not set([given] if isinstance(given, str) else given) <= fits:
                self.fail(
                    f"SQL tool `{name}`: `params` says :{param} is {given}, and the database reads it as {wanted}",
                    where,
                    "params",
                )
        rows = {"type": "array", "items": {"type": "object", "properties": dict(columns)}}
        return Tool(
            name=name,
            params=params,
            required=tuple(p for p, s in params.items() if "default" not in s),
            returns=rows,
            effects=SQL_EFFECTS,
            provider=provider,
            query=query,
        )

    def python_tool(self, name: str, provider: str, where: str) -> Tool:
        """A tool whose parameters come from its `@planc.tool` function: the one case that imports it."""
        from planc.registry.tools.python_tools import load_function_tool

        if provider_address(provider).count(":") != 1:  # "module:function"
            self.fail(f'`provider = {provider!r}` must be "python:module:function"', where, "provider")
        if self.code_tools is not None:  # as a recorded run kept it
            if name not in self.code_tools:
                self.fail(f"the run kept no declaration of `{name}`, whose parameters come from its code", where)
            return self.code_tools[name]
        try:
            return load_function_tool(provider, name, self.folder)
        except Exception as error:  # whatever importing user code raises, the config names it
            self.fail(f"cannot load `{provider}` to read its parameters: {type(error).__name__}: {error}", where, "provider")

    def plan(self, name: str, table: dict) -> PlanDeclaration:
        where, what = f"plans.{name}", f"plan `{name}`"
        self.only(table, PLAN_KEYS, where, what)
        if not isinstance(table.get("file"), str) or not table["file"]:
            self.fail(f"plan `{name}` needs `file`, the path of its plan text", where, "file")
        params = self.params(table.get("params", {}), where, what)
        returns = self.schema(table["returns"], where, "returns", f"`returns` of {what}") if "returns" in table else None
        return PlanDeclaration(
            name=name,
            file=self.folder / table["file"],
            written=table["file"],
            params=params,
            returns=returns,
            description=self.text(table, "description", where, what),
            labels=self.labels(table, where, NO_LABELS),
        )

    def server(self, name: str, table: dict) -> McpServer:
        where = f"mcp.{name}"
        self.only(table, MCP_KEYS, where, f"MCP server `{name}`")
        if "url" in table:
            reached = self.remote(name, table, where)
        else:
            command = table.get("command")
            if not (isinstance(command, list) and command and all(isinstance(part, str) for part in command)):
                self.fail(
                    f'MCP server `{name}` needs `command`, a list of strings like ["mcp-server-git"] (a '
                    'server planc starts), or `url`, like "https://example.org/mcp" (a server it reaches)',
                    where,
                    "command",
                )
            for key in ("transport", "headers", "oauth"):
                if key in table:
                    self.fail(f"`{key}` is for a server at a `url`; MCP server `{name}` is started by its `command`", where, key)
            env = table.get("env", {})
            if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
                self.fail(
                    '`env` must be a table of environment variables whose values are strings, like { GIT_DIR = "." }',
                    where,
                    "env",
                )
            reached = {"command": tuple(command), "env": env}
        return McpServer(
            name=name,
            **reached,
            trust_annotations=self.flag(table, "trust_annotations", where),
            timeout_s=self.seconds(table, "timeout_s", where, None),
            idempotency_keys=self.flag(table, "idempotency_keys", where),
            allow_project_files=self.flag(table, "allow_project_files", where),
            labels=self.labels(table, where, UNTRUSTED_ONLY),
            **self.client(table, where),
        )

    def remote(self, name: str, table: dict, where: str) -> dict:
        """A server at a URL: `url`, `transport`, `headers` (their `$NAME`s read when planc connects), `oauth`."""
        from planc.registry.mcp.mcp_credentials import template_variables

        for key in ("command", "env"):
            if key in table:
                self.fail(
                    f"MCP server `{name}` is reached at its `url`, so planc does not start it: it takes no `{key}`", where, key
                )
        url = table["url"]
        problem = url_problem(url) if isinstance(url, str) else "must be a string"
        if problem is not None:
            self.fail(f"`url` of MCP server `{name}` {problem}, found {url!r}", where, "url")
        transport = table.get("transport", MCP_TRANSPORTS[0])
        if transport not in MCP_TRANSPORTS:
            self.fail(
                f"`transport` must be one of {', '.join(map(repr, MCP_TRANSPORTS))}, found {transport!r}", where, "transport"
            )
        headers = table.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(value, str) for value in headers.values()):
            self.fail(
                "`headers` must be a table of header names and string values, like "
                '{ Authorization = "Bearer $TOKEN" } ($TOKEN is read from the environment)',
                where,
                "headers",
            )
        for header, value in headers.items():
            try:
                template_variables(value)
            except ValueError as error:
                self.fail(f"the header `{header}` of MCP server `{name}`: {error}", where, "headers")
        oauth = self.oauth(table, where) if "oauth" in table else None
        if oauth is not None and any(header.lower() == "authorization" for header in headers):
            self.fail(
                f"MCP server `{name}` takes its `Authorization` from `oauth` (`planc registry login {name}`); "
                "drop the header, or `oauth`",
                where,
                "headers",
            )
        return {"url": url, "transport": transport, "headers": headers, "oauth": oauth}

    def oauth(self, table: dict, where: str) -> OAuthLogin | None:
        """`oauth = true`, or `oauth = { scopes = [...], client_name = "..." }`."""
        value = table["oauth"]
        if isinstance(value, bool):
            return OAuthLogin() if value else None
        if not isinstance(value, dict):
            self.fail('`oauth` must be true, or a table like { scopes = ["read"] }', where, "oauth")
        self.only(value, OAUTH_KEYS, where, "`oauth`")
        scopes = value.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(scope, str) and scope and " " not in scope for scope in scopes):
            self.fail('`scopes` of `oauth` must be a list of scope names, like ["read", "write"]', where, "oauth")
        return OAuthLogin(scopes=tuple(scopes), client_name=self.text(value, "client_name", where, "`oauth`", OAUTH_CLIENT_NAME))

    def client(self, table: dict, where: str) -> dict:
        """What planc, as the server's client, offers it: names for its tools, roots, a sampling role."""
        rename = table.get("rename", {})
        if not isinstance(rename, dict) or not all(
            isinstance(new, str) and NAME.match(new) and "__" not in new for new in rename.values()
        ):
            self.fail(
                "`rename` must be a table from a tool's name on the server to a name a plan can write "
                '(letters, digits and underscores, no `__`), like { "get-sum" = "add" }',
                where,
                "rename",
            )
        roots = table.get("roots", [])
        if not isinstance(roots, list) or not all(isinstance(root, str) and root for root in roots):
            self.fail('`roots` must be a list of folders, like ["data"] (from the folder of planc.toml)', where, "roots")
        sampling = table.get("sampling")
        if sampling is not None and not (isinstance(sampling, str) and NAME.match(sampling)):
            self.fail('`sampling` must name a `[models]` role, like "chat"', where, "sampling")
        most = table.get("samples_per_call", SAMPLES_PER_CALL)
        if isinstance(most, bool) or not isinstance(most, int) or most < 1:
            self.fail(f"`samples_per_call` must be a whole number from 1, found {most!r}", where, "samples_per_call")
        return {
            "rename": dict(rename),
            "roots": tuple(Root(root, (self.folder / root).resolve()) for root in roots),
            "sampling": sampling,
            "samples_per_call": most,
        }

    def roots_reach(self, servers: Mapping[str, McpServer], policy: Path | None, store: Path | None) -> None:
        """No root holds planc.toml, the policy or the run store, unless its server's `allow_project_files` says
        it may: a server may read and write what its roots hold, and these judge it and record what it did."""
        named = {
            "planc.toml": self.path,
            "the policy": policy,
            "the run store": self.folder / STORE_PATH if store is None else store,
        }
        files = {
            what: file.resolve() for what, file in named.items() if file is not None and not str(file).startswith("postgresql:")
        }
        for name, server in servers.items():
            for root in () if server.allow_project_files else server.roots:
                held = [
                    what if what == file.name else f"{what} ({file.relative_to(root.path)})"
                    for what, file in files.items()
                    if file.is_relative_to(root.path)
                ]
                if held:
                    listed = held[0] if len(held) == 1 else f"{', '.join(held[:-1])} and {held[-1]}"
                    self.fail(
                        f"the root `{root.written}` of MCP server `{name}` ({root.path}) holds {listed}: a "
                        "server may read and write what its roots hold, so it could rewrite what judges it "
                        "and the record of what it did. Offer a folder that holds none of them, or set "
                        f"`allow_project_files = true` in [mcp.{name}]",
                        f"mcp.{name}",
                        "roots",
                    )

    def sampling_roles(self, servers: Mapping[str, McpServer], models: Mapping) -> None:
        """A server's `sampling` role is one `[models]` answers: its own table, or `[models.default]`."""
        for name, server in servers.items():
            if server.sampling is not None and server.sampling not in models and DEFAULT_MODEL_ROLE not in models:
                self.fail(
                    f'`sampling = "{server.sampling}"` names a role no `[models.{server.sampling}]` (nor '
                    "`[models.default]`) declares",
                    f"mcp.{name}",
                    "sampling",
                )

    def model(self, name: str, table: dict) -> ModelConfig:
        where, what = f"models.{name}", f"model `{name}`"
        self.only(table, MODEL_KEYS, where, what)
        api = self.text(table, "provider", where, what, MODEL_PROVIDERS[0])  # the model's API, not a tool's kind
        if api not in MODEL_PROVIDERS:
            self.fail(
                f"`provider = {api!r}` of {what} is not supported; the providers are "
                f"{', '.join(MODEL_PROVIDERS)} (any OpenAI-compatible endpoint, named by `base_url`)",
                where,
                "provider",
            )
        for key, meaning in (
            ("base_url", 'the URL of an OpenAI-compatible API, like "http://127.0.0.1:8000/v1"'),
            ("model", "the model's name at that API"),
        ):
            if key not in table:
                self.fail(f"{what} needs `{key}`, {meaning}", where)
            if not self.text(table, key, where, what):
                self.fail(f"`{key}` of {what} is empty: it must be {meaning}", where, key)
        if not table["base_url"].startswith(("http://", "https://")):
            self.fail(f"`base_url` of {what} must be an http:// or https:// URL, found {table['base_url']!r}", where, "base_url")
        api_key_env = table.get("api_key_env")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            self.fail(f"`api_key_env` of {what} must name an environment variable", where, "api_key_env")
        retries = table.get("retries", MODEL_RETRIES)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            self.fail(f"`retries` of {what} must be a whole number from 0 to 10, found {retries!r}", where, "retries")
        prices = {}
        for key in ("input_usd_per_million", "output_usd_per_million"):
            price = table.get(key, 0.0)
            if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 <= price < float("inf"):
                self.fail(f"`{key}` of {what} must be a number of dollars, at least 0, found {price!r}", where, key)
            prices[key] = float(price)
        return ModelConfig(
            name=name,
            base_url=table["base_url"],
            model=table["model"],
            provider=api,
            api_key_env=api_key_env,
            timeout_s=cast(float, self.seconds(table, "timeout_s", where, MODEL_TIMEOUT_S)),
            retries=retries,
            sampling=self.sampling(table, where, what),
            **prices,
        )

    def sampling(self, table: dict, where: str, what: str) -> dict:
        """The request fields of a model's table, each checked as OpenAI's API defines it."""
        found: dict = {}
        whole = lambda value: isinstance(value, int) and not isinstance(value, bool)  # noqa: E731
        number = lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)  # noqa: E731
        checks = (
            ("max_tokens", lambda v: whole(v) and v >= 1, "a whole number of at least 1"),
            ("temperature", lambda v: number(v) and 0 <= v <= 2, "a number from 0 to 2"),
            ("top_p", lambda v: number(v) and 0 < v <= 1, "a number above 0 and at most 1"),
            ("seed", whole, "a whole number"),
            (
                "stop",
                lambda v: (
                    isinstance(v, str)
                    and v
                    or isinstance(v, list)
                    and 0 < len(v) <= 4
                    and all(isinstance(s, str) and s for s in v)
                ),
                "a string, or a list of 1 to 4 strings, none empty",
            ),
        )
        for key, valid, meaning in checks:
            if key in table:
                if not valid(table[key]):
                    self.fail(f"`{key}` of {what} must be {meaning}, found {table[key]!r}", where, key)
                found[key] = table[key]
        return found
