"""SARIF 2.1.0, for code-scanning UIs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from planc.diagnostics.codes import CODES
from planc.diagnostics.diagnostic import Diagnostic

if TYPE_CHECKING:
    from planc.passes.check import CheckResult

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_sarif(results: Sequence[tuple[str, CheckResult]]) -> str:
    """One SARIF log for `results`, a list of (file, CheckResult)."""
    used = sorted({d.code for _, result in results for d in result.diagnostics})
    rules = [_rule(code) for code in used]
    entries = [_result(file, diagnostic) for file, result in results for diagnostic in result.diagnostics]
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "planc", "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": entries,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


def _rule(code: str) -> dict:
    described = CODES.get(code)
    rule = {"id": code, "shortDescription": {"text": described.title if described else code}}
    if described:
        rule["fullDescription"] = {"text": described.explanation}
    return rule


def _result(file: str, diagnostic: Diagnostic) -> dict:
    span = diagnostic.span
    region = {
        "startLine": span.start.line,
        "startColumn": span.start.column,
        "endLine": span.end.line,
        "endColumn": span.end.column,
        "charOffset": span.start.offset,
        "charLength": span.end.offset - span.start.offset,
    }
    location = {"physicalLocation": {"artifactLocation": {"uri": file}, "region": region}}
    text = diagnostic.message + "".join(f"\nhelp: {hint}" for hint in diagnostic.hints)
    result: dict[str, object] = {
        "ruleId": diagnostic.code,
        "level": diagnostic.severity.value,
        "message": {"text": text},
        "locations": [location],
    }
    if diagnostic.fix is not None:
        fix_span = diagnostic.fix.span
        result["fixes"] = [
            {
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": file},
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "charOffset": fix_span.start.offset,
                                    "charLength": fix_span.end.offset - fix_span.start.offset,
                                },
                                "insertedContent": {"text": diagnostic.fix.replacement},
                            }
                        ],
                    }
                ]
            }
        ]
    return result
