"""The architecture the folders promise: layers that only import downward, backend folders that import only
the folders they name, no import cycles, every control step known to every stage that handles control
steps, and a tool's kind read in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"

# Bottom to top: a module may import from its own layer and the layers below it, never above.
LAYERS = (
    ("syntax", "diagnostics", "gc_pause", "version", "run_error", "clock"),
    ("registry",),
    ("analysis",),
    ("passes",),
    ("optimize", "diff", "pictures", "decoding"),
    ("store",),  # below the run: what a run tells the store is the backend's (backend/run/recorders.py)
    ("backend", "planning"),
    ("cli", "lsp", "mcp_server", "corpus", "explain", "project", "adapters", "__init__"),
)

# Inside the backend, one folder per job; a folder imports itself and the folders named here, nothing else.
BACKEND_FOLDERS = {
    "state": (),  # a run's values and errors, and whether it must stop
    "report": (),  # events, progress, traces: they read events, never the run
    "calls": ("state",),  # the one dispatch and what makes a call
    "models": ("state", "calls"),  # an inference is recorded as a call
    "run": ("state", "calls", "models", "report"),  # the interpreter, the session, a recorded run, a batch
}

# Inside the registry, likewise: one folder per job, importing itself and the folders named here.
REGISTRY_FOLDERS = {
    "provenance": (),  # labels: where values came from
    "tools": ("provenance",),  # the one Tool shape and the kinds of tool
    "steps": ("provenance", "tools"),  # the built-in steps: control and pure
    "settings": ("provenance",),  # what planc.toml declares, typed, with its defaults
    "mcp": ("provenance", "tools", "settings"),  # the lock, sync, transport, credentials, login
    "loading": ("provenance", "tools", "steps", "settings", "mcp"),  # planc.toml into a Registry
}
FOLDERS = {"backend": BACKEND_FOLDERS, "registry": REGISTRY_FOLDERS}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The planc modules `source` (the module `name`) imports, lazy imports inside functions included;
    imports only made for type checkers (under `if TYPE_CHECKING:`) are not imports at run time."""
    tree = ast.parse(source)
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # `from planc.x import y` imports the module planc.x.y when there is one
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        pending.extend(ast.iter_child_nodes(node))
    return {module for module in found if module in known and module != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    files = {module_name(path, root): path for path in root.rglob("*.py")}
    known = set(files)
    return {
        name: imported_modules(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
        for name, path in files.items()
    }


def layer_of(module: str) -> int:
    parts = module.split(".")
    component = parts[1] if len(parts) > 1 else "__init__"
    for number, layer in enumerate(LAYERS):
        if component in layer:
            return number
    raise AssertionError(f"{module} is in no layer: add `{component}` to LAYERS")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def folder_of(module: str) -> tuple[str, str] | None:
    """The package with folders (`backend`, `registry`) and the folder of it `module` is in; None
    outside them. A module of such a package in no folder of FOLDERS is an error, so that a new
    folder or a module left at the top is a decision (the package's own `__init__` aside)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] not in FOLDERS:
        return None
    folders = FOLDERS[parts[1]]
    if parts[2] not in folders:
        raise AssertionError(
            f"{module} is in no {parts[1]} folder: put it in one, or add `{parts[2]}` to {parts[1].upper()}_FOLDERS"
        )
    return parts[1], parts[2]


def folder_crossings(graph: dict[str, set[str]]) -> list[str]:
    """The imports from one folder of a package into another that its FOLDERS table forbids."""
    found = []
    for module, targets in graph.items():
        here = folder_of(module)
        for target in targets:
            there = folder_of(target)
            if here and there and here[0] == there[0] and there != here and there[1] not in FOLDERS[here[0]][here[1]]:
                found.append(f"{module} ({here[1]}/) imports {target} ({there[1]}/)")
    return sorted(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(import_graph(SOURCE)) == []


def test_each_backend_and_registry_folder_imports_only_the_folders_it_names():
    assert folder_crossings(import_graph(SOURCE)) == []


def test_there_is_no_import_cycle():
    assert cycles(import_graph(SOURCE)) == []


def test_the_checks_find_an_upward_import_and_a_cycle(tmp_path):
    """The two tests above can fail: a syntax module that imports the CLI, and two modules importing each
    other lazily, are both found."""
    package = tmp_path / "planc"
    (package / "syntax").mkdir(parents=True)
    (package / "cli").mkdir()
    for init in (package / "__init__.py", package / "syntax" / "__init__.py", package / "cli" / "__init__.py"):
        init.write_text("")
    (package / "syntax" / "lexer.py").write_text("def lex():\n    from planc.cli import commands\n")
    (package / "cli" / "commands.py").write_text("from planc.syntax.lexer import lex\n")
    (package / "syntax" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planc.cli.commands import x\n"
    )
    graph = import_graph(tmp_path)
    assert upward_imports(graph) == ["planc.syntax.lexer (layer 0) imports planc.cli.commands (layer 7)"]
    assert cycles(graph) == [["planc.cli.commands", "planc.syntax.lexer"]]


def test_the_backend_check_finds_a_call_that_imports_the_interpreter(tmp_path):
    """A module of `calls/` that imports `run/` (lazily) crosses the backend's folders the wrong way, and a
    backend module outside every folder is refused."""
    backend = tmp_path / "planc" / "backend"
    for folder in ("calls", "run"):
        (backend / folder).mkdir(parents=True)
        (backend / folder / "__init__.py").write_text("")
    (tmp_path / "planc" / "__init__.py").write_text("")
    (backend / "__init__.py").write_text("")
    (backend / "run" / "interpreter.py").write_text("from planc.backend.calls.dispatch import call\n")
    (backend / "calls" / "dispatch.py").write_text("def call():\n    from planc.backend.run import interpreter\n")
    assert folder_crossings(import_graph(tmp_path)) == [
        "planc.backend.calls.dispatch (calls/) imports planc.backend.run.interpreter (run/)"
    ]
    (backend / "loose.py").write_text("")
    with pytest.raises(AssertionError, match="planc.backend.loose is in no backend folder"):
        folder_crossings(import_graph(tmp_path))


def test_the_registry_check_finds_a_tool_that_imports_the_loading_of_planc_toml(tmp_path):
    """A module of `tools/` that imports `loading/` crosses the registry's folders the wrong way;
    `loading/` importing `tools/` is the right way."""
    registry = tmp_path / "planc" / "registry"
    for folder in ("tools", "loading"):
        (registry / folder).mkdir(parents=True)
        (registry / folder / "__init__.py").write_text("")
    (tmp_path / "planc" / "__init__.py").write_text("")
    (registry / "__init__.py").write_text("")
    (registry / "loading" / "config.py").write_text("from planc.registry.tools.tool import Tool\n")
    (registry / "tools" / "tool.py").write_text("def kind():\n    from planc.registry.loading import config\n")
    assert folder_crossings(import_graph(tmp_path)) == [
        "planc.registry.tools.tool (tools/) imports planc.registry.loading.config (loading/)"
    ]


@pytest.mark.parametrize("stage", ["types", "cost", "run"])
def test_every_control_step_has_a_rule_in_every_stage(stage):
    from planc.backend.run.steps import CONTROL_HANDLERS
    from planc.passes.cost.cost import COST_RULES
    from planc.passes.types.control_steps import TYPE_RULES
    from planc.registry.steps.builtins import CONTROL_STEPS

    table = {"types": TYPE_RULES, "cost": COST_RULES, "run": CONTROL_HANDLERS}[stage]
    assert sorted(table) == sorted(CONTROL_STEPS)


def test_each_control_step_is_one_declaration_and_one_handler_of_the_same_name():
    """A control step is two modules: `registry/steps/NAME.py` (its signature and its type, cost and flow
    rules, as `STEP`) and `backend/run/steps/NAME.py` (its handler, `run_NAME`); each side finds its
    modules itself, so the two folders hold the same names and nothing else lists them."""
    import pkgutil

    import planc.backend.run.steps as handlers
    from planc.registry.steps.builtins import CONTROL_DECLARATIONS

    declared = {name for name, step in CONTROL_DECLARATIONS.items() if step.tool.kind == "control"}
    handled = {module.name for module in pkgutil.iter_modules(handlers.__path__)}
    assert declared == handled
    assert list(CONTROL_DECLARATIONS) == ["map", "filter", "reduce", "decide", "exit", "agent", "ask", "reshape"]
    assert all(handlers.CONTROL_HANDLERS[name].__name__ == f"run_{name}" for name in declared)


def test_every_control_step_has_a_flow_rule_or_carries_only_what_any_call_carries():
    """A control step whose result carries more than its arguments' labels (a block's results, a condition,
    what an agent read) has its own rule in the flow pass; the others are listed as carrying only what any
    call carries, so that a new control step is a decision, not an omission."""
    from planc.passes.flow.rules import CALL_RULE, FLOW_RULES
    from planc.registry.steps.builtins import CONTROL_STEPS

    assert not set(FLOW_RULES) & CALL_RULE
    assert sorted(set(FLOW_RULES) | CALL_RULE) == sorted(CONTROL_STEPS)
    # planc's own steps add no label of their own: what they return carries only what they were given
    assert {name: step.labels for name, step in CONTROL_STEPS.items() if step.labels} == {}


# The one module that reads a tool's `provider` text: everything else asks `Tool.kind` (or `Tool.address`).
PROVIDER_READER = "planc.registry.tools.tool"
TEXT_METHODS = {"startswith", "endswith", "split", "rsplit", "partition", "rpartition", "removeprefix", "find", "index", "count"}


def _is_provider(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "provider") or (isinstance(node, ast.Name) and node.id == "provider")


def provider_text_tests(source: str) -> list[int]:
    """The lines of `source` that test a provider's text: compare it, cut it, look into it, or name the old
    `"builtin"` provider."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(map(_is_provider, (node.left, *node.comparators))):
            found.add(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in TEXT_METHODS
            and _is_provider(node.func.value)
        ):
            found.add(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_provider(node.value):
            found.add(node.lineno)
        elif isinstance(node, ast.Constant) and node.value == "builtin":
            found.add(node.lineno)
    return sorted(found)


def test_no_module_but_the_tools_tests_a_providers_text():
    found = [
        f"{module_name(path, SOURCE)}:{line}"
        for path in sorted(SOURCE.rglob("*.py"))
        if module_name(path, SOURCE) != PROVIDER_READER
        for line in provider_text_tests(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_provider_check_finds_each_way_of_reading_the_text():
    source = (
        "a = tool.provider.startswith('plan:')\n"
        "b = provider == 'x'\n"
        "c = tool.provider[len('sql:'):]\n"
        "d = 'builtin'\n"
        "e = tool.kind == 'plan' and tool.address\n"
        "f = config.provider_name == 'x'\n"
    )
    assert provider_text_tests(source) == [1, 2, 3, 4]


def test_the_run_and_its_session_have_what_calls_and_models_read_of_them():
    """`calls/` and `models/` know the run only by the protocols of `calls/run_view.py`; the interpreter's `Run`
    and its `Session` have every member those name, so a member renamed on one side fails here, not mid-run."""
    import planc
    from planc.backend.calls.hooks import Hooks
    from planc.backend.calls.run_view import Recorder, RunSession, RunView
    from planc.backend.run.interpreter import Run
    from planc.backend.run.recorders import Recorder as StoreRecorder
    from planc.backend.run.session import Session

    def members(protocol: type) -> set[str]:
        return {name for name in (*vars(protocol).get("__annotations__", {}), *vars(protocol)) if not name.startswith("_")}

    checked = planc.check("reshape(value: 1)")
    session = Session(checked, None)
    run = Run(checked, session, Hooks(), None, 'User::"anonymous"')
    assert {name for name in members(RunView) if not hasattr(run, name)} == set()
    assert {name for name in members(RunSession) if not hasattr(session, name)} == set()
    # `run_id` and `redactor` are what each store recorder sets in its `__init__`.
    assert {name for name in members(Recorder) if not hasattr(StoreRecorder, name)} - {"run_id", "redactor"} == set()


# What the backend reads of the passes at run time: the checked plan, the policy's engine (the same
# decision and the same words as the check's), the budget, and the target of `$args`. The labels of a
# value are the registry's and the analyses' (registry/provenance/, analysis/result_labels.py), never
# the flow pass's walk.
BACKEND_READS_OF_THE_PASSES = {
    "planc.passes.check",
    "planc.passes.policy.load",
    "planc.passes.policy.decide",
    "planc.passes.policy.denial",
    "planc.passes.cost.budget",
    "planc.passes.cost.cost_words",
    "planc.passes.resolve.resolve",
}


def test_the_backend_reads_of_the_passes_only_what_a_run_shares_with_the_check():
    graph = import_graph(SOURCE)
    found = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("planc.backend.")
        for target in targets
        if target.startswith("planc.passes.") and target not in BACKEND_READS_OF_THE_PASSES
    )
    assert found == []
