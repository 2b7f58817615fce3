"""The documentation says what the code does: the diagnostics index is generated and current,
and every documented example reports its code."""

from pathlib import Path

import pytest

import planc
from planc.diagnostics.codes import CODES
from planc.explain import check_example, render_markdown, with_control_steps

ROOT = Path(__file__).resolve().parents[1]


def test_diagnostics_doc_is_current():
    assert (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8") == render_markdown(), \
        "docs/diagnostics.md is stale: run `make docs`"


def test_control_step_reference_is_current():
    page = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert page == with_control_steps(page), "docs/language.md's control steps are stale: run `make docs`"


@pytest.mark.parametrize("code", sorted(CODES))
def test_example_reports_its_code(code):
    result = check_example(CODES[code])  # against the example's planc.toml, when it has one
    assert code in [d.code for d in result.diagnostics]


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_a_section(code):
    assert f"\n## {code}\n" in (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")


def test_embedded_example_checks_clean_against_its_registry():
    from planc.registry import load_registry

    registry = load_registry(ROOT / "examples" / "incidents" / "planc.toml")
    source = (ROOT / "examples" / "incidents" / "triage.plan").read_text(encoding="utf-8")
    assert planc.check(source, registry=registry).diagnostics == ()
