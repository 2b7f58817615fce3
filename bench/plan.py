"""What planc adds to each round of the planning loop, against the check alone.

    .venv/bin/python bench/plan.py

A registry of 50 tools (typed parameters, `returns`, effects, descriptions) and a model's reply: a
sentence of prose around a fenced 30-step plan with two mistakes (an unknown parameter, a bare
word). Timed in one run, best of 7 samples, each looping at least 50 ms:

- check: `planc.check` of the plan text alone (the baseline);
- round: what `planc plan` does with one reply: extract the plan, check it, render the repair;
- prompt: building the system prompt for the registry (once per task, not per round: its examples
  are checked against the registry, which is most of its cost).

No model is asked: what a round costs the model is the model's; this is planc's share.
"""

from __future__ import annotations

import gc
import random
import time

import planc
from planc.planning.prompt import system_prompt
from planc.registry import registry_from_text

TOOLS = 50
STEPS = 30
KINDS = [("string", '"x"'), ("integer", "5"), ("boolean", "true")]


def make_registry(rng: random.Random) -> tuple[str, list[dict]]:
    lines, tools = [], []
    for number in range(TOOLS):
        params = {f"p{k}": rng.choice(KINDS) for k in range(rng.randint(1, 4))}
        schema = ", ".join(f'{name} = {{ type = "{kind}" }}' for name, (kind, _) in params.items())
        lines += [f"[tools.tool{number}]", f'description = "Tool number {number}: does a thing with its input"',
                  f"params = {{ {schema} }}", f'required = ["{next(iter(params))}"]',
                  'returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }',
                  f"effects = {{ read_only = {'true' if number % 3 else 'false'} }}", ""]
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


def main() -> None:
    rng = random.Random(13)
    toml, tools = make_registry(rng)
    registry = registry_from_text(toml, __import__("pathlib").Path("planc.toml"))
    reply = make_reply(rng, tools)
    plan_text = planc.extract(reply)

    def round_() -> str:
        checked = planc.check(reply, extract_plan=True, registry=registry)
        return planc.render_repair(checked.source, checked.diagnostics)

    codes = [d.code for d in planc.check(reply, extract_plan=True, registry=registry).diagnostics if d.is_error]
    assert codes == ["E201", "E206"], codes  # the round measured is a round with a repair
    rows = [("check of the plan alone", best(lambda: planc.check(plan_text, registry=registry))),
            ("round: extract + check + repair", best(round_)),
            ("system prompt for the registry", best(lambda: system_prompt(registry)))]
    baseline = rows[0][1]
    prompt = system_prompt(registry)
    print(f"planning loop, planc's share: {TOOLS} tools, a {STEPS}-step plan with 2 mistakes in a reply; "
          f"the prompt is {len(prompt):,} characters\n")
    print(f"{'':<34}{'ms':>9}{'x check':>10}")
    for name, seconds in rows:
        print(f"{name:<34}{seconds * 1e3:>9.2f}{seconds / baseline:>10.2f}")


if __name__ == "__main__":
    main()
