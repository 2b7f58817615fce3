"""Variants of what the bench hands planc for a suite, to measure what each rule buys: `run.py --rules NAME`.

A variant (`Rule`) changes a suite's `Setup`: the text of its Cedar policy, the text of its planc.toml, or the
options `planc.check` is called with. `run.py --rules A --rules B` measures every suite as committed, then with
each rule alone, then with all of them (when there are two or more), one row each; its last line is the last row's.
`--rules A+B` is one row with both (`--attack all --rules A+B`: as committed, and with every rule on).

    without:ID       the suite's policy without its rule `@id("ID")` (every suite that has one)
    NAME in RULES    a rule of planc's own, switched on: adding one is a line of RULES
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from planc.passes.policy.load import policy_starts


@attrs.frozen
class Setup:
    """What planc is given for a suite: its policy and declarations (texts), and `planc.check`'s options."""

    policy: str
    declarations: str
    check: dict = attrs.Factory(dict)


@attrs.frozen
class Rule:
    name: str
    says: str  # what it changes, in words
    apply: Callable[[Setup], Setup]


def rewritten(pattern: str, replacement: str) -> Callable[[Setup], Setup]:
    """The change to a setup that rewrites each match of `pattern` in its policy (`re.sub`)."""
    return lambda setup: attrs.evolve(setup, policy=re.sub(pattern, replacement, setup.policy))


# Where a suite's policy reads an argument's labels, or all of them: a choice among trusted items is let through
# there (planc never reports one for a destructive call).
ARGUMENT_UNTRUSTED = r'context\.sources\.(\w+)\.contains\("untrusted"\)'
CHOSEN = (
    r'(context.sources.\1.contains("untrusted") && !(context.chosen_by has \1 && context.chosen_by.\1.contains("untrusted")))'
)


def choices(setup: Setup) -> Setup:
    setup = rewritten(ARGUMENT_UNTRUSTED, CHOSEN)(setup)
    return rewritten(r'context\.labels\.contains\("untrusted"\)', 'context.unchosen_labels.contains("untrusted")')(setup)


# planc's rules that let more through, each off by default in the suites' setups: `run.py --rules NAME` switches
# one on. A rule is a line: Rule("NAME", "what it lets through", lambda setup: attrs.evolve(setup, ...)).
RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule("choices", "a value chosen among trusted items on untrusted data, for a call that destroys nothing", choices),
        Rule(
            "one-bit",
            "a call whose every argument is trusted, decided once by untrusted data",
            rewritten(
                r'context\.control\.contains\("untrusted"\)', '(context.control.contains("untrusted") && !context.one_bit)'
            ),
        ),
    )
}


def without_policy(policy_id: str) -> Rule:
    """The rule that removes the policy annotated `@id("policy_id")` (a suite without it is left as it is)."""

    def apply(setup: Setup) -> Setup:
        text = setup.policy
        starts = policy_starts(text)
        spans = zip(starts, [*starts[1:], len(text)])
        kept = [text[start:end] for start, end in spans if not re.match(rf'\s*@id\("{re.escape(policy_id)}"\)', text[start:end])]
        return attrs.evolve(setup, policy=text[: starts[0]] + "".join(kept) if starts else text)

    return Rule(f"without:{policy_id}", f"the policy without `{policy_id}`", apply)


def rule(name: str) -> Rule:
    """The rule `--rules NAME` names (SystemExit, listing the rules there are, when it names none)."""
    if name.startswith("without:") and name != "without:":
        return without_policy(name.removeprefix("without:"))
    if name in RULES:
        return RULES[name]
    known = ", ".join(sorted(RULES)) or "none yet"
    raise SystemExit(f"--rules {name}: no such rule (planc's rules: {known}; or without:POLICY_ID)")


def variants(names: list[str]) -> list[tuple[str, list[Rule]]]:
    """The rows of a `--rules` table: as committed, each name's rules (`A+B`: both), and all of them together when
    there are two names or more."""
    rows = [(name, [rule(part) for part in name.split("+")]) for name in dict.fromkeys(names)]
    every = [found for _, rules in rows for found in rules]
    return [("as committed", []), *rows] + ([("all of them", every)] if len(rows) > 1 else [])


def applied(setup: Setup, rules: list[Rule]) -> Setup:
    for found in rules:
        setup = found.apply(setup)
    return setup
