"""`planc lsp`: a language server for plan files, over standard input and output (pygls).

- On open and on every change a document is checked as `planc check` checks its file: against the
  nearest planc.toml above it and that file's policy (project.py). Its diagnostics are published,
  syntax errors included, each with its code, its hints in the message, and its fix as a quick fix.
- Hover on a tool name shows its signature, description and effects; on a reference, the step it
  reads, that step's path and the types (describe.py).
- Completion offers tool names where a step starts, the parameters not yet given inside a step's
  parentheses, and the labels after `$` (cursor.py), from the text as typed, which need not parse.
- Go to definition takes `$2` or `$label` to its step; formatting is `planc fmt`'s canonical form.

Nothing a user types may stop the server: every handler is guarded, and one that raises is logged
(to standard error and to the client's log) and answers nothing.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from planc.diagnostics import Diagnostic, Severity, Span
from planc.lsp.cursor import Labels, Parameters, ToolName, completion_at, node_at
from planc.lsp.describe import reference_hover, tool_hover
from planc.lsp.positions import LineIndex
from planc.lsp.project import Projects
from planc.passes.check import CheckResult, check
from planc.registry.steps.builtins import CONTROL_STEPS
from planc.registry.tools.signatures import parameter, signature
from planc.syntax import ast
from planc.syntax.format import format_source
from planc.syntax.parser import parse
from planc.syntax.printer import WIDTH
from planc.version import installed_version

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from planc.registry.tools.tool import Tool

T = TypeVar("T")  # what a request's handler answers

log = logging.getLogger("planc.lsp")

# LSP's Diagnostic, named apart from planc's: tests/test_codes.py holds that a planc Diagnostic is
# made only by its builder, and finds the calls by the class's name.
LspDiagnostic = types.Diagnostic
SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.NOTE: types.DiagnosticSeverity.Information,
}
TRIGGERS = ["$", "(", ",", "|", "{"]  # where a client asks for completions before a word is typed


@attrs.frozen
class Checked:
    """A document's text as last checked, and the positions in it."""

    result: CheckResult
    index: LineIndex


class PlancServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("planc", installed_version())
        self.projects = Projects()
        self.checked: dict[str, Checked] = {}  # uri -> its latest check
        self.problems_shown: set[str] = set()  # planc.toml and policy problems already shown, once each
        self.shut_down = False  # `shutdown` came before `exit`: the exit code is then 0

    def encoding(self) -> str:
        """The position encoding agreed at `initialize`: "utf-16" unless the client offered another."""
        encoding = self.workspace.position_encoding  # a PositionEncodingKind or its plain string
        return str(getattr(encoding, "value", encoding) or "utf-16")

    def document(self, uri: str) -> TextDocument:
        """The document the client sent as `uri`; a LookupError for any other. The server reads no file for a
        document it was not sent: a FIFO or a device would stall it, and a huge file would swamp it."""
        document = self.workspace.text_documents.get(uri)
        if document is None:
            raise LookupError(f"{uri} is not an open document")
        return document

    def current(self, uri: str) -> Checked:
        """The check of the document's text as it is now: the last one, or a new one if it is stale."""
        source = self.document(uri).source
        checked = self.checked.get(uri)
        if checked is None or checked.result.source != source:
            checked = self.check(uri)
        return checked

    def check(self, uri: str) -> Checked:
        document = self.document(uri)
        path = document_path(uri)
        project = self.projects.for_document(path)
        if project.problem and project.problem not in self.problems_shown:
            self.problems_shown.add(project.problem)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=f"planc: {project.problem} (checking without it)")
            )
        result = check(document.source, registry=project.registry, policy=project.policy, arguments=project.arguments(path))
        checked = self.checked[uri] = Checked(result, LineIndex(document.source, self.encoding()))
        return checked

    def tools(self, uri: str) -> dict[str, Tool]:
        """The tools a document may call: its planc.toml's, or the control steps alone."""
        registry = self.projects.for_document(document_path(uri)).registry
        if registry is None:
            return dict(CONTROL_STEPS)
        return {name: tool for name in registry.names() if (tool := registry.lookup(name)) is not None}  # each is


