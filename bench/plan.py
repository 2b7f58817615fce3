"""What planc adds to each round of the planning loop, against the check alone.

    .venv/bin/python bench/plan.py

A registry of 50 tools (typed parameters, `returns`, effects, descriptions) and a model's reply: a
sentence of prose around a fenced 30-step plan with two mistakes (an unknown parameter, a bare
word). Timed in one run, best of 7 samples, each looping at least 50 ms:

- check: `planc.check` of the plan text alone (the baseline);
- round: what `planc plan` does with one reply: extract the plan, check it, render the repair;
- prompt: building the system prompt for the registry (once per task, not per round: its examples
  are checked against the registry, which is most of its cost).

No model is asked there: what a round costs the model is the model's; that is planc's share.

    .venv/bin/python bench/plan.py --model [--config planc.toml] [--tasks FILE] [--limit N] [--arms grammar,free]
                                   [--max-tokens N]

The real-model rows: each task of FILE (default examples/incidents/tasks.txt, one a line) planned
with `planc.plan` (3 rounds) against the project of the planc.toml (default the incidents
example), once with the decoder grammar (GBNF, as `planc plan --grammar gbnf` sends it) and once
without (`--arms` chooses: two runs, an arm each, share a two-core machine's work). The model is that
planc.toml's `[models.planner]` (or `[models.default]`) when it has one, so a larger model can be
measured wherever one answers; else SmolLM2-135M-Instruct run by llama.cpp
on loopback (tests/real_model.py: greedy, seed 7, at most 64 tokens a reply, as the tests ask).
`--max-tokens N` sends N instead (to either model). Per arm: how many replies parse, how many tasks
end with a plan that checks clean, the mean rounds and the time; per task, how many of its replies
parse, its first and last reply, and each reply that does not parse as the model wrote it (under a
grammar planc keeps only a reply's finished pipelines: what was cut off says why).
"""

from __future__ import annotations

import gc
import random
import time
from pathlib import Path

import planc
from planc.planning.prompt import system_prompt
from planc.registry import registry_from_text

ROOT = Path(__file__).resolve().parents[1]
TOOLS = 50
STEPS = 30
KINDS = [("string", '"x"'), ("integer", "5"), ("boolean", "true")]
ARMS = {"grammar": "gbnf", "free": None}  # the real-model rows: with the decoder grammar, and without


def make_registry(rng: random.Random) -> tuple[str, list[dict]]:
    lines, tools = [], []
    for number in range(TOOLS):
        params = {f"p{k}": rng.choice(KINDS) for k in range(rng.randint(1, 4))}
        schema = ", ".join(f'{name} = {{ type = "{kind}" }}' for name, (kind, _) in params.items())
        lines += [
            f"[tools.tool{number}]",
            f'description = "Tool number {number}: does a thing with its input"',
            f"params = {{ {schema} }}",
            f'required = ["{next(iter(params))}"]',
            'returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }',
            f"effects = {{ read_only = {'true' if number % 3 else 'false'} }}",
            "",
        ]
        tools.append({"name": f"tool{number}", "params": params})
    return "\n".join(lines), tools


def make_reply(rng: random.Random, tools: list[dict]) -> str:
    steps = []
    for number in range(STEPS):
        tool = rng.choice(tools)
        args = [f"{name}: {literal}" for name, (_, literal) in tool["params"].items()]
        if number == 7:
            args.append("limt: 5")  # E201
        if number == 19:
            args[0] = args[0].split(":")[0] + ": bullets"  # E206
        steps.append(f"s{number} = {tool['name']}({', '.join(args)})")
    return "Here is a plan that should do it:\n\n```\n" + "\n".join(steps) + "\n```\n\nIt runs the steps in order.\n"


def best(function) -> float:
    """Seconds per call: the best of 7 samples, each looping at least 50 ms."""
    samples = []
    for _ in range(7):
        count, start = 0, time.perf_counter()
        while True:
            function()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= 0.05:
                break
        samples.append(elapsed / count)
        gc.collect()
    return min(samples)


