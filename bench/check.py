"""Checking against a registry costs little more than parsing (the budget: at most 3x).

    .venv/bin/python bench/check.py

Generates a registry of 200 tools (typed parameters, `returns` schemas, pipes, effects) and a
1,000-step plan that calls them with literal arguments, references into results, pipes, filters
and maps, then times, in one run: parsing alone (`planc.parse`), and the whole check with the
registry (`planc.check(text, registry=...)`: parse, resolve, types). Best of 7 samples, each
looping at least 50 ms, garbage collector on.
"""

from __future__ import annotations

import gc
import math
import random
import sys
import time
from pathlib import Path

import planc
from planc.registry import registry_from_text

TOOLS = 200
STEPS = 1_000
TYPES = [("string", '"x"'), ("integer", "5"), ("number", "2.5"), ("boolean", "true")]


def make_registry(rng: random.Random) -> tuple[str, list[dict]]:
    tools, lines = [], []
    for number in range(TOOLS):
        params = {f"p{k}": rng.choice(TYPES) for k in range(rng.randint(1, 4))}
        fields = {f"f{k}": rng.choice(TYPES)[0] for k in range(rng.randint(1, 5))}
        piped = rng.random() < 0.5
        schema = ", ".join(f'{name} = {{ type = "{kind}" }}' for name, (kind, _) in params.items())
        if piped:
            schema += ', items = { type = "array" }'
        returns = "{ type = \"array\", items = { type = \"object\", properties = { " + ", ".join(
            f'{field} = {{ type = "{kind}" }}' for field, kind in fields.items()) + " } } }"
        lines += [f"[tools.tool{number}]", f"params = {{ {schema} }}", f"required = {list(params)[:1]!r}".replace("'", '"'),
                  f"returns = {returns}", "effects = { read_only = true }"]
        if piped:
            lines.append('pipe = "items"')
        lines.append("")
        tools.append({"name": f"tool{number}", "params": params, "fields": list(fields), "piped": piped})
    return "\n".join(lines), tools


def make_plan(rng: random.Random, tools: list[dict]) -> str:
    lines, made = [], 0
    while made < STEPS:
        tool = rng.choice(tools)
        args = ", ".join(f"{name}: {literal}" for name, (_, literal) in tool["params"].items())
        line = f"{tool['name']}({args})"
        made += 1
        follower = rng.choice([t for t in tools if t["piped"]])
        if made < STEPS and rng.random() < 0.5:
            fargs = ", ".join(f"{name}: {literal}" for name, (_, literal) in follower["params"].items())
            line += f"\n  |> {follower['name']}({fargs})"
            made += 1
            tool = follower  # the filter below reads the fields of the last result
        if made < STEPS and made > 2 and rng.random() < 0.3:
            field = rng.choice(tool["fields"])
            line += f"\n  |> filter(where: {field} != null)"
            made += 1
        lines.append(line)
    return "\n".join(lines) + "\n"


def best(function, argument, repeat: int = 7, sample: float = 0.05) -> float:
    def once(loops: int) -> float:
        start = time.perf_counter()
        for _ in range(loops):
            function(argument)
        return (time.perf_counter() - start) / loops

    loops = max(1, math.ceil(sample / max(once(1), 1e-9)))
    gc.collect()
    return min(once(loops) for _ in range(repeat))


def main() -> None:
    rng = random.Random(20261129)
    toml, tools = make_registry(rng)
    registry = registry_from_text(toml, Path("planc.toml"))
    text = make_plan(rng, tools)
    result = planc.check(text, registry=registry)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        sys.exit(f"the generated plan should check clean: {[(d.code, d.message) for d in errors[:3]]}")
    parse = best(planc.parse, text)
    check = best(lambda source: planc.check(source, registry=registry), text)
    print(f"registry: {len(registry.tools)} tools; plan: {result.steps} steps, {len(text) / 1e3:.1f} KB, "
          f"{len(result.diagnostics)} warnings")
    print(f"{'':28} {'ms':>8} {'us/step':>9}")
    print(f"{'parse alone':28} {parse * 1e3:8.2f} {parse / result.steps * 1e6:9.2f}")
    print(f"{'check with the registry':28} {check * 1e3:8.2f} {check / result.steps * 1e6:9.2f}")
    ratio = check / parse
    print(f"check / parse: {ratio:.2f}x (budget <= 3x): {'PASS' if ratio <= 3 else 'FAIL'}")


if __name__ == "__main__":
    main()
