"""The table of codes and the code that reports them agree. Every diagnostic is made by the builder
(`planc.diagnostics.build.diagnostic`), never by `Diagnostic(...)`; every call of it names its code and
message form literally; each (code, form) a call names is in the table; and each (code, form) of the table
is named by some call, so the table holds no message that nothing reports."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import string
from pathlib import Path

import pytest
from cli import invoke

from planc.diagnostics import Span
from planc.diagnostics.build import diagnostic
from planc.diagnostics.codes import CODES

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "planc"
BUILDER = PACKAGE / "diagnostics" / "build.py"


def calls(root: Path, name: str) -> list[tuple[str, ast.Call]]:
    """Every call of a function or class named `name` (`name(...)` or `module.name(...)`) in the Python
    files under `root`, with where it is (file:line)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(_parsed(path)):
            if isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                if called == name:
                    found.append((f"{path.relative_to(root.parent)}:{node.lineno}", node))
    return found


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def named_forms(root: Path) -> tuple[dict[tuple[str, str], list[str]], list[str]]:
    """(code, form) -> where the `diagnostic(...)` calls under `root` name it; and where a call does not name
    both as literal strings (its first two arguments)."""
    named: dict[tuple[str, str], list[str]] = {}
    unreadable = []
    for where, call in calls(root, "diagnostic"):
        code, form = (call.args + [None, None])[:2]
        if isinstance(code, ast.Constant) and isinstance(form, ast.Constant):
            named.setdefault((code.value, form.value), []).append(where)
        else:
            unreadable.append(where)
    return named, unreadable


def test_every_call_of_the_builder_names_its_code_and_form_literally():
    """What the next two tests read: a code or a form passed in a variable could be any."""
    assert named_forms(PACKAGE)[1] == []


def test_every_code_and_form_a_call_names_is_in_the_table():
    named, _ = named_forms(PACKAGE)
    unknown = {pair: sites for pair, sites in named.items() if pair[0] not in CODES or pair[1] not in CODES[pair[0]].messages}
    assert unknown == {}


def test_every_code_and_form_of_the_table_is_named_by_a_call():
    named, _ = named_forms(PACKAGE)
    table = {(code.code, form) for code in CODES.values() for form in code.messages}
    assert sorted(table - set(named)) == []


def test_no_diagnostic_is_made_but_by_the_builder():
    assert [where for where, _ in calls(PACKAGE, "Diagnostic") if not where.startswith("planc/diagnostics/build.py:")] == []


def test_no_template_has_a_field_named_like_a_parameter_of_the_builder():
    """`{step}` in a template could never be filled in: `step=` is the diagnostic's step path."""
    taken = set(inspect.signature(diagnostic).parameters) - {"fields"}
    clashes = [
        (code.code, form, name)
        for code in CODES.values()
        for form, template in code.messages.items()
        for _, name, _, _ in string.Formatter().parse(template)
        if name in taken
    ]
    assert clashes == []


def test_the_checks_find_an_unknown_form_a_form_in_a_variable_and_a_hand_made_diagnostic(tmp_path):
    (tmp_path / "planc").mkdir()
    (tmp_path / "planc" / "a_pass.py").write_text(
        'diagnostic("E204", "no_step", span, written="$9", count=1)\n'
        'diagnostic("E204", "no_such_form", span)\n'
        'diagnostic(code, "no_step", span)\n'
        'Diagnostic("E204", "made by hand", span)\n'
    )
    named, unreadable = named_forms(tmp_path / "planc")
    assert named == {("E204", "no_step"): ["planc/a_pass.py:1"], ("E204", "no_such_form"): ["planc/a_pass.py:2"]}
    assert unreadable == ["planc/a_pass.py:3"]
    assert [where for where, _ in calls(tmp_path / "planc", "Diagnostic")] == ["planc/a_pass.py:4"]


@pytest.mark.parametrize(
    "code, form, fields, words",
    [
        ("E999", "no_step", {}, "E999 is not a diagnostic code"),
        ("E204", "no_stp", {}, "E204 has no message form `no_stp`; its forms are hidden_label, no_step, unknown_label"),
        ("E204", "no_step", {"written": "$9"}, "E204 `no_step` takes the fields ['count', 'written'], given ['written']"),
        ("E204", "no_step", {"written": "$9", "count": 1, "cont": 1}, "given ['cont', 'count', 'written']"),
    ],
)
def test_a_code_form_or_fields_not_in_the_table_are_a_clear_error(code, form, fields, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        diagnostic(code, form, Span(0, 0), **fields)


DIAGNOSTICS_DOC = Path(__file__).resolve().parents[1] / "docs" / "diagnostics.md"


def doc_section(code: str) -> str:
    text = DIAGNOSTICS_DOC.read_text(encoding="utf-8")
    start = text.index(f"## {code}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)].rstrip("\n")


SHOWN_UNDER = re.compile(r"With the `planc.toml` shown under \[(\w+)\]\(#\w+\)\.")
TOML_BLOCK = re.compile(r"With this `planc.toml`:\n\n```toml\n.*?\n```", re.DOTALL)


@pytest.mark.parametrize("code", ["E300", "W501", "N600", "E400"])
def test_explain_prints_the_entry_docs_diagnostics_md_has_for_a_code(code, tmp_path, monkeypatch):
    """From the table the page is made from, not the page (installed from a wheel, there is no docs/); where the
    page refers to the planc.toml an earlier code showed, the entry shows it."""
    monkeypatch.chdir(tmp_path)
    expected = doc_section(code)
    shown = SHOWN_UNDER.search(expected)
    if shown:
        expected = expected.replace(shown.group(), TOML_BLOCK.search(doc_section(shown.group(1))).group())
    result = invoke("explain", code.lower())
    assert result.exit_code == 0 and result.stdout.rstrip("\n") == expected


def test_explain_without_a_code_lists_them_and_an_unknown_one_is_one_clean_message():
    listed = invoke("explain").stdout.splitlines()
    assert len(listed) == len(CODES) and listed[0].startswith("E100  ")
    assert invoke("explain", "e3O0").stdout == invoke("explain", "E300").stdout  # the letter O for a zero
    result = invoke("explain", "E399")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "no diagnostic code E399; did you mean E3" in result.stderr and "`planc explain` lists them" in result.stderr
