"""`planc lsp` (docs/editor.md), driven over JSON-RPC on its standard streams by pygls's own client
(lsp_client.py): a real process, as an editor starts it.

Most tests share one server, as an editor's documents do, each test with documents of its own in
its own folder (and so its own planc.toml, or none). Ranges are written out by hand: LSP's lines
are 0-based and its characters UTF-16 code units.
"""

from __future__ import annotations

import sys

import pytest
from cli import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_client import LspSession
from lsprotocol import types
from profiles import examples

from planc.lsp.positions import LineIndex
from planc.syntax.format import format_source
from planc.syntax.parser import parse

TOOLS = """\
policy = "policy.cedar"

[tools.search]
description = "Full-text search over incidents"
params = { query = { type = "string" }, limit = { type = "integer", minimum = 1, maximum = 100, default = 20 } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" }, title = { type = "string" } } } }
effects = { read_only = true, deterministic = true, idempotent = true, destructive = false, open_world = false }

[tools.summarize]
description = "A summary of items"
pipe = "items"
params = { items = { type = "array" }, style = { enum = ["bullets", "prose"], default = "bullets" }, title = { type = "string" } }
required = ["items"]
returns = { type = "object", properties = { text = { type = "string" } } }
effects = { read_only = true, destructive = false }

[tools.close_incident]
description = "Close an incident"
params = { id = { type = "string" } }
required = ["id"]
effects = { destructive = true }
"""
POLICY = """\
permit(principal, action == Action::"call", resource);
@id("no-destructive")
forbid(principal, action, resource) when { resource.destructive };
"""


@pytest.fixture(scope="module")
def lsp(tmp_path_factory):
    with LspSession(tmp_path_factory.mktemp("lsp")) as session:
        yield session


@pytest.fixture
def project(tmp_path):
    """A folder with a planc.toml (search, summarize, close_incident) and its policy (nothing destructive)."""
    (tmp_path / "planc.toml").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "policy.cedar").write_text(POLICY, encoding="utf-8")
    return tmp_path


def span(start_line: int, start: int, end_line: int, end: int) -> types.Range:
    return types.Range(start=types.Position(start_line, start), end=types.Position(end_line, end))


def position(uri: str, line: int, character: int) -> dict:
    return {"text_document": types.TextDocumentIdentifier(uri=uri), "position": types.Position(line, character)}


def hover(lsp: LspSession, uri: str, line: int, character: int) -> str | None:
    found = lsp.request("text_document_hover", types.HoverParams(**position(uri, line, character)))
    return found.contents.value if found else None


def completions(lsp: LspSession, uri: str, line: int, character: int) -> dict[str, types.CompletionItem]:
    found = lsp.request("text_document_completion", types.CompletionParams(**position(uri, line, character)))
    return {item.label: item for item in found.items}


def definition(lsp: LspSession, uri: str, line: int, character: int):
    return lsp.request("text_document_definition", types.DefinitionParams(**position(uri, line, character)))


def formatting(lsp: LspSession, uri: str):
    edits = lsp.request(
        "text_document_formatting",
        types.DocumentFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=uri), options=types.FormattingOptions(tab_size=2, insert_spaces=True)
        ),
    )
    return None if edits is None else list(edits)


def code_actions(lsp: LspSession, uri: str, where: types.Range):
    return list(
        lsp.request(
            "text_document_code_action",
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=where, context=types.CodeActionContext(diagnostics=[])
            ),
        )
    )


def found(diagnostics) -> list[tuple[str, types.Range]]:
    return [(d.code, d.range) for d in diagnostics]


# --- positions (the one pure part tested on its own: every range the server sends goes through it)

LINES = st.lists(st.one_of(st.sampled_from(["\n", "\r\n", "\r", "é", "🚀", "日", "a", " "]), st.characters()), max_size=40).map(
    "".join
)


@settings(max_examples=examples(300))
@given(text=LINES, data=st.data(), encoding=st.sampled_from(["utf-16", "utf-8", "utf-32"]))
def test_an_offset_goes_to_a_position_and_back(text, data, encoding):
    offset = data.draw(st.integers(0, len(text)))
    if text[offset - 1 : offset + 1] == "\r\n":
        offset -= 1  # between the two characters of one line break: no position names it
    index = LineIndex(text, encoding)
    line, character = index.position(offset)
    assert index.offset(line, character) == offset
    assert line == text[:offset].replace("\r\n", "\n").replace("\r", "\n").count("\n")
    start = index.starts[line]
    width = {"utf-16": 2, "utf-8": 1, "utf-32": 4}[encoding]
    assert character == len(text[start:offset].encode(f"{encoding}-le" if width > 1 else encoding, "surrogatepass")) // width


