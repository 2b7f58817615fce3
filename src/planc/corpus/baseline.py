"""The corpus baseline: every case pinned, with what it expects and whether it passed.

A pass rate alone cannot tell that cases went missing: with a whole folder of cases deleted, every
rate left is still 100%. So the baseline names each case (`category: name`) and records its
expectation, whether it passed, and a hash of its input, one line per case:

    {"format": "planc.corpus-baseline", "version": 2, "cases": {
    "syntax: positional argument": {"expects": "E102 1:8", "passed": true, "input": "3f2a..."},
    ...}}

`compare` lists every difference between the corpus as it is and its baseline: a case missing (a
whole file of them as one line), added, renamed (a missing and an added case with the same input),
with another expectation, newly failing or newly passing. Any difference fails `planc corpus
--baseline`, until `--update-baseline` writes the corpus as it is, printing the same list.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

from planc.corpus import CorpusError, Outcome

FORMAT = "planc.corpus-baseline"
VERSION = 2


def key(outcome: Outcome) -> str:
    return f"{outcome.case.category}: {outcome.case.name}"


def entries(outcomes: list[Outcome]) -> dict[str, dict]:
    """What the baseline records of each case, by its key."""
    return {
        key(outcome): {
            "expects": outcome.case.describe(outcome.case.expected),
            "passed": outcome.passed,
            "input": _input_hash(outcome),
        }
        for outcome in outcomes
    }


def _input_hash(outcome: Outcome) -> str:
    case = outcome.case
    text = case.source if case.source_b is None else f"{case.source}\n+++\n{case.source_b}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def dumps(cases: dict[str, dict]) -> str:
    """The baseline file's text: one case a line, sorted, so that a change to it reads as the cases it changes."""
    lines = [
        f"  {json.dumps(name, ensure_ascii=False)}: {json.dumps(entry, ensure_ascii=False)}"
        for name, entry in sorted(cases.items())
    ]
    return f'{{"format": "{FORMAT}", "version": {VERSION}, "cases": {{\n' + ",\n".join(lines) + "\n}}\n"


def load(path: Path) -> dict[str, dict]:
    """The cases `path` pins; a CorpusError for a file that is not such a baseline."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CorpusError(f"{path}: not a baseline file: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise CorpusError(
            f"{path}: not a case-by-case corpus baseline (version {VERSION}): write it again with --update-baseline"
        )
    return data["cases"]


def compare(current: dict[str, dict], pinned: dict[str, dict]) -> list[str]:
    """Every way the corpus (`current`, as `entries` gives it) differs from its baseline (`pinned`)."""
    missing = sorted(set(pinned) - set(current))
    added = sorted(set(current) - set(pinned))
    said = []
    for old in list(missing):  # a renamed case: the same input under another name, in the same category
        new = next(
            (name for name in added if current[name]["input"] == pinned[old]["input"] and _category(name) == _category(old)), None
        )
        if new is not None:
            said.append(f"renamed: {old} -> {_name(new)}")
            missing.remove(old)
            added.remove(new)
    said += _missing(missing, pinned, current)
    said += [f"added: {name} (not in the baseline)" for name in added]
    for name in sorted(set(current) & set(pinned)):
        now, before = current[name], pinned[name]
        if now["expects"] != before["expects"]:
            said.append(f"expectation changed: {name}: {before['expects']} -> {now['expects']}")
        elif now["passed"] != before["passed"]:
            said.append(f"{'now passes' if now['passed'] else 'now fails'}: {name}")
        elif now["input"] != before["input"]:
            said.append(f"input changed: {name}")
    return said


def _missing(names: list[str], pinned: dict, current: dict) -> list[str]:
    """Missing cases, a category with none left as one line: `missing: policy/calls (all 11 cases)`."""
    by_category: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_category[_category(name)].append(name)
    left = {_category(name) for name in current}
    said = []
    for category, gone in sorted(by_category.items()):
        if category not in left:
            said.append(f"missing: {category} (all {len(gone)} of its cases: its corpus file is gone)")
        else:
            said += [f"missing: {name} (in the baseline, not in the corpus)" for name in gone]
    return said


def _category(name: str) -> str:
    return name.partition(": ")[0]


def _name(name: str) -> str:
    return name.partition(": ")[2]
