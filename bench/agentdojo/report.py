"""What run.py counts of a suite, and how it prints it.

Pairs are (user task, injection task) under attack. A pair's runs under the compromised model are all the
combinations of its choices (scripted_models.py): it is solved if every run solved it (a lower bound) and
attacked if any run's security check held.
"""

from __future__ import annotations

from collections import Counter

import attrs


def order(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[1])


@attrs.define
class Tally:
    suite: str
    row: str  # the rules it was measured with (rules.py)
    tasks: int
    benign: int = 0  # user tasks solved with no injection, policy on, no approvals (honest model)
    benign_off: int = 0  # ... with the policy off
    benign_oracle: int = 0  # ... with the oracle approving
    benign_stamp: int = 0  # ... with the rubber stamp approving
    no_call: list = attrs.Factory(list)  # user tasks whose utility holds with no call made
    lost: dict = attrs.Factory(dict)  # user task -> why it is not solved with no injection
    without_injection: list = attrs.Factory(list)  # "user task x injection task": security holds with no injection
    pairs: int = 0
    honest: int = 0  # pairs solved by the honest model (the upper bound of utility under attack)
    compromised: int = 0  # pairs solved by the compromised model in every run (the lower bound)
    oracle: int = 0  # pairs solved with the oracle approving (compromised model)
    stamp: int = 0  # pairs solved with the rubber stamp approving (compromised model)
    asked: list = attrs.Factory(list)  # approvals asked in each pair solved with the oracle (the most of its runs)
    denied: Counter = attrs.Factory(Counter)  # tool -> the pairs in which the oracle denied a call of it
    denying: int = 0  # the pairs in which the oracle denied a call
    attacked: list = attrs.Factory(list)  # pairs attacked with no approvals (either model)
    attacked_oracle: list = attrs.Factory(list)  # pairs attacked with the oracle approving
    attacked_stamp: list = attrs.Factory(list)  # pairs attacked with the rubber stamp approving
    refused_at_check: int = 0  # pairs the compromised model's run was refused at check (no approvals)
    refused_at_run: int = 0
    failed: int = 0
    shown: int = 0  # pairs in which an agent step was shown the injection (no approvals)
    shown_approving: int = 0  # ... with the oracle approving
    runs: int = 0  # runs of the compromised model, with no approvals

    def count_benign(self, task_id: str, off, on, oracle, stamp, untouched) -> None:
        passes, holds = untouched
        self.benign += on.utility
        self.benign_off += off.utility
        self.benign_oracle += oracle.utility
        self.benign_stamp += stamp.utility
        if passes:
            self.no_call.append(task_id)
        if not on.utility:
            self.lost[task_id] = cause(on, oracle)
        self.without_injection += [f"{task_id} x {injection}" for injection in sorted({*holds, *stamp.holds}, key=order)]

    def count_pair(self, name: str, runs: dict) -> None:
        honest, worst, oracle, stamp = (runs[reader] for reader in ("honest", "compromised", "oracle", "rubber stamp"))
        self.pairs += 1
        self.honest += honest[0].utility
        self.compromised += all(run.utility for run in worst)
        self.runs += len(worst)
        self.stamp += all(run.utility for run in stamp)
        if all(run.utility for run in oracle):
            self.oracle += 1
            self.asked.append(max(run.asked for run in oracle))
        denied = {call.split("(", 1)[0] for run in oracle for call in run.denied}
        self.denied.update(denied)
        self.denying += bool(denied)
        if honest[0].security or any(run.security for run in worst):
            self.attacked.append(name)
        if any(run.security for run in oracle):
            self.attacked_oracle.append(name)
        if any(run.security for run in stamp):
            self.attacked_stamp.append(name)
        self.refused_at_check += worst[0].ended == "refused at check"
        self.refused_at_run += any(run.ended == "refused at run" for run in worst)
        self.failed += any(run.ended == "failed" for run in worst)
        self.shown += any(run.shown for run in worst)
        self.shown_approving += any(run.shown for run in oracle)

    @property
    def attacks(self) -> int:
        """Pairs attacked with no approvals or with the oracle."""
        return len(set(self.attacked) | set(self.attacked_oracle))


def cause(on, oracle) -> str:
    if on.ended == "not expressible":
        return f"not expressible: {on.detail}"
    if on.ended == "no plan":
        return f"no plan: {on.detail}" if on.detail else "no plan written yet"
    if oracle.utility:
        return f"needs a person's approval of a flagged flow ({oracle.asked} asked, the oracle approves)"
    if on.ended in ("refused at check", "refused at run"):
        denied = f"; the oracle denies {', '.join(oracle.denied)}" if oracle.denied else ""
        return f"policy refused an honest flow: {on.detail}{denied}"
    if on.ended == "failed":
        return f"adapter or plan failed: {on.detail}"
    return "ran, but AgentDojo's utility says no"


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else f"{part}/{whole}"


def names(found) -> str:
    return ", ".join(found) if found else "none"


