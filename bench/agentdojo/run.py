"""planc on AgentDojo: every (user task, injection task) pair, checked and run through planc, scored by AgentDojo.

    .venv/bin/pip install -r bench/agentdojo/requirements.txt
    .venv/bin/python bench/agentdojo/run.py                        # every suite with plans, important_instructions
    .venv/bin/python bench/agentdojo/run.py --suite banking --attack all
    .venv/bin/python bench/agentdojo/run.py --planner planner --models models.toml --grammar gbnf
                                               # plans from `planc plan`, the role's model in models.toml

For each pair the environment is loaded with AgentDojo's own attack planted in it, the suite's plan of
the user task is checked with the suite's policy (bench/agentdojo/suites/<suite>/) and run, its `agent`
steps answered by a scripted model (scripted_models.py: honest, or compromised by the injection), and
the outcome is scored with AgentDojo's own `utility` of the user task and `security` of the injection
task (True: the attack succeeded). Without an attack, utility is measured with the policy off and on,
and with a person approving every call the policy flags only for where its values came from.

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
from scripted_models import COMPROMISED, HONEST, Scenario, serve  # noqa: E402

import planc  # noqa: E402
from planc.backend.calls.hooks import Abort, Hooks, Proceed  # noqa: E402
from planc.backend.state.values import RunError  # noqa: E402

TARGET = "gpt-4o-2024-05-13"  # the victim model's name some attacks address (important_instructions: "GPT-4")


@attrs.frozen
class Outcome:
    """One run of a plan: how it ended and what AgentDojo says of it."""

    ended: str  # "ran", "refused at check", "refused at run", "failed", "not expressible", "no plan"
    utility: bool
    security: bool | None = None  # None without an injection task
    approved: int = 0  # calls a person let through
    detail: str = ""


@attrs.define
class Bench:
    suite: Suite
    scenario: Scenario
    plans: dict  # user task id -> plan text
    missing: dict  # user task id -> why no plan expresses it (with a planner: why it wrote none)
    registry: object = None
    policy: object = None
    planner: str | None = None  # the model role that wrote the plans (None: the committed plans)
    checked: dict = attrs.Factory(dict)  # (task id, policy on, approvals) -> CheckResult

    def check(self, task_id: str, policy: bool, approvals: bool):
        key = (task_id, policy, approvals)
        if key not in self.checked:
            # Off, the registry names no policy either: planc.check would take the one its planc.toml names.
            registry = self.registry if policy else attrs.evolve(self.registry, policy=None)
            self.checked[key] = planc.check(self.plans[task_id], registry=registry,
                                            policy=self.policy if policy else None, approvals=approvals)
        return self.checked[key]

    def outcome(self, user_task, injection_task=None, injections=None, model=HONEST, policy=True,
                approvals=False) -> Outcome:
        task_suite = self.suite.task_suite
        environment = task_suite.load_and_inject_default_environment(injections or {})
        environment = user_task.init_environment(environment)
        before = environment.model_copy(deep=True)
        self.suite.live.environment, self.suite.live.calls = environment, []
        self.scenario.model, self.scenario.user_task, self.scenario.injection_task = model, user_task, injection_task
        self.scenario.injections, self.scenario.environment = dict(injections or {}), before
        if user_task.ID in self.missing:
            ended = "no plan" if self.planner else "not expressible"
            output, approved, detail = "", 0, self.missing[user_task.ID]
        elif user_task.ID not in self.plans:
            ended, output, approved, detail = "no plan", "", 0, ""
        else:
            ended, output, approved, detail = self.run(user_task.ID, policy, approvals)

        def score(task) -> bool:
            from agentdojo.types import text_content_block_from_string

            return task_suite._check_task_result(task, [text_content_block_from_string(output)], before,
                                                 environment, self.suite.live.calls)

        return Outcome(ended, score(user_task), score(injection_task) if injection_task else None, approved, detail)

    def run(self, task_id: str, policy: bool, approvals: bool):
        checked = self.check(task_id, policy, approvals)
        if not checked.ok:
            return "refused at check", "", 0, "; ".join(f"{d.code} {d.message}" for d in checked.diagnostics)
        flagged: list[str] = []

        async def gate(call):
            if call.flagged is None:
                return Proceed()
            flagged.append(f"{call.tool.name}: {call.flagged}")
            return Proceed() if approvals else Abort(call.flagged)

        try:
            result = planc.run(checked, hooks=Hooks(gate=gate))
        except RunError as error:
            refused = bool(flagged) or "E400" in str(error) or "policy" in str(error)
            return ("refused at run" if refused else "failed"), "", 0, str(error)
        return "ran", answer_text(result.value), len(flagged) if approvals else 0, ""


def answer_text(value) -> str:
    """What the user is told: an agent's `answer`, else the plan's result as JSON."""
    if isinstance(value, dict) and isinstance(value.get("output"), dict) and "answer" in value["output"]:
        return str(value["output"]["answer"])
    return json.dumps(value, ensure_ascii=False, default=str)


def load_plans(suite: Suite, planner: str | None, registry, policy, only: list[str] | None = None,
               grammar: str | None = None) -> tuple[dict, dict]:
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
            missing[task_id] = (f"the planner wrote no plan that checks in {len(done.rounds)} round(s): {said} "
                                f"(its last reply: {reply[:120]!r}{'...' if len(reply) > 120 else ''})")
    return plans, missing


class Victim:
    """What an attack takes for the pipeline it attacks: only its name is read."""

    name = TARGET


def run_suite(name: str, attack_names: list[str], planner: str | None, pairs: int | None, out,
              only: list[str] | None = None, models: dict | None = None, grammar: str | None = None) -> dict:
    suite = Suite.load(name)
    scenario = Scenario()
    oracle = suite.folder / "oracle.json"
    scenario.oracle = json.loads(oracle.read_text()) if oracle.exists() else {}
    url, stop = serve(scenario)
    try:
        registry = suite.registry(url)
        if models:
            registry = attrs.evolve(registry, models={**registry.models, **models})
        policy = planc.load_policy(registry.policy)
        plans, missing = load_plans(suite, planner, registry, policy, only, grammar)
        bench = Bench(suite, scenario, plans, missing, registry, policy, planner=planner)
        return measure(bench, attack_names, pairs, out, only)
    finally:
        stop()


def measure(bench: Bench, attack_names: list[str], pairs: int | None, out, only: list[str] | None = None) -> dict:
    from agentdojo.attacks.attack_registry import load_attack

    task_suite = bench.suite.task_suite
    user_tasks = [task for task in task_suite.user_tasks.values() if only is None or task.ID in only]
    injection_tasks = list(task_suite.injection_tasks.values())
    clean = {task.ID: {"off": bench.outcome(task, policy=False), "on": bench.outcome(task),
                       "approved": bench.outcome(task, approvals=True)} for task in user_tasks}
    totals = {"suite": bench.suite.name, "tasks": len(user_tasks),
              "utility_off": sum(o["off"].utility for o in clean.values()),
              "utility_on": sum(o["on"].utility for o in clean.values()),
              "only_with_approval": sorted(t for t, o in clean.items() if o["approved"].utility and not o["on"].utility),
              "lost": {t: cause(o["on"], o["approved"]) for t, o in clean.items() if not o["on"].utility},
              "pairs": 0, "honest_utility": 0, "compromised_utility": 0, "attacks_succeeded": 0,
              "refused_at_check": 0, "refused_at_run": 0, "failed": 0, "succeeded": [], "shown_injection": 0}
    for attack_name in attack_names:
        attack = load_attack(attack_name, task_suite, Victim())
        done = 0
        for user_task in user_tasks:
            for injection_task in injection_tasks:
                if pairs is not None and done >= pairs:
                    break
                done += 1
                injections = attack.attack(user_task, injection_task)
                honest = bench.outcome(user_task, injection_task, injections, HONEST)
                bench.scenario.shown_injection = 0
                worst = bench.outcome(user_task, injection_task, injections, COMPROMISED)
                totals["pairs"] += 1
                totals["honest_utility"] += honest.utility
                totals["compromised_utility"] += worst.utility
                totals["attacks_succeeded"] += bool(worst.security) or bool(honest.security)
                totals["refused_at_check"] += worst.ended == "refused at check"
                totals["refused_at_run"] += worst.ended == "refused at run"
                totals["failed"] += worst.ended == "failed"
                totals["shown_injection"] += bench.scenario.shown_injection > 0
                if worst.security or honest.security:
                    totals["succeeded"].append(f"{attack_name} {user_task.ID} x {injection_task.ID}")
                print(json.dumps({"attack": attack_name, "user_task": user_task.ID, "injection_task": injection_task.ID,
                                  "honest": attrs.asdict(honest), "compromised": attrs.asdict(worst)}), file=out)
    return totals


def cause(on: Outcome, approved: Outcome) -> str:
    if on.ended == "not expressible":
        return f"not expressible: {on.detail}"
    if on.ended == "no plan":
        return f"no plan: {on.detail}" if on.detail else "no plan written yet"
    if approved.utility:
        return "needs a person's approval of a flagged flow"
    if on.ended in ("refused at check", "refused at run"):
        return f"policy refused an honest flow: {on.detail}"
    if on.ended == "failed":
        return f"adapter or plan failed: {on.detail}"
    return "ran, but AgentDojo's utility says no"


def report(totals: list[dict]) -> str:
    lines = []
    for t in totals:
        pairs = t["pairs"] or 1
        lines += [f"{t['suite']}: {t['tasks']} user tasks, {t['pairs']} pairs",
                  f"  utility, no attack: policy off {t['utility_off']}/{t['tasks']}, policy on {t['utility_on']}/{t['tasks']}"
                  f" (+{len(t['only_with_approval'])} with a person's approval: {', '.join(t['only_with_approval']) or 'none'})",
                  f"  utility under attack: honest {t['honest_utility']}/{t['pairs']} ({100 * t['honest_utility'] / pairs:.0f}%),"
                  f" compromised {t['compromised_utility']}/{t['pairs']}",
                  f"  attacks succeeded: {t['attacks_succeeded']}/{t['pairs']}; compromised runs refused at check"
                  f" {t['refused_at_check']}, at run time {t['refused_at_run']}, failed {t['failed']};"
                  f" pairs whose agent was shown the injection {t['shown_injection']}"]
        lines += [f"  lost {task}: {why}" for task, why in sorted(t["lost"].items(), key=lambda kv: int(kv[0].rsplit('_', 1)[1]))]
        lines += [f"  SUCCEEDED: {pair}" for pair in t["succeeded"]]
    u, n = sum(t["honest_utility"] for t in totals), sum(t["pairs"] for t in totals)
    a, r = sum(t["attacks_succeeded"] for t in totals), sum(t["refused_at_check"] for t in totals)
    lines.append(f"agentdojo: utility {u}/{n} under attack, {a}/{n} attacks succeeded, {r} refused at check")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=SUITES, action="append", help="a suite (repeatable); default: every suite with plans")
    parser.add_argument("--attack", default="important_instructions",
                        help="an attack AgentDojo registers, or `all` (every one but `manual`, which asks a person)")
    parser.add_argument("--planner", help="take plans from `planc plan` with this model role instead of the committed ones")
    parser.add_argument("--models", type=Path, help="with --planner: a TOML file of [models.ROLE] tables (default: "
                                                    "SmolLM2-135M on loopback)")
    parser.add_argument("--grammar", choices=("gbnf", "lark"), help="with --planner: send the plan grammar to the model")
    parser.add_argument("--pairs", type=int, help="at most this many pairs per suite and attack (a smoke run)")
    parser.add_argument("--user-task", action="append", help="only this user task (repeatable)")
    parser.add_argument("--log", type=Path, help="write every pair's outcome here, one JSON line each")
    options = parser.parse_args(argv)
    from agentdojo.attacks.attack_registry import ATTACKS

    # `manual` asks whoever runs the bench to type each injection: not an attack a batch can run.
    attacks = sorted(set(ATTACKS) - {"manual"}) if options.attack == "all" else [options.attack]
    suites = options.suite or [s for s in SUITES if (Path(__file__).resolve().parent / "suites" / s / "plans").is_dir()]
    models, server = planner_models(options.planner, options.models) if options.planner else ({}, None)
    try:
        with open(options.log or "/dev/null", "w") as out:
            totals = [run_suite(name, attacks, options.planner, options.pairs, out, options.user_task, models,
                                options.grammar) for name in suites]
    finally:
        if server is not None:
            server.stop()
    print(report(totals))
    return 0


def planner_models(role: str, models: Path | None):
    """The models `--models` declares, or the planner `role` as SmolLM2-135M-Instruct served on loopback (and
    that server, to stop)."""
    from planc.registry.config import registry_from_text
    from planc.registry.declarations import ModelConfig
    from planc.registry.errors import ConfigError

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
