"""Every plan shipped under examples/ passes planc's own checks: `planc fmt --check`, and `planc check` with
nothing to say (no error, no warning, no note), but for the plans a README shows refused (a `$ planc check
PLAN` line, then the errors it prints): those get exactly the errors shown, and nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli import invoke

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLANS = sorted(EXAMPLES.rglob("*.plan"))
SHOWN_CHECK = re.compile(r"\s*\$ planc check (\S+\.plan)")
SHOWN_ERROR = re.compile(r"\s*(error\[[EWN]\d{3}\]: .*)")


def shown_refusals() -> dict[Path, list[str]]:
    """Each plan a README under examples/ shows `planc check` refusing, and the lines of the errors shown."""
    found = {}
    for readme in EXAMPLES.rglob("README.md"):
        lines = readme.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            command = SHOWN_CHECK.fullmatch(line)
            if command is None:
                continue
            errors = []
            for following in lines[number + 1 :]:
                error = SHOWN_ERROR.fullmatch(following)
                if error is None:
                    break
                errors.append(error.group(1))
            found[(readme.parent / command.group(1)).resolve()] = errors
    return found


REFUSED = shown_refusals()


def test_the_examples_ship_plans_and_show_their_refusals():
    assert len(PLANS) >= 9
    assert {path.name for path in REFUSED} == {"close_stale.plan", "pay_bill.plan"}
    assert all(REFUSED.values()) and set(REFUSED) <= set(PLANS)


@pytest.mark.parametrize("plan", PLANS, ids=lambda path: str(path.relative_to(EXAMPLES)))
def test_an_example_plan_is_formatted(plan):
    result = invoke("fmt", "--check", plan)
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("plan", PLANS, ids=lambda path: str(path.relative_to(EXAMPLES)))
def test_an_example_plan_checks_with_nothing_to_say_or_exactly_the_refusal_its_readme_shows(plan):
    result = invoke("check", "--format", "json", plan)  # against the nearest planc.toml, as its README runs it
    diagnostics = json.loads(result.stdout)["diagnostics"]
    said = [f"{d['severity']}[{d['code']}]: {d['message']}" for d in diagnostics]
    assert said == REFUSED.get(plan, [])
    assert result.exit_code == (1 if plan in REFUSED else 0)
