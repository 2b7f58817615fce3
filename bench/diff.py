"""`planc diff` of two 1,000-step plans that differ in 10 places (the budget: under 1 s).

    .venv/bin/python bench/diff.py

Generates a 1,000-step plan (20 tools, literal arguments, `$n` references to earlier steps,
pipes, `map` blocks whose steps read `item` and earlier steps), then a copy edited in 10
places: 4 arguments changed, 3 steps inserted (one at the top, so every `$n` after it is
renumbered) and 3 unread steps removed. Times, in one run: parsing both plans alone (the
baseline), the diff of the two parsed trees, and `planc.diff.diff_plans` on the two texts
(parse, resolve, match, list the changes). Checks that the diff finds exactly the 10 edits.
Best of 7 samples, each looping at least 50 ms, garbage collector on.
"""

from __future__ import annotations

import itertools
import random
import sys

from check import best  # bench/check.py

from planc.diff import diff_plans, diff_trees
from planc.syntax.parser import parse

STEPS = 1_000
TOOLS = [f"tool{n}" for n in range(20)]
IDS = itertools.count()


def make_step(rng: random.Random, earlier: list[dict], inner: bool = False) -> dict:
    """A step model; a reference is ("ref", the step it reads, accessors)."""
    args = {}
    for name in rng.sample(["query", "limit", "text", "id", "style", "source"], rng.randint(1, 3)):
        roll = rng.random()
        if earlier and roll < 0.3:
            args[name] = ("ref", rng.choice(earlier[-30:]), rng.choice(["", ".title", "[0].id", ".items"]))
        elif inner and roll < 0.5:
            args[name] = ("text", "item.id")
        else:
            args[name] = (
                "text",
                rng.choice(['"sev2 outages"', "5", "50", '"bullets"', "true", '["a", "b"]', f'"note {rng.randint(0, 10**6)}"']),
            )
    block = None
    if not inner and earlier and rng.random() < 0.05:
        block = [make_step(rng, earlier, inner=True) for _ in range(rng.randint(1, 3))]
        args["over"] = ("ref", earlier[-1], "")
    return {
        "id": next(IDS),
        "tool": "map" if block else rng.choice(TOOLS),
        "args": args,
        "block": block,
        "piped": bool(earlier) and not inner and rng.random() < 0.3,
    }


def make_plan(rng: random.Random) -> list[dict]:
    model: list[dict] = []
    while sum(1 + len(step["block"] or ()) for step in model) < STEPS:
        model.append(make_step(rng, model))
    return model


def render(model: list[dict]) -> str:
    number = {step["id"]: n for n, step in enumerate(model, start=1)}

    def value(arg) -> str:
        kind, *rest = arg
        return f"${number[rest[0]['id']]}{rest[1]}" if kind == "ref" else rest[0]

    def call(step) -> str:
        args = [f"{name}: {value(arg)}" for name, arg in step["args"].items()]
        if step["block"]:
            args.append("do: { " + "; ".join(call(inner) for inner in step["block"]) + " }")
        return f"{step['tool']}({', '.join(args)})"

    lines: list[str] = []
    for step in model:
        if step["piped"] and lines:
            lines[-1] += "\n  |> " + call(step)
        else:
            lines.append(call(step))
    return "\n".join(lines) + "\n"


def edit(rng: random.Random, model: list[dict]) -> list[dict]:
    """`model` with 4 arguments changed, 3 steps inserted (one at the top) and 3 unread steps
    removed, all in places where no pipe changes with them."""
    read = {
        arg[1]["id"]
        for step in model
        for inner in [step] + (step["block"] or [])
        for arg in inner["args"].values()
        if arg[0] == "ref"
    }
    calm = [
        n for n in range(1, len(model) - 1) if model[n]["block"] is None and not model[n]["piped"] and not model[n + 1]["piped"]
    ]
    removed = set(rng.sample([n for n in calm if model[n]["id"] not in read], 3))
    changed = set(rng.sample([n for n in calm if n not in removed], 4))
    inserted = set(rng.sample([n for n in calm if n not in removed | changed], 2))
    edited = [make_step(rng, [])]
    for n, step in enumerate(model):
        if n in inserted:
            edited.append(make_step(rng, []))
        if n in changed:
            name = next(iter(step["args"]))
            step = {**step, "args": {**step["args"], name: ("text", '"changed"')}}
        if n not in removed:
            edited.append(step)
    return edited


def main() -> None:
    rng = random.Random(20261201)
    model = make_plan(rng)
    text_a, text_b = render(model), render(edit(rng, model))
    diff = diff_plans(text_a, text_b)
    expected = {"added": 3, "removed": 3, "changed": 4}
    found = {kind: sum(change.kind == kind for change in diff.changes) for kind in expected}
    a, b = parse(text_a), parse(text_b)
    steps = sum(1 + len(step["block"] or ()) for step in model)
    parse_both = best(lambda texts: [parse(text) for text in texts], (text_a, text_b))
    trees = best(lambda plans: diff_trees(*plans), (a.plan, b.plan))
    whole = best(lambda texts: diff_plans(*texts), (text_a, text_b))
    exact = found == expected and len(diff.changes) == 10
    print(
        f"plan A: {steps} steps, {len(text_a) / 1e3:.1f} KB; changes found: "
        f"{', '.join(f'{n} {kind}' for kind, n in found.items())} ({'' if exact else 'NOT '}exactly the 10 edits)"
    )
    print(f"{'':34} {'ms':>8}")
    print(f"{'parse A and B (baseline)':34} {parse_both * 1e3:8.2f}")
    print(f"{'diff the parsed trees':34} {trees * 1e3:8.2f}")
    print(f"{'diff_plans (parse + diff)':34} {whole * 1e3:8.2f}")
    print(
        f"diff_plans / parse: {whole / parse_both:.2f}x; wall time {whole * 1e3:.0f} ms "
        f"(budget < 1000 ms): {'PASS' if whole < 1 else 'FAIL'}"
    )
    if not exact:
        sys.exit(1)


if __name__ == "__main__":
    main()
