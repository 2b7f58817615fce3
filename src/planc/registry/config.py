"""Load `planc.toml` (DESIGN section 5) into a Registry, or say exactly what is wrong with it.

The file is found by searching upward from the working directory, as
pyproject-based tools do; `--config` names it directly. Every problem is a
`ConfigError` naming the file, the line where the offending table or key is,
and what is wrong: TOML syntax, an unknown key, a schema that is not JSON
Schema, a `pipe` or `required` naming no parameter, a reserved name.
The tools of declared MCP servers come from `planc.lock.json` beside the file (lock.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from planc.registry.builtins import CONTROL_STEPS
from planc.registry.registry import Registry
from planc.registry.tool import Cost, Effects, Tool

CONFIG_NAME = "planc.toml"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
TOP_LEVEL = {"tools", "plans", "mcp", "models", "policy", "store"}
TOOL_KEYS = {"description", "provider", "pipe", "params", "required", "returns", "returns_at_most", "effects", "cost",
             "timeout_s"}
PLAN_KEYS = {"file", "description", "params", "returns"}
MCP_KEYS = {"command", "env", "trust_annotations", "timeout_s"}
MODEL_KEYS = {"provider", "base_url", "model", "api_key_env", "timeout_s"}
EFFECT_KEYS = {field.name for field in Effects.__attrs_attrs__}
COST_KEYS = {field.name for field in Cost.__attrs_attrs__}


class ConfigError(Exception):
    """A planc.toml that cannot be used: `file:line: message`."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


def find_config(start: Path) -> Path | None:
    """The nearest planc.toml in `start` or a folder above it."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def load_registry(path: Path, *, locked: bool = True) -> Registry:
    """The Registry that `path` declares; `locked=False` leaves out the MCP tools of the lock."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(path, None, f"cannot read it: {error.strerror}") from None
    return registry_from_text(text, path, locked=locked)


def registry_from_text(text: str, path: Path, *, locked: bool = True, lock_text: str | None = None) -> Registry:
    """The Registry declared by `text`, reported as if read from `path` (which need not exist).

    The MCP tools come from `lock_text` when given (a recorded run's copy), else from the lock beside `path`.
    """
    import tomllib  # only where there is a planc.toml: finding none, `planc check` never reads TOML

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+)", str(error))
        raise ConfigError(path, int(found.group(1)) if found else None, f"not valid TOML: {error}") from None
    return _Reader(path, text, locked, lock_text).registry(data)