def real_model(config: Path, tasks_file: Path, limit: int | None, arms: list[str], max_tokens: int | None) -> None:
    import sys

    import attrs

    from planc.backend.models.client import role_config
    from planc.planning import planner
    from planc.registry.settings.declarations import ModelConfig

    sys.path.insert(0, str(ROOT / "tests"))
    from real_model import SAMPLING, LlamaServer, skip_reason

    registry = planc.load_registry(config)
    policy = planc.load_policy(registry.policy) if registry.policy else None
    tasks = [
        line.strip() for line in tasks_file.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")
    ][:limit]
    server = None
    if role_config(registry, "planner") is None:
        reason = skip_reason()
        if reason:
            raise SystemExit(f"no [models.planner] in {config}, and no local model: {reason}")
        server = LlamaServer()
        registry = attrs.evolve(
            registry, models={"planner": ModelConfig("planner", server.url, "smollm2", timeout_s=3600, sampling=SAMPLING)}
        )
    model = role_config(registry, "planner")
    if max_tokens is not None:
        model = attrs.evolve(model, sampling={**model.sampling, "max_tokens": max_tokens})
        registry = attrs.evolve(registry, models={**registry.models, model.name: model})
    # The replies as the model wrote them: under a grammar planc keeps only the finished pipelines of
    # one, so a reply that does not parse is shown whole, to say why.
    written: list[str] = []
    keep = planner.complete_pipelines

    def kept(text: str) -> str:
        written.append(text)
        return keep(text)

    planner.complete_pipelines = kept
    print(
        f"{len(tasks)} tasks of {tasks_file.name}, project {config}, model {model.model} at {model.base_url}, "
        f"request fields {dict(model.sampling)}\n"
    )
    print(f"{'':<22}{'parse':>8}{'clean':>8}{'rounds':>8}{'s/task':>8}")
    try:
        for grammar in [ARMS[arm] for arm in arms]:
            parsed = clean = rounds = 0
            start = time.perf_counter()
            for task in tasks:
                written.clear()
                planned = planc.plan(task, registry=registry, policy=policy, grammar=grammar)
                parsed_here = sum(round_.checked.plan is not None for round_ in planned.rounds)
                parsed += parsed_here
                clean += planned.ok
                rounds += len(planned.rounds)
                arm = "grammar" if grammar else "no grammar"
                print(
                    f"  {arm} | {task} | {parsed_here}/{len(planned.rounds)} parse | "
                    f"{'clean' if planned.ok else 'not clean'} | {planned.rounds[0].reply!r} | last "
                    f"{planned.rounds[-1].reply!r}",
                    flush=True,
                )
                for number, round_ in enumerate(planned.rounds):
                    if round_.checked.plan is None and number < len(written):
                        print(f"    round {number + 1} does not parse; as written: {written[number]!r}", flush=True)
            seconds = (time.perf_counter() - start) / len(tasks)
            name = "decoder grammar" if grammar else "no grammar"
            print(
                f"{name:<22}{parsed:>4}/{rounds:<3}{clean:>4}/{len(tasks):<3}{rounds / len(tasks):>8.2f}{seconds:>8.1f}",
                flush=True,
            )
    finally:
        planner.complete_pipelines = keep
        if server is not None:
            server.stop()


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="store_true", help="the real-model rows")
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "incidents" / "planc.toml")
    parser.add_argument("--tasks", type=Path, default=ROOT / "examples" / "incidents" / "tasks.txt")
    parser.add_argument("--limit", type=int, help="only the first N tasks")
    parser.add_argument(
        "--arms",
        default="grammar,free",
        help="the rows to measure, of grammar (the decoder grammar) and free (none), comma-separated",
    )
    parser.add_argument("--max-tokens", type=int, help="a reply's token limit (default: the model's own; 64 for the local model)")
    options = parser.parse_args()
    if options.model:
        arms = options.arms.split(",")
        if not set(arms) <= set(ARMS):
            parser.error(f"--arms takes {', '.join(ARMS)}, not {options.arms}")
        real_model(options.config, options.tasks, options.limit, arms, options.max_tokens)
        return
    share()


def share() -> None:
    rng = random.Random(13)
    toml, tools = make_registry(rng)
    registry = registry_from_text(toml, Path("planc.toml"))
    reply = make_reply(rng, tools)
    plan_text = planc.extract(reply)

    def round_() -> str:
        checked = planc.check(reply, extract_plan=True, registry=registry)
        return planc.render_repair(checked.source, checked.diagnostics)

    codes = [d.code for d in planc.check(reply, extract_plan=True, registry=registry).diagnostics if d.is_error]
    assert codes == ["E201", "E206"], codes  # the round measured is a round with a repair
    rows = [
        ("check of the plan alone", best(lambda: planc.check(plan_text, registry=registry))),
        ("round: extract + check + repair", best(round_)),
        ("system prompt for the registry", best(lambda: system_prompt(registry))),
    ]
    baseline = rows[0][1]
    prompt = system_prompt(registry)
    print(
        f"planning loop, planc's share: {TOOLS} tools, a {STEPS}-step plan with 2 mistakes in a reply; "
        f"the prompt is {len(prompt):,} characters\n"
    )
    print(f"{'':<34}{'ms':>9}{'x check':>10}")
    for name, seconds in rows:
        print(f"{name:<34}{seconds * 1e3:>9.2f}{seconds / baseline:>10.2f}")


if __name__ == "__main__":
    main()
