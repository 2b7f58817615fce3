"""The reference pages generated from planc's own tables, so they cannot drift from the code.

docs/diagnostics.md (and `planc explain CODE`, one code's section of it) comes from the table of codes (`planc.diagnostics.codes`), each example run
through the check; the table is plain data at the bottom of the layers, and running an example
needs the passes, the policy and the optimizer, so it happens up here. The control-step reference
in docs/language.md comes from the control steps' declarations (`planc.registry.steps.builtins`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from planc.diagnostics.codes import CODES, Code
from planc.passes.check import CheckResult, check
from planc.passes.policy.load import policy_from_text
from planc.registry.loading.config import registry_from_text

if TYPE_CHECKING:
    from planc.registry.tools.tool import Tool

# The examples are checked as if their planc.toml were at the top of the repository: plan files it
# declares (E210's) are found from there.
ROOT = Path(__file__).resolve().parents[2]


def check_example(code: Code) -> CheckResult:
    """`planc.check` of `code`'s example, against its registry and policy when it has them (and with
    the optimizer's notes added, for a code of the optimizer's)."""
    where = ROOT / "planc.toml"
    registry = registry_from_text(code.registry, where) if code.registry else None
    if code.learned:
        from planc.registry.tools.learned_shapes import LearnedShape

        assert registry is not None  # an example that learned shapes declares its tools
        registry = registry.learning({tool: LearnedShape(tool, schema, calls) for tool, (schema, calls) in code.learned.items()})
    policy = policy_from_text(code.policy, where.with_name("policy.cedar")) if code.policy else None
    checked = check(
        code.example, extract_plan=code.extract, registry=registry, policy=policy, approvals=code.approvals, **code.budget
    )
    if not code.optimize:
        return checked
    from planc.optimize.optimize import optimize

    return attrs.evolve(checked, diagnostics=checked.diagnostics + optimize(checked).notes)


def render_markdown() -> str:
    """The text of docs/diagnostics.md."""
    out = [
        "# Diagnostics",
        "",
        "Every problem planc reports has a stable code. `E1xx` are syntax errors, `E2xx` resolution",
        "errors, `E3xx` type errors, `E4xx` policy and budget errors, `W5xx` warnings and `N6xx` notes",
        "on rewrites. Each diagnostic points at the exact span of the input it is about, and may carry",
        "hints and a fix (a replacement for a span).",
        "",
        "This file is generated from the table in `src/planc/diagnostics/codes.py` by `make docs`. Each",
        "code lists the forms of its message: every message planc reports is one of them, with its",
        "`{fields}` filled in (`{{` and `}}` are a literal brace). Each example below is checked by the",
        "test suite, and its output is what `planc check example.plan` prints for it (with",
        "`--config planc.toml` where the example calls tools declared in the `planc.toml` shown).",
        "`planc explain CODE` prints one code's section.",
        "",
    ]
    shown: dict[str, str] = {}  # registry text -> the first code whose example uses it
    for code in CODES.values():
        out += render_code(code, shown)
    return "\n".join(out)


def render_code(code: Code, shown: dict[str, str] | None = None) -> list[str]:
    """The lines of `code`'s section of docs/diagnostics.md (and of `planc explain CODE`): its title, what it
    means, its messages, and its example with what planc prints for it. `shown` holds the planc.toml texts
    shown already, by the code that showed them: a later example refers to that one (None: show it here)."""
    from rich.console import Console

    from planc.diagnostics.render_text import render_text

    result = check_example(code)
    console = Console(width=200, no_color=True, force_terminal=False)
    with console.capture() as captured:
        for diagnostic in result.diagnostics:
            console.print(render_text(diagnostic, result.source, "example.plan"))
    out = [f"## {code.code}", "", f"**{code.title}**", "", code.explanation, ""]
    out += ["Messages:", ""] + [f"- `{form}`: {template}" for form, template in code.messages.items()] + [""]
    if shown is not None and code.registry in shown:
        first = shown[code.registry]
        out += [f"With the `planc.toml` shown under [{first}](#{first.lower()}).", ""]
    elif code.registry:
        if shown is not None:
            shown[code.registry] = code.code
        out += ["With this `planc.toml`:", "", "```toml", code.registry.rstrip("\n"), "```", ""]
    if code.optimize:
        out += ["Reported by `planc optimize example.plan` (and `planc run --optimize`).", ""]
    if code.approvals:
        out += ["Reported by `planc run --approve example.plan` (a person will be asked), before the run.", ""]
    if code.budget:
        options = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in code.budget.items())
        out += [f"Checked with `{options}`.", ""]
    for tool, (schema, calls) in code.learned.items():
        out += [
            f"With the shape of `{tool}`'s results the run store learned from {calls} calls (`planc registry shapes`):",
            "",
            "```json",
            json.dumps(schema),
            "```",
            "",
        ]
    if code.policy:
        out += ["With this `policy.cedar` (`--policy policy.cedar`):", "", "```cedar", code.policy.rstrip("\n"), "```", ""]
    return out + ["```", code.example.rstrip("\n"), "```", "", "```text", captured.get().rstrip("\n"), "```", ""]


CONTROL_STEPS_BEGIN = "<!-- control steps: generated from src/planc/registry/steps/ by `make docs` -->"
CONTROL_STEPS_END = "<!-- end of control steps -->"
PURE_STEPS_BEGIN = "<!-- pure steps: {family}: generated from src/planc/registry/steps/pure_steps.py by `make docs` -->"
PURE_STEPS_END = "<!-- end of pure steps: {family} -->"


def render_steps(tools: Iterable[Tool]) -> str:
    """A reference of built-in steps: each step's signature, rules and meaning."""
    from planc.registry.tools.signatures import groups, signature

    out = []
    for tool in tools:
        out += ["```", signature(tool), "```", ""]
        out += [" ".join([tool.description, *groups(tool)]), ""]
    return "\n".join(out)


def with_control_steps(page: str) -> str:
    """`page` (docs/language.md) with its generated references made current: the control steps, and the
    pure steps of each family."""
    from planc.registry.steps.builtins import CONTROL_STEPS
    from planc.registry.steps.pure_steps import FAMILIES, PURE_STEPS

    control = [tool for name, tool in CONTROL_STEPS.items() if name not in PURE_STEPS]
    page = _replaced(page, CONTROL_STEPS_BEGIN, CONTROL_STEPS_END, render_steps(control))
    for family in FAMILIES:
        steps = [pure.tool for pure in PURE_STEPS.values() if pure.family == family]
        page = _replaced(page, PURE_STEPS_BEGIN.format(family=family), PURE_STEPS_END.format(family=family), render_steps(steps))
    return page


def _replaced(page: str, begin: str, end: str, text: str) -> str:
    start = page.index(begin) + len(begin)
    return page[:start] + "\n\n" + text + page[page.index(end) :]