def test_a_position_past_its_line_or_the_document_is_clamped():
    index = LineIndex("ab\r\ncd")
    assert [index.offset(0, 9), index.offset(1, 9), index.offset(7, 0), index.offset(-1, 0)] == [2, 6, 6, 0]


# --- the life cycle


def test_initialize_says_what_the_server_does_and_shutdown_then_exit_ends_it_with_0(tmp_path):
    with LspSession(tmp_path) as session:
        capabilities = session.initialized.capabilities
        assert session.initialized.server_info.name == "planc"
        assert capabilities.position_encoding == types.PositionEncodingKind.Utf16
        assert capabilities.hover_provider and capabilities.definition_provider
        assert capabilities.document_formatting_provider
        assert "$" in capabilities.completion_provider.trigger_characters
        assert list(capabilities.code_action_provider.code_action_kinds) == [types.CodeActionKind.QuickFix]
        assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
        assert session.close() == 0
        assert session.server_errors() == ""


def test_exit_without_shutdown_is_exit_code_1(tmp_path):
    with LspSession(tmp_path) as session:
        session.notify("exit", None)
        session._run(session.client.stop())
        assert session.client.returncode == 1


def test_without_pygls_planc_lsp_is_exit_2_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygls", None)  # `import pygls` now fails, as when it is not installed
    result = invoke("lsp")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["Error: planc lsp needs pygls and lsprotocol: pip install 'planc[lsp]'"]


# --- diagnostics


def test_diagnostics_have_codes_exact_ranges_and_hints_and_follow_edits(lsp, tmp_path):
    text = 'search(query: "x") |> summarize(style: prose)\nsummarize(items: $9)\n'
    uri = lsp.open(tmp_path / "plan.plan", text)
    [bare, unknown] = lsp.diagnostics(uri)
    assert found([bare, unknown]) == [("E206", span(0, 39, 0, 44)), ("E204", span(1, 17, 1, 19))]
    assert bare.severity == types.DiagnosticSeverity.Error and bare.source == "planc"
    assert bare.message.splitlines() == [
        "bare word `prose`: a value here must be a string, number, reference or list",
        'help: did you mean the string "prose"?',
    ]
    # A line inserted above moves both down; an edit inside a line (a range) is applied where it says.
    lsp.change(uri, "# triage\n", span(0, 0, 0, 0))
    assert found(lsp.diagnostics(uri)) == [("E206", span(1, 39, 1, 44)), ("E204", span(2, 17, 2, 19))]
    lsp.change(uri, '"prose"', span(1, 39, 1, 44))
    assert found(lsp.diagnostics(uri)) == [("E204", span(2, 17, 2, 19))]


def test_columns_on_a_non_ascii_line_are_utf16_code_units(lsp, tmp_path):
    # `é` is one UTF-16 unit, `🚀` two: `$9` starts at code point 44 and UTF-16 unit 45.
    text = 'search(query: "café 🚀") |> summarize(items: $9)'
    assert text.index("$9") == 44
    uri = lsp.open(tmp_path / "plan.plan", text)
    assert found(lsp.diagnostics(uri)) == [("E204", span(0, 45, 0, 47))]
    lsp.change(uri, "$1", span(0, 45, 0, 47))  # the client's own UTF-16 range, read back as such
    assert lsp.diagnostics(uri) == []


def test_a_client_that_asks_for_utf8_gets_utf8_columns(tmp_path):
    capabilities = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8])
    )
    with LspSession(tmp_path, capabilities) as session:
        assert session.initialized.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        uri = session.open(tmp_path / "plan.plan", 'search(query: "café 🚀") |> summarize(items: $9)')
        assert found(session.diagnostics(uri)) == [("E204", span(0, 48, 0, 50))]  # é 2 bytes, 🚀 4


def test_a_document_that_does_not_parse_gets_its_syntax_diagnostics(lsp, tmp_path):
    uri = lsp.open(tmp_path / "plan.plan", 'search(query: "x"')
    [unclosed] = lsp.diagnostics(uri)
    assert (unclosed.code, unclosed.range) == ("E100", span(0, 6, 0, 7))
    assert hover(lsp, uri, 0, 2) is None
    assert formatting(lsp, uri) is None


def test_the_planc_toml_beside_the_document_and_its_policy_are_checked_against(lsp, project):
    text = 'close_incident(id: "INC-1")\nserach(query: "x")\nsearch(query: "disk") |> summarize()\n'
    uri = lsp.open(project / "plan.plan", text)
    diagnostics = lsp.diagnostics(uri)
    assert found(diagnostics) == [("E400", span(0, 0, 0, 14)), ("E200", span(1, 0, 1, 6))]
    assert "forbidden by policy `no-destructive`" in diagnostics[0].message
    assert "did you mean `search`" in diagnostics[1].message