class _Reader:
    def __init__(self, path: Path, text: str, locked: bool = True, lock_text: str | None = None) -> None:
        self.path, self.lines, self.locked, self.lock_text = path, text.split("\n"), locked, lock_text

    def fail(self, message: str, table: str | None = None, key: str | None = None):
        raise ConfigError(self.path, self.line_of(table, key), message)

    def line_of(self, table: str | None, key: str | None = None) -> int | None:
        """The line of `[table]` (or of `key` inside it, or of `table = ...` inline)."""
        if table is None:
            return None
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

    def registry(self, data: dict) -> Registry:
        self.only(data, TOP_LEVEL, None, "planc.toml")
        tools = {name: self.tool(name, table) for name, table in self.tables(data, "tools").items()}
        plans = self.tables(data, "plans")
        for name, table in plans.items():
            tools[f"plan__{name}"] = self.plan(name, table)
        mcp = self.tables(data, "mcp")
        for name, table in mcp.items():
            self.server(name, table)
        if self.locked:  # the MCP tools, as planc.lock.json beside this file has them
            from planc.registry.lock import load_locked_tools  # here: lock.py imports ConfigError from this module

            for name, tool in load_locked_tools(self.path, mcp, self.lock_text).items():
                tools.setdefault(name, tool)
        models = self.tables(data, "models")
        for name, table in models.items():
            self.only(table, MODEL_KEYS, f"models.{name}", f"model `{name}`")
        for key in ("policy", "store"):
            if key in data and not isinstance(data[key], str):
                self.fail(f"`{key}` must be a path (a string)", None)
        return Registry(tools=tools, source=self.path, mcp=mcp, plans=plans, models=models,
                        policy=data.get("policy"), store=data.get("store"))

    def tables(self, data: dict, key: str) -> dict:
        tables = data.get(key, {})
        if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
            self.fail(f"`{key}` must hold one table per name, like `[{key}.NAME]`", key)
        for name in tables:
            if not NAME.match(name) or "__" in name:
                self.fail(f"`{name}` cannot name a {key[:-1] if key != 'mcp' else 'server'}: names are letters, "
                          "digits and single underscores (`__` separates a server from its tool)", f"{key}.{name}")
        return tables

    def only(self, table: dict, allowed: set, where: str | None, what: str) -> None:
        for key in table:
            if key not in allowed:
                self.fail(f"unknown key `{key}` in {what}; the keys are {', '.join(sorted(allowed))}", where, key)

    def schema(self, schema, where: str, key: str, what: str) -> dict:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        if not isinstance(schema, dict):
            self.fail(f"{what} must be a JSON Schema (a table), not {type(schema).__name__}", where, key)
        try:
            validator_for(schema).check_schema(schema)
        except SchemaError as error:
            self.fail(f"{what} is not a valid JSON Schema: {error.message}", where, key)
        return schema

    def tool(self, name: str, table: dict) -> Tool:
        where = f"tools.{name}"
        if name in CONTROL_STEPS:
            self.fail(f"`{name}` is a control step: the name is reserved", where)
        self.only(table, TOOL_KEYS, where, f"tool `{name}`")
        params = self.params(table.get("params", {}), where, f"tool `{name}`")
        required = self.param_list(table.get("required", []), params, where, "required")
        pipe = self.param_name(table.get("pipe"), params, where, "pipe")
        bound = self.param_name(table.get("returns_at_most"), params, where, "returns_at_most")
        returns = self.schema(table["returns"], where, "returns", f"`returns` of `{name}`") if "returns" in table else None
        provider = self.text(table.get("provider", ""), where, "provider")
        timeout = table.get("timeout_s")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            self.fail("`timeout_s` must be a number of seconds above 0", where, "timeout_s")
        if "params" not in table and provider.startswith("python:"):
            return attrs.evolve(self.python_tool(name, provider, where), timeout_s=timeout)
        return Tool(name=name, params=params, required=required, pipe=pipe, returns=returns, returns_at_most=bound,
                    effects=self.effects(table["effects"], where) if "effects" in table else Effects(), cost=self.cost(table.get("cost", {}), where),
                    description=self.text(table.get("description", ""), where, "description"),
                    provider=provider, timeout_s=timeout)

    def python_tool(self, name: str, provider: str, where: str) -> Tool:
        """A tool whose parameters come from its `@planc.tool` function: the one case that imports it."""
        from planc.registry.python_tools import load_function_tool

        if provider.count(":") != 2:
            self.fail(f"`provider = {provider!r}` must be \"python:module:function\"", where, "provider")
        try:
            return load_function_tool(provider, name)
        except Exception as error:  # whatever importing user code raises, the config names it
            self.fail(f"cannot load `{provider}` to read its parameters: {type(error).__name__}: {error}",
                      where, "provider")

    def plan(self, name: str, table: dict) -> Tool:
        where = f"plans.{name}"
        self.only(table, PLAN_KEYS, where, f"plan `{name}`")
        if not isinstance(table.get("file"), str):
            self.fail(f"plan `{name}` needs `file`, the path of its plan text", where)
        params = self.params(table.get("params", {}), where, f"plan `{name}`")
        returns = self.schema(table["returns"], where, "returns", f"`returns` of plan `{name}`") if "returns" in table else None
        required = tuple(param for param, schema in params.items() if "default" not in schema)
        return Tool(name=f"plan__{name}", params=params, required=required, returns=returns,
                    description=table.get("description", ""), provider=f"plan:{name}")

    def server(self, name: str, table: dict) -> None:
        where = f"mcp.{name}"
        self.only(table, MCP_KEYS, where, f"MCP server `{name}`")
        command = table.get("command")
        if not (isinstance(command, list) and command and all(isinstance(part, str) for part in command)):
            self.fail(f"MCP server `{name}` needs `command`, a list of strings like [\"mcp-server-git\"]", where, "command")
        if not isinstance(table.get("trust_annotations", False), bool):
            self.fail("`trust_annotations` must be true or false", where, "trust_annotations")
        timeout = table.get("timeout_s", 60)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            self.fail("`timeout_s` must be a number of seconds above 0 (a tool call's timeout)", where, "timeout_s")

    def params(self, params, where: str, what: str) -> dict:
        if not isinstance(params, dict):
            self.fail(f"`params` of {what} must be a table of parameter name = JSON Schema", where, "params")
        for param, schema in params.items():
            if not NAME.match(param):
                self.fail(f"`{param}` cannot name a parameter", where, "params")
            self.schema(schema, where, "params", f"the schema of parameter `{param}` of {what}")
        return params

    def param_name(self, value, params: dict, where: str, key: str) -> str | None:
        if value is None:
            return None
        if value not in params:
            known = ", ".join(f"`{p}`" for p in params) or "none"
            self.fail(f"`{key} = {value!r}` names no parameter; the parameters are {known}", where, key)
        return value

    def param_list(self, values, params: dict, where: str, key: str) -> tuple[str, ...]:
        if not isinstance(values, list):
            self.fail(f"`{key}` must be a list of parameter names", where, key)
        return tuple(self.param_name(value, params, where, key) for value in values)

    def effects(self, table, where: str) -> Effects:
        if not isinstance(table, dict):
            self.fail("`effects` must be a table of true/false flags", where, "effects")
        self.only(table, EFFECT_KEYS, where, "`effects`")
        for key, value in table.items():
            if not isinstance(value, bool):
                self.fail(f"`effects.{key}` must be true or false", where, "effects")
        return Effects(**table, declared=True)

    def cost(self, table, where: str) -> Cost:
        if not isinstance(table, dict):
            self.fail("`cost` must be a table like { usd = 0.0, latency_ms = 40 }", where, "cost")
        self.only(table, COST_KEYS, where, "`cost`")
        for key, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                self.fail(f"`cost.{key}` must be a number >= 0", where, "cost")
        return Cost(**table)

    def text(self, value, where: str, key: str) -> str:
        if not isinstance(value, str):
            self.fail(f"`{key}` must be a string", where, key)
        return value
