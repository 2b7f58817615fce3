"""The corpus of plans as models write them, and its regression check (`planc corpus`).

A corpus file holds many cases, tree-sitter style:

    ==================
    positional argument
    ==================
    search("sev2 outages", limit: 50)
    ---
    E102 1:8

The header names the case. `[extract]` after the name checks it as a model
reply, as `planc check --extract` does; `[max-calls=10]`, `[max-inferences=2]`
and `[max-usd=0.05]`, last in the header, check it with that budget, as the
`planc check` options of those names do. The input runs to the last `---`
line; after it comes `ok`, or one `CODE line:column` per expected diagnostic.
A case passes when the diagnostics are exactly those. The category of a case
is the name of its file, relative to the corpus directory (`registry/types`).

A case is checked against the registry of the `planc.toml` in its file's
folder, or in the nearest folder above it within the corpus directory; with
none there, only the control steps are known (as `planc check` without a
registry). So `corpus/registry/planc.toml` declares the tools of the cases
under `corpus/registry/`, and the cases directly in `corpus/` have none. When
that planc.toml names a `policy`, the cases are judged by it too (`corpus/policy/`).

The cases under `diff/` are pairs of plans for `planc diff`: plan A, a `+++` line, plan B,
`---`, then `same` or one change per line, `KIND A-PATH B-PATH TOOL [ARGUMENT...]` (`-` for
no path; a changed step names its changed arguments), as `planc.diff.render_json.change_line`
prints them. A case passes when the changes are exactly those.

Two files pin the corpus down beyond pass or fail: the baseline (`baseline.py`) records every case,
what it expects and whether it passed, so a case that disappears, appears, is renamed or changes its
expectation is reported; and each corpus file's golden output (`golden.py`: `syntax.out` beside
`syntax.txt`) holds the whole rendered output of its error cases, compared exactly. Within a file,
case names are unique: they are how both name a case.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from planc.passes.check import CheckResult, check
from planc.passes.policy.load import Policy, PolicyError, load_policy
from planc.registry.loading.config import CONFIG_NAME, load_registry
from planc.registry.loading.registry import Registry
from planc.registry.settings.errors import ConfigError

HEADER = re.compile(r"^={3,}\n(?P<name>[^\n]*)\n={3,}\n", re.MULTILINE)
BUDGET = re.compile(r"\s*\[max-(?P<what>calls|inferences|usd)=(?P<value>[^\]]*)\]\s*$")
EXPECTATION = re.compile(r"(?P<code>[EWN]\d{3}) (?P<line>\d+):(?P<column>\d+)")
DIFF = "diff"  # the folder of diff cases
CHANGE = re.compile(r"(added|removed|changed|moved) \S+ \S+ \S+( \S+)*")


class CorpusError(Exception):
    """A corpus file that cannot be read as cases."""


@attrs.frozen
class Case:
    category: str
    name: str
    source: str
    expected: tuple[tuple[str, int, int], ...] | tuple[str, ...]  # empty: accepted; a diff case's: change lines
    extract: bool
    location: str  # file:line of the header
    registry: Registry | None = None  # from the nearest planc.toml within the corpus
    policy: Policy | None = None  # the policy that planc.toml names
    budget: dict = attrs.field(factory=dict)  # `check`'s budget arguments, from `[max-calls=10]` in the header
    source_b: str | None = None  # plan B of a diff case, whose expected are change lines

    def describe(self, results: tuple) -> str:
        """Expected or found results as one line."""
        if self.source_b is not None:
            return "; ".join(results) or "same"
        return ", ".join(f"{code} {line}:{column}" for code, line, column in results) or "ok"


@attrs.frozen
class Outcome:
    case: Case
    found: tuple[tuple[str, int, int], ...] | tuple[str, ...]  # as `Case.expected`
    result: CheckResult | None = None  # of a plan case (None for a diff case): what its golden output renders

    @property
    def passed(self) -> bool:
        return sorted(self.found) == sorted(self.case.expected)


def load_cases(directory: Path) -> list[Case]:
    """Every case in the `*.txt` files under `directory`."""
    files = sorted(directory.rglob("*.txt"))
    if not files:
        raise CorpusError(f"no corpus files (*.txt) under {directory}")
    registries: dict[Path, Registry | None] = {}
    cases = []
    for file in files:
        registry = _registry(file.parent, directory, registries)
        cases += _cases(file, directory, registry, _policy(registry))
    return cases


def _policy(registry: Registry | None) -> Policy | None:
    if registry is None or not registry.policy:
        return None
    try:
        return load_policy(registry.policy, registry.principals)
    except PolicyError as error:
        raise CorpusError(str(error)) from None


def _registry(folder: Path, root: Path, loaded: dict) -> Registry | None:
    """The registry of the nearest planc.toml in `folder` or above it, up to `root`; None without one."""
    if folder not in loaded:
        config = folder / CONFIG_NAME
        if config.is_file():
            try:
                loaded[folder] = load_registry(config)
            except ConfigError as error:
                raise CorpusError(str(error)) from None
        else:
            inside = folder != root and root in folder.parents
            loaded[folder] = _registry(folder.parent, root, loaded) if inside else None
    return loaded[folder]


def _cases(file: Path, root: Path, registry: Registry | None, policy: Policy | None) -> list[Case]:
    with open(file, encoding="utf-8", newline="") as handle:  # CRLF cases stay CRLF
        text = handle.read()
    category = str(file.relative_to(root).with_suffix(""))
    headers = list(HEADER.finditer(text))
    if not headers:
        raise CorpusError(f"{file}: no case header (a name between two `===` lines)")
    cases, names = [], set()
    for number, header in enumerate(headers):
        body_end = headers[number + 1].start() if number + 1 < len(headers) else len(text)
        body = text[header.end() : body_end]
        line = text.count("\n", 0, header.start()) + 1
        where = f"{file}:{line}"
        split = body.rfind("\n---\n") if not body.startswith("---\n") else -1
        if split < 0 and not body.startswith("---\n"):
            raise CorpusError(f"{where}: case has no `---` line before its expectation")
        source, expectation = (body[:split], body[split + 5 :]) if split >= 0 else ("", body[4:])
        name = header.group("name").strip()
        if name in names:
            raise CorpusError(f"{where}: a second case named `{name}` in this file (a name says which case it is)")
        names.add(name)
        if file.relative_to(root).parts[0] == DIFF:
            cases.append(_diff_case(category, name, source, expectation, where))
            continue
        name, budget = _budget(name, where)
        extract = name.endswith("[extract]")
        cases.append(
            Case(
                category,
                name.removesuffix("[extract]").strip(),
                source,
                _expected(expectation, where),
                extract,
                where,
                registry,
                policy,
                budget,
            )
        )
    return cases


def _budget(name: str, where: str) -> tuple[str, dict]:
    """The name without its trailing `[max-...=N]` options, and the budget they set."""
    budget = {}
    while match := BUDGET.search(name):
        what, value = match["what"], match["value"]
        try:
            budget[f"max_{what}"] = float(value) if what == "usd" else int(value)
        except ValueError:
            raise CorpusError(f"{where}: `[max-{what}={value}]` needs a number") from None
        name = name[: match.start()]
    return name.strip(), budget


def _expected(text: str, where: str) -> tuple:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines == ["ok"]:
        return ()
    expected = []
    for line in lines:
        match = EXPECTATION.fullmatch(line)
        if not match:
            raise CorpusError(f"{where}: expectation `{line}` is neither `ok` nor `CODE line:column`")
        expected.append((match["code"], int(match["line"]), int(match["column"])))
    if not expected:
        raise CorpusError(f"{where}: empty expectation (write `ok` for an accepted plan)")
    return tuple(expected)


def _diff_case(category: str, name: str, source: str, expectation: str, where: str) -> Case:
    plan_a, separator, plan_b = source.partition("\n+++\n")
    if not separator:
        raise CorpusError(f"{where}: a diff case needs a `+++` line between plan A and plan B")
    lines = [" ".join(line.split()) for line in expectation.strip().splitlines() if line.strip()]
    if lines == ["same"]:
        return Case(category, name, plan_a, (), False, where, source_b=plan_b)
    for line in lines:
        if not CHANGE.fullmatch(line):
            raise CorpusError(f"{where}: expectation `{line}` is neither `same` nor `KIND A B TOOL [ARGUMENT...]`")
    if not lines:
        raise CorpusError(f"{where}: empty expectation (write `same` for plans without changes)")
    return Case(category, name, plan_a, tuple(_sorted_arguments(line) for line in lines), False, where, source_b=plan_b)


def _sorted_arguments(line: str) -> str:
    kind, a, b, tool, *arguments = line.split()
    return " ".join([kind, a, b, tool, *sorted(arguments)])


def run_case(case: Case) -> Outcome:
    if case.source_b is not None:
        return Outcome(case, _diff_found(case))
    result = check(case.source, extract_plan=case.extract, registry=case.registry, policy=case.policy, **case.budget)
    found = tuple((d.code, d.span.start.line, d.span.start.column) for d in result.diagnostics)
    return Outcome(case, found, result)


def _diff_found(case: Case) -> tuple[str, ...]:
    from planc.diff import DiffError, diff_plans
    from planc.diff.render_json import change_line

    assert case.source_b is not None  # a diff case
    try:
        diff = diff_plans(case.source, case.source_b)
    except DiffError as error:
        return tuple(
            f"syntax error in {error.side}: {d.code} {d.span.start.line}:{d.span.start.column}" for d in error.result.diagnostics
        )
    return tuple(change_line(change) for change in diff.changes)


def tally(outcomes: list[Outcome]) -> dict:
    """Passed and total cases per category, and over all."""
    categories: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        counts = categories.setdefault(outcome.case.category, {"passed": 0, "cases": 0})
        counts["cases"] += 1
        counts["passed"] += outcome.passed
    total = {"passed": sum(c["passed"] for c in categories.values()), "cases": sum(c["cases"] for c in categories.values())}
    return {"total": total, "categories": dict(sorted(categories.items()))}


def rate(counts: dict) -> float:
    return counts["passed"] / counts["cases"] if counts["cases"] else 1.0