def test_the_same_plan_in_a_folder_without_planc_toml_calls_any_tool(lsp, tmp_path):
    uri = lsp.open(tmp_path / "plan.plan", 'close_incident(id: "INC-1")\nserach(query: "x")\n')
    assert lsp.diagnostics(uri) == []


def test_a_planc_toml_that_cannot_be_used_is_shown_and_the_document_checked_without_it(lsp, tmp_path):
    (tmp_path / "planc.toml").write_text("[tools.search\n", encoding="utf-8")
    uri = lsp.open(tmp_path / "plan.plan", "search(query: x)")
    assert [d.code for d in lsp.diagnostics(uri)] == ["E206"]
    shown = lsp.wait_shown(str(tmp_path / "planc.toml"))
    assert shown.type == types.MessageType.Warning and shown.message.endswith("(checking without it)")


# --- hover, definition


def test_hover_on_a_tool_shows_its_signature_description_and_effects(lsp, project):
    uri = lsp.open(project / "plan.plan", 'hits = search(query: "disk")\n  |> summarize(title: "Disk")\n')
    text = hover(lsp, uri, 0, 9)
    assert "search(query: string, limit: integer 1..100 = 20) -> list[{id: string, title: string}]" in text
    assert "Full-text search over incidents" in text
    assert "effects: read-only, deterministic, idempotent" in text
    assert "summarize(items: list (piped)" in hover(lsp, uri, 1, 6)
    assert hover(lsp, uri, 0, 22) is None  # a string


def test_hover_on_a_reference_shows_its_step_path_and_types(lsp, project):
    text = 'hits = search(query: "disk")\nsummarize(items: $hits, title: $1[0].title)\n'
    uri = lsp.open(project / "plan.plan", text)
    assert lsp.diagnostics(uri) == []
    whole = hover(lsp, uri, 1, 19)
    assert whole.startswith("`$hits` is step 1")
    assert 'hits = search(query: "disk")' in whole
    assert "result: `list[{id: string, title: string}]`" in whole
    into = hover(lsp, uri, 1, 32)
    assert into.startswith("`$1` is step 1") and "`$1[0].title`: `string`" in into


def test_definition_of_a_number_and_of_a_label_is_their_step(lsp, tmp_path):
    text = 'hits = search(query: "x")\nsearch(query: "y")\nsummarize(items: $2, title: "{$hits.length} found")\n'
    uri = lsp.open(tmp_path / "plan.plan", text)
    assert lsp.diagnostics(uri) == []
    number = definition(lsp, uri, 2, 18)
    assert (number.uri, number.range) == (uri, span(1, 0, 1, 18))
    label = definition(lsp, uri, 2, 32)  # inside a template's hole
    assert (label.uri, label.range) == (uri, span(0, 0, 0, 25))
    assert definition(lsp, uri, 2, 3) is None  # a tool name


# --- completion


def test_completion_of_tool_names_where_a_step_starts(lsp, project):
    uri = lsp.open(project / "plan.plan", 'hits = search(query: "x")\n  |> su')
    items = completions(lsp, uri, 1, 7)
    assert {"search", "summarize", "close_incident", "map", "filter"} <= set(items)
    assert items["search"].detail.startswith("search(query: string")
    assert items["search"].documentation == "Full-text search over incidents"


def test_completion_of_the_parameters_not_yet_given_with_their_types(lsp, project):
    uri = lsp.open(project / "plan.plan", 'search(query: "x", )\nsearch(query: "x") |> summarize()\n')
    items = completions(lsp, uri, 0, 19)
    assert list(items) == ["limit"]
    assert items["limit"].detail == "limit: integer 1..100 = 20" and items["limit"].insert_text == "limit: "
    assert set(completions(lsp, uri, 1, 32)) == {"style", "title"}  # `items` is what `|>` fills


def test_completion_of_labels_after_a_dollar(lsp, project):
    text = 'hits = search(query: "x")\nm = map(over: $hits, do: { inner = search(query: item.title) })\nbest = summarize(items: $'
    uri = lsp.open(project / "plan.plan", text)
    items = completions(lsp, uri, 2, 25)
    assert list(items) == ["hits", "m"]  # not `inner`, in a block closed; not `best`, this step's own
    assert items["hits"].detail == "search(…)"


# --- formatting and quick fixes


def test_formatting_gives_the_canonical_form_as_planc_fmt(lsp, tmp_path):
    text = '# find\nsearch( query:"x" )|>summarize( style : "prose")  # done\n'
    uri = lsp.open(tmp_path / "plan.plan", text)
    [edit] = formatting(lsp, uri)
    assert edit.range == span(0, 0, 2, 0)
    assert edit.new_text == format_source(parse(text))
    assert edit.new_text == '# find\nsearch(query: "x")\n  |> summarize(style: "prose")  # done\n'
    lsp.change(uri, edit.new_text)
    assert formatting(lsp, uri) == []


def test_a_quick_fix_applies_the_fix_a_diagnostic_carries(lsp, tmp_path):
    uri = lsp.open(tmp_path / "plan.plan", 'search(query: "x") |> summarize(style: prose)\n')
    assert [d.code for d in lsp.diagnostics(uri)] == ["E206"]
    [action] = code_actions(lsp, uri, span(0, 41, 0, 41))
    assert action.title == 'E206: replace `prose` with `"prose"`'
    assert action.kind == types.CodeActionKind.QuickFix and action.diagnostics[0].code == "E206"
    [edit] = action.edit.changes[uri]
    assert (edit.range, edit.new_text) == (span(0, 39, 0, 44), '"prose"')
    lsp.change(uri, edit.new_text, edit.range)
    assert lsp.diagnostics(uri) == []
    lsp.change(uri, 'search(query: "y"', span(1, 0, 1, 0))
    assert [d.code for d in lsp.diagnostics(uri)] == ["E100"]
    [action] = code_actions(lsp, uri, span(1, 0, 1, 18))
    assert action.title == "E100: insert `)`"
    [edit] = action.edit.changes[uri]
    lsp.change(uri, edit.new_text, edit.range)
    assert lsp.diagnostics(uri) == []


# --- nothing typed stops the server


def test_a_request_that_fails_is_logged_and_the_server_answers_the_next(lsp, tmp_path):
    never_opened = (tmp_path / "missing.plan").as_uri()  # its text cannot be read: the handler raises
    assert hover(lsp, never_opened, 0, 0) is None
    assert "hover failed" in lsp.server_errors()
    uri = lsp.open(tmp_path / "plan.plan", "reshape(value: 1)")
    assert "reshape(value: any)" in hover(lsp, uri, 0, 2)


def test_a_garbage_document_gets_its_diagnostics_and_the_server_goes_on(lsp, tmp_path):
    garbage = "(" * 5000 + '\x00 $ {$ """ \'\u2028 |> ; = ) ] } 🚀\r' + "\n" * 3 + "x = y(z: $"
    uri = lsp.open(tmp_path / "garbage.plan", garbage)
    diagnostics = lsp.diagnostics(uri)
    assert diagnostics and all(d.code.startswith("E1") for d in diagnostics)  # syntax errors, and only those
    last = len(garbage.split("\n")) - 1
    assert completions(lsp, uri, last, 10) == {}  # labels after `$`: none before it
    assert hover(lsp, uri, 0, 2) is None and formatting(lsp, uri) is None
    other = lsp.open(tmp_path / "plan.plan", "reshape(value: 1)")
    assert "reshape(value: any)" in hover(lsp, other, 0, 2)


GARBAGE = st.text(st.one_of(st.sampled_from(list("()[]{}$|>:;,=\"'.#/\\ \n\r\tabxyz019é🚀")), st.characters()), max_size=120)


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=GARBAGE, line=st.integers(0, 5), character=st.integers(0, 200))
def test_garbage_never_stops_the_server(lsp, tmp_path, text, line, character):
    errors = len(lsp.server_errors())
    uri = lsp.open(tmp_path / "garbage.plan", text)
    lsp.diagnostics(uri)
    hover(lsp, uri, line, character)
    completions(lsp, uri, line, character)
    definition(lsp, uri, line, character)
    code_actions(lsp, uri, span(0, 0, line, character))
    formatting(lsp, uri)
    assert lsp.server_errors()[errors:] == ""


def test_no_request_can_stall_the_server_on_a_file_it_was_not_sent(tmp_path):
    """A FIFO and a device named by a request (never opened), and a FIFO as the policy of a document's
    planc.toml: the server reads none of them, and answers the next request."""
    import os

    fifo = tmp_path / "stall.plan"
    os.mkfifo(fifo)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "planc.toml").write_text(TOOLS, encoding="utf-8")  # its `policy = "policy.cedar"`
    os.mkfifo(tmp_path / "p" / "policy.cedar")
    with LspSession(tmp_path) as lsp:
        for uri in (fifo.as_uri(), "file:///dev/zero", "file:///dev/stdin"):
            assert hover(lsp, uri, 0, 0) is None
            assert (
                lsp.request(
                    "text_document_formatting",
                    types.DocumentFormattingParams(types.TextDocumentIdentifier(uri), types.FormattingOptions(2, True)),
                )
                is None
            )
        uri = lsp.open(tmp_path / "p" / "plan.plan", 'search(query: "x")\n')
        assert [d.code for d in lsp.diagnostics(uri)] == []
        assert "not a regular file" in lsp.wait_shown("policy.cedar").message
        assert "search(query: string" in hover(lsp, uri, 0, 2)
        assert lsp.close() == 0