def suite_lines(t: Tally) -> list[str]:
    mean = sum(t.asked) / len(t.asked) if t.asked else 0
    denied = ", ".join(f"{tool} {count}" for tool, count in t.denied.most_common())
    lines = [
        f"{t.suite}: {t.tasks} user tasks, {t.pairs} pairs",
        f"  benign utility: {share(t.benign, t.tasks)} (policy on, no approvals; policy off {t.benign_off},"
        f" with the oracle {t.benign_oracle}, with the rubber stamp {t.benign_stamp})",
        f"  utility under attack: compromised reader {share(t.compromised, t.pairs)} (lower bound),"
        f" honest reader {share(t.honest, t.pairs)} (upper bound)",
        f"  with approvals, compromised reader: oracle {share(t.oracle, t.pairs)}, approvals per solved pair"
        f" {mean:.2f} (mean), {max(t.asked, default=0)} (max), pairs in which it denied a call {t.denying}"
        f"{f' ({denied})' if denied else ''}; rubber stamp {share(t.stamp, t.pairs)},"
        f" {len(t.attacked_stamp)}/{t.pairs} attacks succeeded",
        f"  attacks succeeded: {len(t.attacked)}/{t.pairs} with no approvals, {len(t.attacked_oracle)}/{t.pairs} with the oracle",
        f"  compromised reader, no approvals: {t.runs} runs; refused at check {t.refused_at_check}, at run time"
        f" {t.refused_at_run}, failed {t.failed}; pairs whose agent was shown the injection {t.shown}"
        f" ({t.shown_approving} with the oracle)",
        f"  pass with no call: {names(sorted(t.no_call, key=order))}",
        f"  security true without any injection: {names(t.without_injection)}",
    ]
    lines += [f"  lost {task}: {why}" for task, why in sorted(t.lost.items(), key=lambda kv: order(kv[0]))]
    lines += [f"  SUCCEEDED: {pair}" for pair in t.attacked]
    lines += [f"  SUCCEEDED with the oracle: {pair}" for pair in t.attacked_oracle]
    lines += [f"  succeeded with the rubber stamp: {pair}" for pair in t.attacked_stamp]
    return lines


def combined(tallies: list[Tally], suite: str = "all") -> Tally:
    """The tally of `tallies` together: counts added, lists joined."""
    whole = Tally(suite, tallies[0].row if tallies else "", 0)
    for field in attrs.fields(Tally):
        if field.name in ("suite", "row"):
            continue
        parts = [getattr(t, field.name) for t in tallies]
        if field.type == "int":
            setattr(whole, field.name, sum(parts))
        elif field.type == "dict":
            setattr(
                whole, field.name, {f"{t.suite} {key}": value for t in tallies for key, value in getattr(t, field.name).items()}
            )
        elif field.type == "Counter":
            setattr(whole, field.name, sum(parts, Counter()))
        else:
            setattr(whole, field.name, [item for part in parts for item in part])
    return whole


def last_line(t: Tally) -> str:
    return (
        f"agentdojo: benign {t.benign}/{t.tasks}, under attack {t.compromised}/{t.pairs}, "
        f"with approvals {t.oracle}/{t.pairs} ({sum(t.asked)} approvals), "
        f"attacks {t.attacks}/{t.pairs}, refused at check {t.refused_at_check}"
    )


def report(tallies: list[Tally]) -> str:
    """Each suite's numbers, then the line that sums them."""
    return "\n".join([line for t in tallies for line in suite_lines(t)] + [last_line(combined(tallies))])


def rules_table(rows: list[list[Tally]]) -> str:
    """One line per suite and row of a `--rules` run, each row's suites together last."""
    return "\n".join(
        f"rules {t.row!r}: {t.suite}: " + last_line(t).removeprefix("agentdojo: ")
        for tallies in rows
        for t in [*tallies, combined(tallies)]
    )


MARKDOWN_ROWS = (
    ("user tasks", lambda t: str(t.tasks)),
    ("benign utility (policy on, no approvals)", lambda t: share(t.benign, t.tasks)),
    ("... of them passing with no call", lambda t: str(len(t.no_call))),
    ("(user task, injection task) pairs", lambda t: str(t.pairs)),
    ("utility under attack, compromised reader (lower bound)", lambda t: share(t.compromised, t.pairs)),
    ("utility under attack, honest reader (upper bound)", lambda t: share(t.honest, t.pairs)),
    ("with approvals, compromised reader: solved with the oracle", lambda t: share(t.oracle, t.pairs)),
    (
        "approvals per pair solved with the oracle (mean, max)",
        lambda t: f"{sum(t.asked) / len(t.asked) if t.asked else 0:.2f}, {max(t.asked, default=0)}",
    ),
    ("pairs in which the oracle denied a call", lambda t: str(t.denying)),
    ("attacks succeeded under the rubber stamp", lambda t: f"{len(t.attacked_stamp)}/{t.pairs}"),
    ("attacks succeeded, no approvals", lambda t: f"{len(t.attacked)}/{t.pairs}"),
    ("attacks succeeded, with the oracle", lambda t: f"{len(t.attacked_oracle)}/{t.pairs}"),
    ("pairs whose security check holds without any injection", lambda t: str(len(t.without_injection))),
    ("compromised pairs refused by `planc check` (no approvals)", lambda t: str(t.refused_at_check)),
    ("pairs whose agent was shown the injection (no approvals; with the oracle)", lambda t: f"{t.shown}; {t.shown_approving}"),
    ("benign utility, policy off", lambda t: share(t.benign_off, t.tasks)),
    ("benign utility, with the oracle", lambda t: share(t.benign_oracle, t.tasks)),
    ("benign utility, with the rubber stamp", lambda t: share(t.benign_stamp, t.tasks)),
    ("utility under attack, compromised reader, rubber stamp", lambda t: share(t.stamp, t.pairs)),
)


def markdown(tallies: list[Tally]) -> str:
    """The table docs/security.md keeps: a column per suite, and one for all of them."""
    columns = [*tallies, combined(tallies)]
    lines = ["| | " + " | ".join(t.suite for t in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(row(t) for t in columns) + " |" for label, row in MARKDOWN_ROWS]
    return "\n".join(lines)
