"""The architecture the folders promise: layers that only import downward, backend folders that import only
the folders they name, no import cycles, and every control step known to every stage that handles control
steps."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"

# Bottom to top: a module may import from its own layer and the layers below it, never above.
LAYERS = (
    ("syntax", "diagnostics", "gc_pause", "version", "clock"),
    ("registry",),
    ("analysis",),
    ("passes",),
    ("optimize", "diff", "pictures", "decoding"),
    ("backend", "store", "planning"),
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
    return {name: imported_modules(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
            for name, path in files.items()}


def layer_of(module: str) -> int:
    parts = module.split(".")
    component = parts[1] if len(parts) > 1 else "__init__"
    for number, layer in enumerate(LAYERS):
        if component in layer:
            return number
    raise AssertionError(f"{module} is in no layer: add `{component}` to LAYERS")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
                  for module, targets in graph.items() for target in targets if layer_of(target) > layer_of(module))


def backend_folder(module: str) -> str | None:
    """The backend folder `module` is in (None outside the backend); a backend module in no folder of
    BACKEND_FOLDERS is an error, so that a new folder or a module left at the top is a decision."""
    parts = module.split(".")
    if parts[1:2] != ["backend"] or len(parts) == 2:
        return None
    if parts[2] not in BACKEND_FOLDERS:
        raise AssertionError(f"{module} is in no backend folder: put it in one, or add `{parts[2]}` to BACKEND_FOLDERS")
    return parts[2]


def backend_crossings(graph: dict[str, set[str]]) -> list[str]:
    """The imports from one backend folder into another that BACKEND_FOLDERS does not allow."""
    found = []
    for module, targets in graph.items():
        folder = backend_folder(module)
        for target in targets:
            other = backend_folder(target)
            if folder and other and other != folder and other not in BACKEND_FOLDERS[folder]:
                found.append(f"{module} ({folder}/) imports {target} ({other}/)")
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


def test_each_backend_folder_imports_only_the_folders_it_names():
    assert backend_crossings(import_graph(SOURCE)) == []


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
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planc.cli.commands import x\n")
    graph = import_graph(tmp_path)
    assert upward_imports(graph) == ["planc.syntax.lexer (layer 0) imports planc.cli.commands (layer 6)"]
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
    assert backend_crossings(import_graph(tmp_path)) == [
        "planc.backend.calls.dispatch (calls/) imports planc.backend.run.interpreter (run/)"]
    (backend / "loose.py").write_text("")
    with pytest.raises(AssertionError, match="planc.backend.loose is in no backend folder"):
        backend_crossings(import_graph(tmp_path))


@pytest.mark.parametrize("stage", ["types", "cost", "run"])
def test_every_control_step_has_a_rule_in_every_stage(stage):
    from planc.backend.run.control_steps import CONTROL_HANDLERS
    from planc.passes.cost.cost import COST_RULES
    from planc.passes.types.control_steps import TYPE_RULES
    from planc.registry.builtins import CONTROL_STEPS

    table = {"types": TYPE_RULES, "cost": COST_RULES, "run": CONTROL_HANDLERS}[stage]
    assert sorted(table) == sorted(CONTROL_STEPS)


def test_every_control_step_has_a_flow_rule_or_carries_only_what_any_call_carries():
    """A control step whose result carries more than its arguments' labels (a block's results, a condition,
    what an agent read) has its own rule in the flow pass; the others are listed as carrying only what any
    call carries, so that a new control step is a decision, not an omission."""
    from planc.passes.flow.rules import CALL_RULE, FLOW_RULES
    from planc.registry.builtins import CONTROL_STEPS

    assert not set(FLOW_RULES) & CALL_RULE
    assert sorted(set(FLOW_RULES) | CALL_RULE) == sorted(CONTROL_STEPS)
    # planc's own steps add no label of their own: what they return carries only what they were given
    assert {name: step.labels for name, step in CONTROL_STEPS.items() if step.labels} == {}
