"""Golden output: the whole rendered output of every error case, kept beside its corpus file.

A corpus case pins only each diagnostic's code and position; its message, hints and fix could change
unseen. So for each corpus file with error cases (any diagnostic expected) there is a golden file
beside it, `syntax.out` for `syntax.txt`, holding for each such case, under the case's own header,
what `planc check` prints of it in three formats: the text (as on a terminal without colour), then
after `--- repair` the repair message, then after `--- json` the JSON line. The plan is called
`plan.plan` in them.

`compare` says, naming the file and the case, where the output differs from its golden file, where
a case has none, where a golden file holds a case its corpus file no longer has, and where a golden
file has no corpus file or is missing. `bless` writes every golden file as the output is now: the
only way they change.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from planc.corpus import HEADER, Outcome

SUFFIX = ".out"
PLAN_NAME = "plan.plan"
SHOWN_DIFF_LINES = 40  # of one case's difference: enough to see what changed


def render(outcome: Outcome) -> str:
    """The golden output of one error case: text, repair and JSON, as `planc check` prints them."""
    from planc.diagnostics.render_json import render_json
    from planc.diagnostics.render_repair import render_repair
    from planc.diagnostics.render_text import render_text

    result = outcome.result
    assert result is not None  # an error case is a plan case
    text = "".join(render_text(d, result.source, PLAN_NAME).plain + "\n" for d in result.diagnostics)
    return f"{text}--- repair\n{render_repair(result.source, result.diagnostics)}--- json\n{render_json(PLAN_NAME, result)}\n\n"


def golden_files(directory: Path, outcomes: list[Outcome]) -> dict[Path, dict[str, str]]:
    """Each golden file there should be, with the output of each of its cases by name, in corpus order."""
    files: dict[Path, dict[str, str]] = {}
    for outcome in outcomes:
        case = outcome.case
        if case.expected and case.source_b is None:
            files.setdefault(directory / (case.category + SUFFIX), {})[case.name] = render(outcome)
    return files


def dumps(cases: dict[str, str]) -> str:
    return "".join(f"{'=' * 18}\n{name}\n{'=' * 18}\n{output}" for name, output in cases.items())


def parse(text: str) -> dict[str, str]:
    headers = list(HEADER.finditer(text))
    return {
        header["name"].strip(): text[header.end() : headers[n + 1].start() if n + 1 < len(headers) else len(text)]
        for n, header in enumerate(headers)
    }


def compare(directory: Path, outcomes: list[Outcome]) -> list[str]:
    """Every difference between the rendered output and the golden files under `directory`."""
    expected = golden_files(directory, outcomes)
    said = []
    for path in sorted(set(directory.rglob("*" + SUFFIX)) - set(expected)):
        said.append(f"{path}: a golden file without error cases in {path.with_suffix('.txt').name} (--bless removes it)")
    for path, cases in expected.items():
        if not path.exists():
            said.append(
                f"{path}: missing golden file, for the {len(cases)} error cases of "
                f"{path.with_suffix('.txt').name} (--bless writes it)"
            )
            continue
        text = _read(path)
        kept, before = parse(text), len(said)
        for name in kept.keys() - cases.keys():
            said.append(f"{path}: golden output for `{name}`, a case {path.with_suffix('.txt').name} does not have")
        for name, output in cases.items():
            if name not in kept:
                said.append(f"{path}: no golden output for the case `{name}`")
            elif kept[name] != output:
                said.append(f"{path}: the output of `{name}` differs from its golden output:\n" + _difference(kept[name], output))
        if len(said) == before and text != dumps(cases):  # the same outputs, in another order or spacing
            said.append(
                f"{path}: not as --bless writes it (the cases in the order of "
                f"{path.with_suffix('.txt').name}, nothing between them)"
            )
    return said


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:  # a CRLF case's output keeps its CR
        return handle.read()


def _difference(golden: str, now: str) -> str:
    lines = list(difflib.unified_diff(golden.splitlines(), now.splitlines(), "golden", "now", lineterm="", n=1))
    shown = lines[:SHOWN_DIFF_LINES] + (
        [f"... {len(lines) - SHOWN_DIFF_LINES} lines more"] if len(lines) > SHOWN_DIFF_LINES else []
    )
    return "\n".join("    " + line for line in shown)


def bless(directory: Path, outcomes: list[Outcome]) -> list[str]:
    """Write every golden file as the output is now, remove those without error cases; what changed."""
    expected = golden_files(directory, outcomes)
    said = []
    for path in sorted(set(directory.rglob("*" + SUFFIX)) - set(expected)):
        path.unlink()
        said.append(f"removed {path}")
    for path, cases in expected.items():
        text = dumps(cases)
        if not path.exists() or _read(path) != text:
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            said.append(f"wrote {path}")
    return said


BAD_MESSAGES = "bad_messages"  # the file, directly in the corpus directory


def bad_messages(directory: Path, outcomes: list[Outcome]) -> list[str]:
    """What no longer holds of the list of poor messages (`bad_messages` in the corpus directory).

    Each entry, a block of lines, names an error case (`category: name`), quotes what its output
    says now (`says:`, a line of it) and why that is poor (`why:`). An entry whose case is gone, or
    whose output no longer says that, is reported: the message was fixed (or moved), and comes off
    the list.
    """
    path = directory / BAD_MESSAGES
    if not path.exists():
        return []
    rendered = {f"{o.case.category}: {o.case.name}": render(o) for o in outcomes if o.case.expected and o.result}
    said = []
    for number, block in enumerate(_blocks(path.read_text(encoding="utf-8")), start=1):
        fields = dict(line.strip().partition(":")[::2] for line in block[1:])
        case, says = block[0].strip(), fields.get("says", "").strip()
        if not says or not fields.get("why", "").strip():
            said.append(f"{path}: entry {number} (`{case}`) needs a `says:` line and a `why:` line")
        elif case not in rendered:
            said.append(f"{path}: `{case}` is not an error case of the corpus (renamed, or gone?)")
        elif says not in rendered[case]:
            said.append(f"{path}: `{case}` no longer says `{says}`: if its message is better now, take it off the list")
    return said


def _blocks(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    blocks, current = [], []
    for line in lines + [""]:
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks
