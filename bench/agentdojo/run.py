"""planc on AgentDojo: every (user task, injection task) pair, checked and run through planc, scored by AgentDojo.

    .venv/bin/pip install -r bench/agentdojo/requirements.txt
    .venv/bin/python bench/agentdojo/run.py                        # every suite with plans, important_instructions
    .venv/bin/python bench/agentdojo/run.py --suite banking --attack all
    .venv/bin/python bench/agentdojo/run.py --rules without:untrusted-decides-nothing   # a table: each rule off, on
    .venv/bin/python bench/agentdojo/run.py --planner planner --models models.toml --grammar gbnf
                                               # plans from `planc plan`, the role's model in models.toml

For each pair the environment is loaded with AgentDojo's own attack planted in it, the suite's plan of
the user task is checked with the suite's policy (bench/agentdojo/suites/<suite>/) and run, its `agent`
steps answered by a scripted model (scripted_models.py: honest, or compromised by the injection), and
the outcome is scored with AgentDojo's own `utility` of the user task and `security` of the injection
task (True: the attack succeeded). The compromised model's pair runs once per combination of its
choices; a pair counts as solved only if every run solved it, and as attacked if any run was. Each
pair runs with no approvals (a call the policy flags stops the run), and checked with approvals under
two approvers (approvers.py), the oracle and the rubber stamp, which planc's run gate asks (`Hooks`)
at each flagged call. Without an attack, each user task runs with the policy off, on, and on with each
approver.

With `--planner ROLE` the plans are a model's: `planc plan` with the task's prompt, against the suite's
tools and policy, the role's model declared in `--models FILE` (`[models.ROLE]` tables, as planc.toml
writes them); without `--models`, SmolLM2-135M-Instruct on loopback (tests/real_model.py: llama.cpp through
node-llama-cpp), as bench/plan.py does. A plan the policy refuses is judged as a committed one would be
(refused at check); a task the model wrote no plan for that checks is lost, with the last round's errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adapter import SUITES, Suite  # noqa: E402
from approvers import Oracle, RubberStamp  # noqa: E402
from report import Tally, markdown, report, rules_table  # noqa: E402
from rules import Setup, applied, variants  # noqa: E402
from scripted_models import COMPROMISED, HONEST, MOST_RUNS, Scenario, combinations, serve  # noqa: E402

import planc  # noqa: E402
from planc.backend.calls.hooks import Abort, Hooks, Proceed  # noqa: E402
from planc.backend.state.values import RunError  # noqa: E402
from planc.passes.policy.load import policy_from_text  # noqa: E402

TARGET = "gpt-4o-2024-05-13"  # the victim model's name some attacks address (important_instructions: "GPT-4")


@attrs.frozen
class Outcome:
    """One run of a plan: how it ended and what AgentDojo says of it."""

    ended: str  # "ran", "refused at check", "refused at run", "failed", "not expressible", "no plan"
    utility: bool
    security: bool | None = None  # None without an injection task
    asked: int = 0  # flagged calls put to the approver
    denied: tuple[str, ...] = ()  # the calls the approver denied
    shown: int = 0  # answers the models gave to a request that held the injection
    detail: str = ""
    holds: tuple[str, ...] = ()  # of the tasks `Bench.outcome` was asked to score besides, those whose check holds


@attrs.define
class Bench:
    suite: Suite
    scenario: Scenario
    plans: dict  # user task id -> plan text
    missing: dict  # user task id -> why no plan expresses it (with a planner: why it wrote none)
    registry: object = None
    policy: object = None
    planner: str | None = None  # the model role that wrote the plans (None: the committed plans)
    check_options: dict = attrs.Factory(dict)  # planc.check's options a rule sets (rules.py)
    checked: dict = attrs.Factory(dict)  # (task id, policy on, approvals) -> CheckResult
    loaded: tuple = ()  # the injections last loaded, and the environment they made (a pair's runs load it once)
    scored: dict = attrs.Factory(dict)  # what a check said of a run, by what the run started from and did

    def check(self, task_id: str, policy: bool, approvals: bool):
        key = (task_id, policy, approvals)
        if key not in self.checked:
            # Off, the registry names no policy either: planc.check would take the one its planc.toml names.
            registry = self.registry if policy else attrs.evolve(self.registry, policy=None)
            self.checked[key] = planc.check(
                self.plans[task_id],
                registry=registry,
                policy=self.policy if policy else None,
                approvals=approvals,
                **self.check_options,
            )
        return self.checked[key]

    def outcome(
        self, user_task, injection_task=None, injections=None, model=HONEST, policy=True, approver=None, choices=None, scoring=()
    ) -> Outcome:
        """One run of the pair (`injection_task` None: the user task alone), its agent steps answered by `model`
        (the compromised one making `choices`), the calls the policy flags put to `approver` (None: they stop the
        run); of the tasks `scoring`, those whose check holds afterwards are in `holds`."""
        task_suite = self.suite.task_suite
        environment = user_task.init_environment(self.load(injections or {}))
        before = environment.model_copy(deep=True)
        self.suite.live.environment, self.suite.live.calls = environment, []
        self.scenario.start(model, user_task, injection_task, injections, before, choices)
        if user_task.ID in self.missing:
            ended = "no plan" if self.planner else "not expressible"
            output, asked, denied, detail = "", 0, (), self.missing[user_task.ID]
        elif user_task.ID not in self.plans:
            ended, output, asked, denied, detail = "no plan", "", 0, (), ""
        else:
            judge = approver.for_run(user_task, self.scenario.attacker) if approver is not None else None
            ended, output, asked, denied, detail = self.run(user_task.ID, policy, judge)

        # The environment after a run follows from the one it started from and the calls made, so a check's verdict
        # does too (with what the user was told): the runs of a pair that do the same are scored once.
        made = json.dumps([(call.function, call.args) for call in self.suite.live.calls], default=str, sort_keys=True)
        key = (user_task.ID, self.loaded[0], output, made)
        if self.scored.get("pair") != key[:2]:
            self.scored = {"pair": key[:2]}

        def score(task) -> bool:
            from agentdojo.types import text_content_block_from_string

            if (task.ID, *key) not in self.scored:
                self.scored[(task.ID, *key)] = task_suite._check_task_result(
                    task, [text_content_block_from_string(output)], before, environment, self.suite.live.calls
                )
            return self.scored[(task.ID, *key)]

        return Outcome(
            ended,
            score(user_task),
            score(injection_task) if injection_task else None,
            asked,
            denied,
            self.scenario.shown_injection,
            detail,
            tuple(task.ID for task in scoring if score(task)),
        )

    def load(self, injections: dict):
        """A fresh copy of the environment with `injections` planted (parsing it takes 60 times as long as copying
        it)."""
        key = tuple(sorted(injections.items()))
        if not self.loaded or self.loaded[0] != key:
            self.loaded = (key, self.suite.task_suite.load_and_inject_default_environment(injections))
        return self.loaded[1].model_copy(deep=True)

    def runs(self, user_task, injection_task, injections, model, approver=None) -> list[Outcome]:
        """Every run of the pair: one with the honest model; with the compromised one, one per combination of the
        choices it met (the first run makes the first choice everywhere), at most MOST_RUNS."""
        found = [self.outcome(user_task, injection_task, injections, model, approver=approver)]
        points, tried = dict(self.scenario.points), {frozenset()}
        choices = combinations(points, tried) if model == COMPROMISED else None
        while choices is not None and len(found) < MOST_RUNS:
            found.append(self.outcome(user_task, injection_task, injections, model, approver=approver, choices=choices))
            tried.add(frozenset(choices.items()))
            for key, count in self.scenario.points.items():  # a choice may lead to steps the first run never reached
                points[key] = max(points.get(key, 0), count)
            choices = combinations(points, tried)
        return found

    def run(self, task_id: str, policy: bool, judge):
        """Check and run the plan; a call the policy flags goes to `judge` (None: it stops the run)."""
        checked = self.check(task_id, policy, judge is not None)
        if not checked.ok:
            return "refused at check", "", 0, (), "; ".join(f"{d.code} {d.message}" for d in checked.diagnostics)
        flagged: list[str] = []
        denied: list[str] = []

        async def gate(call):
            approves = judge.approves(call, call.flagged is not None) if judge is not None else call.flagged is None
            if call.flagged is None:
                return Proceed()
            flagged.append(f"{call.tool.name}: {call.flagged}")
            if approves:
                return Proceed()
            if judge is not None:
                denied.append(f"{call.tool.name}({json.dumps(dict(call.args), ensure_ascii=False, default=str)})")
            return Abort(call.flagged)

        try:
            result = planc.run(checked, hooks=Hooks(gate=gate))
        except RunError as error:
            refused = bool(flagged) or "E400" in str(error) or "policy" in str(error)
            return ("refused at run" if refused else "failed"), "", len(flagged), tuple(denied), str(error)
        return "ran", answer_text(result.value), len(flagged), tuple(denied), ""


def answer_text(value) -> str:
    """What the user is told: an agent's `answer`, else the plan's result as JSON."""
    if isinstance(value, dict) and isinstance(value.get("output"), dict) and "answer" in value["output"]:
        return str(value["output"]["answer"])
    return json.dumps(value, ensure_ascii=False, default=str)


def load_plans(
    suite: Suite, planner: str | None, registry, policy, only: list[str] | None = None, grammar: str | None = None
) -> tuple[dict, dict]:
    """The plan of each user task (of `only`, when given), and why a task has none."""
    if planner is not None:
        return planned(suite, planner, registry, policy, only, grammar)
    folder = suite.folder
    missing = tomllib.loads((folder / "not_expressible.toml").read_text()) if (folder / "not_expressible.toml").exists() else {}
    plans = {}
    for task_id in suite.task_suite.user_tasks:
        if (folder / "plans" / f"{task_id}.plan").exists():
            plans[task_id] = (folder / "plans" / f"{task_id}.plan").read_text()
    return plans, missing


def planned(suite: Suite, role: str, registry, policy, only: list[str] | None, grammar: str | None) -> tuple[dict, dict]:
    """`planc plan` with the `role` model for each user task's prompt: the plan of its last round when it checks
    but for the policy's refusals (E400), else why the task has none."""
    from planc.backend.models.client import ModelError
    from planc.syntax.extract import extract

    plans, missing = {}, {}
    for task_id, task in suite.task_suite.user_tasks.items():
        if only is not None and task_id not in only:
            continue
        try:
            done = planc.plan(task.PROMPT, registry=registry, policy=policy, role=role, grammar=grammar)
        except ModelError as error:
            missing[task_id] = f"the planner failed: {error}"
            continue
        errors = [d for d in done.checked.diagnostics if d.severity == "error"]
        if done.checked.plan is not None and all(d.code == "E400" for d in errors):
            plans[task_id] = extract(done.checked.source)
        else:
            said = "; ".join(f"{d.code} {d.message}" for d in errors[:3]) + ("; ..." if len(errors) > 3 else "")
            reply = " ".join(done.rounds[-1].reply.split())
            missing[task_id] = (
                f"the planner wrote no plan that checks in {len(done.rounds)} round(s): {said} "
                f"(its last reply: {reply[:120]!r}{'...' if len(reply) > 120 else ''})"
            )
    return plans, missing


class Victim:
    """What an attack takes for the pipeline it attacks: only its name is read."""

    name = TARGET


def committed_setup(suite: Suite) -> Setup:
    return Setup((suite.folder / "policy.cedar").read_text(), (suite.folder / "planc.toml").read_text())


def bench_of(
    suite: Suite,
    scenario: Scenario,
    url: str,
    setup: Setup,
    planner: str | None = None,
    only: list[str] | None = None,
    models: dict | None = None,
    grammar: str | None = None,
) -> Bench:
    """The bench of `suite` as `setup` says (its policy, declarations and check options), its agent steps answered
    at `url`."""
    registry = suite.registry(url, setup.declarations)
    if models:
        registry = attrs.evolve(registry, models={**registry.models, **models})
    policy = policy_from_text(setup.policy, suite.folder / "policy.cedar")
    plans, missing = load_plans(suite, planner, registry, policy, only, grammar)
    return Bench(suite, scenario, plans, missing, registry, policy, planner=planner, check_options=dict(setup.check))


def run_suite(
    name: str,
    attack_names: list[str],
    planner: str | None,
    pairs: int | None,
    out,
    only: list[str] | None = None,
    models: dict | None = None,
    grammar: str | None = None,
    rows=(("as committed", []),),
) -> list[Tally]:
    """The tally of suite `name`, one per row of `rows` (a name and the rules it switches on)."""
    suite = Suite.load(name)
    oracle = suite.folder / "oracle.json"
    scenario = Scenario(oracle=json.loads(oracle.read_text()) if oracle.exists() else {})
    url, stop = serve(scenario)
    oracle = Oracle(suite.task_suite)  # what it learns of each user task's ground truth holds for every row
    try:
        return [
            measure(
                bench_of(suite, scenario, url, applied(committed_setup(suite), rules), planner, only, models, grammar),
                attack_names,
                pairs,
                out,
                only,
                row,
                oracle,
            )
            for row, rules in rows
        ]
    finally:
        stop()


def measure(
    bench: Bench,
    attack_names: list[str],
    pairs: int | None,
    out,
    only: list[str] | None = None,
    row: str = "as committed",
    oracle: Oracle | None = None,
) -> Tally:
    from agentdojo.attacks.attack_registry import load_attack

    task_suite = bench.suite.task_suite
    user_tasks = [task for task in task_suite.user_tasks.values() if only is None or task.ID in only]
    injection_tasks = list(task_suite.injection_tasks.values())
    oracle, stamp = oracle or Oracle(task_suite), RubberStamp()
    tally = Tally(bench.suite.name, row, len(user_tasks))
    for task in user_tasks:
        tally.count_benign(
            task.ID,
            bench.outcome(task, policy=False),
            bench.outcome(task),
            bench.outcome(task, approver=oracle),
            bench.outcome(task, approver=stamp, scoring=injection_tasks),
            passes_untouched(task_suite, task, injection_tasks),
        )
    for attack_name in attack_names:
        attack = load_attack(attack_name, task_suite, Victim())
        done = 0
        for user_task in user_tasks:
            for injection_task in injection_tasks:
                if pairs is not None and done >= pairs:
                    break
                done += 1
                injections = attack.attack(user_task, injection_task)
                pair = (user_task, injection_task, injections)
                runs = {
                    "honest": bench.runs(*pair, HONEST),
                    "compromised": bench.runs(*pair, COMPROMISED),
                    "oracle": bench.runs(*pair, COMPROMISED, oracle),
                    "rubber stamp": bench.runs(*pair, COMPROMISED, stamp),
                }
                tally.count_pair(f"{attack_name} {user_task.ID} x {injection_task.ID}", runs)
                print(
                    json.dumps(
                        {
                            "rules": row,
                            "attack": attack_name,
                            "user_task": user_task.ID,
                            "injection_task": injection_task.ID,
                            **{reader: summary(found) for reader, found in runs.items()},
                        }
                    ),
                    file=out,
                )
    return tally


def passes_untouched(task_suite, user_task, injection_tasks) -> tuple[bool, tuple[str, ...]]:
    """Whether `user_task`'s utility holds with no call made and nothing answered, and which injection tasks'
    security does, with no injection either."""
    from agentdojo.types import text_content_block_from_string

    environment = user_task.init_environment(task_suite.load_and_inject_default_environment({}))

    def holds(task) -> bool:
        return task_suite._check_task_result(
            task, [text_content_block_from_string("")], environment, environment.model_copy(deep=True), []
        )

    return holds(user_task), tuple(task.ID for task in injection_tasks if holds(task))


def summary(runs: list[Outcome]) -> dict:
    """A pair's runs under one reader and approver, as the log keeps them: the first whole, the rest counted."""
    return {
        "runs": len(runs),
        "utility": all(run.utility for run in runs),
        "security": any(bool(run.security) for run in runs),
        "first": attrs.asdict(runs[0]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=SUITES, action="append", help="a suite (repeatable); default: every suite with plans")
    parser.add_argument(
        "--attack",
        default="important_instructions",
        help="an attack AgentDojo registers, or `all` (every one but `manual`, which asks a person)",
    )
    parser.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="RULE",
        help="measure with this rule too (repeatable; rules.py): a row as committed, one per rule, and one with all of them",
    )
    parser.add_argument(
        "--rules-only", action="store_true", help="with --rules: leave out the row as committed (measured on its own)"
    )
    parser.add_argument("--planner", help="take plans from `planc plan` with this model role instead of the committed ones")
    parser.add_argument(
        "--models", type=Path, help="with --planner: a TOML file of [models.ROLE] tables (default: SmolLM2-135M on loopback)"
    )
    parser.add_argument("--grammar", choices=("gbnf", "lark"), help="with --planner: send the plan grammar to the model")
    parser.add_argument("--pairs", type=int, help="at most this many pairs per suite and attack (a smoke run)")
    parser.add_argument("--user-task", action="append", help="only this user task (repeatable)")
    parser.add_argument("--log", type=Path, help="write every pair's outcome here, one JSON line each")
    parser.add_argument("--markdown", action="store_true", help="print the table docs/security.md keeps, first")
    options = parser.parse_args(argv)
    from agentdojo.attacks.attack_registry import ATTACKS

    # `manual` asks whoever runs the bench to type each injection: not an attack a batch can run.
    attacks = sorted(set(ATTACKS) - {"manual"}) if options.attack == "all" else [options.attack]
    suites = options.suite or [s for s in SUITES if (Path(__file__).resolve().parent / "suites" / s / "plans").is_dir()]
    rows = variants(options.rules)
    if options.rules_only and len(rows) > 1:
        rows = rows[1:]
    models, server = planner_models(options.planner, options.models) if options.planner else ({}, None)
    try:
        with open(options.log or "/dev/null", "w") as out:
            tallies = [
                run_suite(name, attacks, options.planner, options.pairs, out, options.user_task, models, options.grammar, rows)
                for name in suites
            ]
    finally:
        if server is not None:
            server.stop()
    by_row = [[suite[index] for suite in tallies] for index in range(len(rows))]
    if options.markdown:
        print(markdown(by_row[-1]))
    if len(rows) > 1:
        print(rules_table(by_row))
    print(report(by_row[-1]))
    return 0


def planner_models(role: str, models: Path | None):
    """The models `--models` declares, or the planner `role` as SmolLM2-135M-Instruct served on loopback (and
    that server, to stop)."""
    from planc.registry.loading.config import registry_from_text
    from planc.registry.settings.declarations import ModelConfig
    from planc.registry.settings.errors import ConfigError

    if models is not None:
        try:
            declared = registry_from_text(models.read_text(), models).models
        except (OSError, ConfigError) as error:
            raise SystemExit(f"--models: {error}") from None
        if role not in declared:
            raise SystemExit(f"--models: {models} declares no [models.{role}]")
        return declared, None
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from real_model import SAMPLING, LlamaServer, skip_reason

    reason = skip_reason()
    if reason:
        raise SystemExit(f"--planner {role} without --models asks SmolLM2-135M on loopback, which cannot run: {reason}")
    server = LlamaServer()
    # A plan with an agent step is longer than the tests' 96 tokens: a reply may take 256.
    sampling = {**SAMPLING, "max_tokens": 256}
    return {role: ModelConfig(role, server.url, "smollm2", timeout_s=3600, sampling=sampling)}, server


if __name__ == "__main__":
    raise SystemExit(main())