def document_path(uri: str) -> Path | None:
    """The file of a `file:` document; None for an unsaved one, which is checked without a planc.toml."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(path) if path else None


def guarded(handler: Callable[[PlancServer, Any], T]) -> Callable[[PlancServer, Any], T | None]:
    """`handler`, except that an exception is logged and answered with nothing (None), never let
    through: one bad request must not cost the user the server."""

    @functools.wraps(handler)
    def run(ls: PlancServer, params: Any) -> T | None:
        try:
            return handler(ls, params)
        except Exception as error:
            log.exception("%s failed", handler.__name__)
            try:
                ls.window_log_message(
                    types.LogMessageParams(type=types.MessageType.Error, message=f"planc: {handler.__name__} failed: {error!r}")
                )
            except Exception:
                log.exception("could not tell the client")
            return None

    return run


# --- diagnostics


def publish(ls: PlancServer, uri: str) -> None:
    checked = ls.check(uri)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=uri,
            version=ls.document(uri).version,
            diagnostics=[lsp_diagnostic(d, checked.index) for d in checked.result.diagnostics],
        )
    )


def lsp_diagnostic(diagnostic: Diagnostic, index: LineIndex) -> LspDiagnostic:
    # The hints go in the message, as `help:` lines as `planc check` prints them: every client
    # shows a message, not all of them related information.
    message = "\n".join([diagnostic.message, *(f"help: {hint}" for hint in diagnostic.hints)])
    return LspDiagnostic(
        range=lsp_range(index, diagnostic.span),
        message=message,
        code=diagnostic.code,
        severity=SEVERITIES[diagnostic.severity],
        source="planc",
    )


def lsp_range(index: LineIndex, span: Span) -> types.Range:
    return types.Range(
        start=types.Position(*index.position(span.start_offset)), end=types.Position(*index.position(span.end_offset))
    )


def did_open(ls: PlancServer, params: types.DidOpenTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


def did_change(ls: PlancServer, params: types.DidChangeTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


def did_close(ls: PlancServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.checked.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def code_action(ls: PlancServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """A quick fix for each diagnostic with a fix that touches the range asked about."""
    only = params.context.only
    if only and not any(types.CodeActionKind.QuickFix.startswith(kind) for kind in only):
        return []
    uri = params.text_document.uri
    checked = ls.current(uri)
    index, source = checked.index, checked.result.source
    start = index.offset(params.range.start.line, params.range.start.character)
    end = index.offset(params.range.end.line, params.range.end.character)
    actions = []
    for diagnostic in checked.result.diagnostics:
        fix = diagnostic.fix
        if fix is None or diagnostic.span.start_offset > end or diagnostic.span.end_offset < start:
            continue
        edit = types.TextEdit(range=lsp_range(index, fix.span), new_text=fix.replacement)
        actions.append(
            types.CodeAction(
                title=f"{diagnostic.code}: {fix_title(fix.span.text(source), fix.replacement)}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[lsp_diagnostic(diagnostic, index)],
                edit=types.WorkspaceEdit(changes={uri: [edit]}),
                is_preferred=True,
            )
        )
    return actions


def fix_title(original: str, replacement: str) -> str:
    if not original:
        return f"insert `{replacement}`"
    if not replacement:
        return f"remove `{original}`"
    return f"replace `{original}` with `{replacement}`"


# --- what is under the cursor


def hover(ls: PlancServer, params: types.HoverParams) -> types.Hover | None:
    checked = ls.current(params.text_document.uri)
    node = _node_at(checked, params.position)
    if isinstance(node, ast.Step):
        resolution = checked.result.resolution  # a plan that parses is resolved
        tool = resolution.tools.get(node) if resolution is not None else None
        text, span = (tool_hover(tool) if tool else None), node.tool.span
    elif isinstance(node, ast.Ref):
        text, span = reference_hover(node, checked.result), node.span
    else:
        return None
    if text is None:
        return None
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=lsp_range(checked.index, span)
    )


def definition(ls: PlancServer, params: types.DefinitionParams) -> types.Location | None:
    checked = ls.current(params.text_document.uri)
    node = _node_at(checked, params.position)
    if not isinstance(node, ast.Ref):
        return None
    resolution = checked.result.resolution  # a plan that parses is resolved
    target = resolution.targets.get(node) if resolution is not None else None
    if not isinstance(target, ast.Step):  # `$args`, or a reference to nothing (E204)
        return None
    return types.Location(uri=params.text_document.uri, range=lsp_range(checked.index, target.span))


def _node_at(checked: Checked, position: types.Position) -> ast.Step | ast.Ref | None:
    """The tool name or reference at `position`; None when there is none or the text does not parse."""
    plan = checked.result.plan
    if plan is None:
        return None
    return node_at(plan, checked.index.offset(position.line, position.character))


def completion(ls: PlancServer, params: types.CompletionParams) -> types.CompletionList:
    uri = params.text_document.uri
    source = ls.document(uri).source
    offset = LineIndex(source, ls.encoding()).offset(params.position.line, params.position.character)
    wanted = completion_at(source, offset)
    items: list[types.CompletionItem] = []
    if isinstance(wanted, ToolName):
        items = [
            types.CompletionItem(
                label=name, kind=types.CompletionItemKind.Function, detail=signature(tool), documentation=tool.description or None
            )
            for name, tool in sorted(ls.tools(uri).items())
        ]
    elif isinstance(wanted, Parameters):
        tool = ls.tools(uri).get(wanted.tool)
        if tool is not None:
            left_out = wanted.given | ({tool.pipe} if wanted.piped and tool.pipe else set())
            items = [
                types.CompletionItem(
                    label=name,
                    kind=types.CompletionItemKind.Field,
                    detail=parameter(tool, name),
                    insert_text=f"{name}: ",
                    sort_text=f"{0 if name in tool.required else 1}{order:04}",
                )
                for order, name in enumerate(tool.params)
                if name not in left_out
            ]
    elif isinstance(wanted, Labels):
        items = [
            types.CompletionItem(label=label, kind=types.CompletionItemKind.Variable, detail=f"{tool}(…)")
            for label, tool in wanted.visible
        ]
    return types.CompletionList(is_incomplete=False, items=items)


# --- formatting


def formatting(ls: PlancServer, params: types.DocumentFormattingParams) -> list[types.TextEdit] | None:
    """The whole document in canonical form, as `planc fmt` prints it (its planc.toml's `[fmt] width`); nothing
    when it does not parse."""
    source = ls.document(params.text_document.uri).source
    parsed = parse(source)
    if not parsed.ok:
        return None
    registry = ls.projects.for_document(document_path(params.text_document.uri)).registry
    formatted = format_source(parsed, registry.fmt_width if registry is not None else WIDTH)
    if formatted == source:
        return []
    end = types.Position(*LineIndex(source, ls.encoding()).end())
    return [types.TextEdit(range=types.Range(start=types.Position(0, 0), end=end), new_text=formatted)]


def shutdown(ls: PlancServer, params: None) -> None:
    ls.shut_down = True


# Each feature: its LSP method, its options (None: pygls's defaults), its handler.
FEATURES = (
    (types.TEXT_DOCUMENT_DID_OPEN, None, did_open),
    (types.TEXT_DOCUMENT_DID_CHANGE, None, did_change),
    (types.TEXT_DOCUMENT_DID_CLOSE, None, did_close),
    (types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]), code_action),
    (types.TEXT_DOCUMENT_HOVER, None, hover),
    (types.TEXT_DOCUMENT_DEFINITION, None, definition),
    (types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=TRIGGERS), completion),
    (types.TEXT_DOCUMENT_FORMATTING, None, formatting),
    (types.SHUTDOWN, None, shutdown),
)


def make_server() -> PlancServer:
    server = PlancServer()
    for method, options, handler in FEATURES:
        server.feature(method, options)(guarded(handler))
    return server


def serve() -> int:
    """Serve one client over standard input and output until it says `exit` (or closes the pipe); the
    exit code LSP asks for: 0 after `shutdown`, else 1."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # The protocol owns the real standard output: a stray print (a tool module planc.toml makes
    # the check import) would corrupt it, so anything printed goes to standard error instead.
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="planc lsp: %(levelname)s %(message)s")
    server = make_server()
    server.start_io(stdin, stdout)
    return 0 if server.shut_down else 1
