"""An AgentDojo suite as a planc registry: the suite's functions are planc's tools, bound to a live environment.

    from adapter import Suite
    suite = Suite.load("banking")
    registry = suite.registry(model_url)           # planc.toml's effects and labels over the functions
    suite.live.environment = environment           # what the tools read and change from now on

Each tool's parameters, result and description come from the function itself (AgentDojo's own
`Function`: the pydantic model of its arguments, its return type and its docstring); what it may do
(`effects`) and what its results carry (`labels`) come from the suite's planc.toml, beside its Cedar
policy and its plans, in bench/agentdojo/suites/<suite>/. A call goes through AgentDojo's
`FunctionsRuntime`, as an agent's would, against `Live.environment`, and is appended to
`Live.calls`, the trace AgentDojo's `utility_from_traces` and `security_from_traces` read.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import attrs
from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from planc.registry.loading.config import registry_from_text
from planc.registry.settings.declarations import ModelConfig
from planc.registry.tools.tool import Tool

HERE = Path(__file__).resolve().parent
SUITES = ("banking", "slack", "travel", "workspace")
VERSION = "v1.2.2"  # the package's default benchmark version: 949 (user task, injection task) pairs
MODULE = "planc_agentdojo_live"  # the module the tools' providers name: `python:planc_agentdojo_live:<tool>`

BOUND: dict = {}  # a tool's name: its call on the environment of the suite loaded last


def provider(name: str):
    """The function `python:planc_agentdojo_live:NAME` names: it calls NAME of the suite loaded last, whenever
    it was looked up (planc looks a provider up once in a process)."""

    def call(**args):
        return BOUND[name](**args)

    call.__name__ = name
    return call


@attrs.define
class Live:
    """The environment the tools act on, and the calls made on it, in order."""

    runtime: FunctionsRuntime
    environment: object = None
    calls: list = attrs.Factory(list)

    def bind(self, name: str):
        def call(**args):
            self.calls.append(FunctionCall(function=name, args=dict(args)))
            result, _ = self.runtime.run_function(self.environment, name, args, raise_on_error=True)
            return to_jsonable_python(result)

        call.__name__ = name
        return call


@attrs.frozen
class Suite:
    name: str
    task_suite: object  # agentdojo's TaskSuite
    live: Live

    @classmethod
    def load(cls, name: str) -> Suite:
        task_suite = get_suite(VERSION, name)
        live = Live(FunctionsRuntime(task_suite.tools))
        module = sys.modules.setdefault(MODULE, types.ModuleType(MODULE))
        for function in task_suite.tools:  # one suite at a time: the providers name the last one loaded
            BOUND[function.name] = live.bind(function.name)
            if not hasattr(module, function.name):
                setattr(module, function.name, provider(function.name))
        return cls(name, task_suite, live)

    @property
    def folder(self) -> Path:
        return HERE / "suites" / self.name

    def tools(self) -> dict[str, Tool]:
        """Every function of the suite as a planc tool, before planc.toml's effects and labels."""
        return {function.name: tool_of(function) for function in self.task_suite.tools}

    def registry(self, model_url: str | None = None, declarations: str | None = None):
        """The suite's registry: planc.toml (or `declarations`, a text in its place) over the functions; `model_url`
        answers the agent steps."""
        toml = self.folder / "planc.toml"
        registry = registry_from_text(toml.read_text() if declarations is None else declarations, toml, code_tools=self.tools())
        undeclared = sorted(set(self.tools()) - set(registry.tools))
        if undeclared:
            raise SystemExit(f"{toml}: declares no effects and labels for {', '.join(undeclared)}")
        if model_url is None:
            return registry
        # The agent steps' role (`chat`) is the scripted model; a `[models.ROLE]` the suite's planc.toml declares
        # (a planner for `run.py --planner ROLE`) stays.
        return attrs.evolve(registry, models={**registry.models, "chat": ModelConfig("chat", model_url, "scripted")})


def tool_of(function) -> Tool:
    """The planc tool of an AgentDojo `Function` (its effects and labels are planc.toml's to say)."""
    schema = inline(function.parameters.model_json_schema())
    params = {name: without_titles(part) for name, part in schema.get("properties", {}).items()}
    returns = None
    if function.return_type is not None:
        returns = without_titles(inline(TypeAdapter(function.return_type).json_schema())) or None
    return Tool(
        name=function.name,
        params=params,
        required=tuple(schema.get("required", ())),
        returns=returns,
        description=function.description.strip(),
        provider=f"python:{MODULE}:{function.name}",
    )


def inline(schema: dict) -> dict:
    """`schema` with its `$ref`s to `$defs` replaced by what they name (AgentDojo's types are not recursive)."""
    definitions = schema.get("$defs", {})

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(definitions[node["$ref"].rsplit("/", 1)[1]])
            return {key: walk(value) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(schema)


def without_titles(schema):
    """`schema` without pydantic's `title`s: a parameter's name already says it."""
    if isinstance(schema, dict):
        return {key: without_titles(value) for key, value in schema.items() if not (key == "title" and isinstance(value, str))}
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    return schema
