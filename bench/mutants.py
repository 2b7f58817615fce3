"""Mutants: break a promise on purpose, and the tests that guard it must go red (`make mutants`).

A test suite that stays green whatever the code does proves nothing. Each mutant below removes one
rule planc's safety rests on; for each, the working tree is copied to a temporary folder, the rule is
broken there (one exact replacement in one file), and the test files that guard the rule run against
the copy (`PYTHONPATH` puts the copy's `src` first, for the test process and every `planc` it starts).
A mutant the tests do not catch ("survived") fails this script. First, as a control, the same tests run
against an unbroken copy and must pass: a red run of the mutant then means the rule was missed, not a
broken copy.

    .venv/bin/python bench/mutants.py            # every mutant (a few minutes on 2 cores)
    .venv/bin/python bench/mutants.py budget     # the mutants whose name contains `budget`

The results of the last run by hand are in docs/reliability.md ("Mutants").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name, file, the text of the rule, the text that breaks it, the test files that guard it
MUTANTS = [
    (
        "fail-closed: a policy Cedar cannot evaluate no longer denies",
        "src/planc/passes/policy/decide.py",
        "    if failed:\n        return Decision(False,",
        "    if False:\n        return Decision(False,",
        ["tests/test_policy.py"],
    ),
    (
        "budget: a plan over its budget is no longer refused",
        "src/planc/passes/cost/budget.py",
        "    return value > limit and not math.isclose(value, limit, rel_tol=1e-9)",
        "    return False",
        ["tests/test_cost.py", "tests/test_attacks.py"],
    ),
    (
        "read-only: the SQL authorizer allows everything",
        "src/planc/registry/tools/sql_tools.py",
        "        return sqlite3.SQLITE_DENY\n    return sqlite3.SQLITE_OK",
        "        return sqlite3.SQLITE_OK\n    return sqlite3.SQLITE_OK",
        ["tests/test_sql_tools.py"],
    ),
]


def copy_tree(into: Path) -> Path:
    """The working tree's files (tracked and untracked, without what git ignores) copied into `into`."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def run_tests(tree: Path, tests: list[str]) -> tuple[int, str]:
    """pytest over `tests` in `tree`, with `tree/src` first on the path: the exit code and the last lines."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [
        line
        for line in done.stdout.splitlines()
        if line.startswith(("FAILED", "ERROR")) or " passed" in line or " failed" in line
    ]
    return done.returncode, "\n".join(lines[-3:])


def main(selected: list[str]) -> int:
    chosen = [mutant for mutant in MUTANTS if not selected or any(word in mutant[0] for word in selected)]
    survived = 0
    with tempfile.TemporaryDirectory(prefix="planc-mutants-") as folder:
        for number, (name, file, rule, broken, tests) in enumerate(chosen):
            tree = copy_tree(Path(folder) / str(number))
            started = time.monotonic()
            code, said = run_tests(tree, tests)
            if code != 0:
                print(f"CONTROL FAILED ({name}): the unbroken copy is red, so nothing can be said\n{said}")
                return 2
            target = tree / file
            text = target.read_text(encoding="utf-8")
            assert text.count(rule) == 1, f"{file}: the rule to break is not there once: {rule!r}"
            target.write_text(text.replace(rule, broken), encoding="utf-8")
            code, said = run_tests(tree, tests)
            caught = code != 0
            survived += not caught
            print(
                f"{'caught  ' if caught else 'SURVIVED'} {name} ({file}; {' '.join(tests)}; "
                f"{time.monotonic() - started:.0f} s)\n    {said.replace(chr(10), chr(10) + '    ')}"
            )
    print(f"{len(chosen) - survived} of {len(chosen)} mutants caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
