"""Checking against a registry costs little more than parsing, and stays linear with a policy.

    .venv/bin/python bench/check.py           # the three tables (about three minutes)
    .venv/bin/python bench/check.py --quick   # 1,000 and 10,000 steps only
    .venv/bin/python bench/check.py --profile # cProfile of the check with the policy, 10,000 steps
    .venv/bin/python bench/check.py --cedar   # where a Cedar request's time goes, before and now
    .venv/bin/python bench/check.py --pure [--instructions]   # table 3 alone [with machine instructions]
    .venv/bin/python bench/check.py --flow    # table 4 alone

Generates a registry of 200 tools (typed parameters, `returns` schemas, pipes, effects) and plans
that call them with literal arguments, references into results, pipes, filters and maps, then
times, in one run:

1. at 1,000 steps: parsing alone (`planc.parse`), and the whole check with the registry
   (`planc.check(text, registry=...)`: parse, resolve, types, cost); the budget is 3x;
2. at 1,000, 10,000 and 100,000 steps: the check with the registry, and with the registry and a
   Cedar policy (`POLICY`: every step one request), per step, and each against the 1,000-step
   row; the budget is 1.3x, so that a check stays linear in the plan's size;
3. at 1,000 steps: a plan of pure steps (`round`, `upper`, `add`, `sort`) against a plan of `reshape`
   steps given the same arguments, each pair side by side in 61 rounds (bench/paired.py), the median of
   the rounds' ratios, and the Python bytecodes a check executes a step; the budget is 1.02x (`--pure`:
   this table alone). With --instructions, the machine instructions of each plan's check too
   (valgrind's cachegrind, in a process of its own: bench/paired.py `instructions`), which the load
   does not move; the budget there is 1x.
4. at 10,000 steps: the check with `POLICY` against the check with `POLICY` and `FLOW_RULES`,
   rules that read where each argument's value came from, side by side in 5 rounds (7 with --flow;
   bench/paired.py: which first alternating, CPU time); the budget is 1.2x, best round to best.

Best of 7 samples at 1,000 steps, 5 at 10,000 and 3 at 100,000, each looping at least 50 ms,
garbage collector on.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import math
import pstats
import random
import sys
import time
from pathlib import Path

from paired import bytecodes, call_repeatedly, instructions, paired, print_rows  # bench/, beside this script

import planc
from planc.passes.policy.load import policy_from_text
from planc.registry import registry_from_text

TOOLS = 200
STEPS = 1_000
SIZES = {1_000: 7, 10_000: 5, 100_000: 3}  # steps -> samples
TYPES = [("string", '"x"'), ("integer", "5"), ("number", "2.5"), ("boolean", "true")]
# A policy of the usual shape: permit every call, then forbid what must not happen. The generated
# plans break none of it (every tool is read-only, no argument is "nope"), so every step is allowed.
POLICY = """\
@id("allow-calls")
permit(principal, action == Action::"call", resource);

@id("no-destructive")
forbid(principal, action, resource) when { resource.destructive };

@id("no-effects-in-loops")
forbid(principal, action, resource) when { context.in_loop && !resource.read_only };

@id("no-nope")
forbid(principal, action, resource) when { context.args has p0 && context.args.p0 == "nope" };

@id("tool7-is-alices")
forbid(principal, action, resource == Tool::"tool7")
  when { context.dynamic.contains("p0") } unless { principal == User::"alice" };
"""


# Rules on where values came from, as a deployer writes them (docs/policy.md): every request reads its
# labels. The generated tools declare no labels, so every reference carries `untrusted`; no rule matches.
FLOW_RULES = """\
@id("no-untrusted-recipient")
forbid(principal, action, resource) when
  { context.sources has recipient && context.sources.recipient.contains("untrusted") };

@id("untrusted-decides-nothing")
forbid(principal, action, resource) when { context.control.contains("untrusted") && !resource.read_only };

@id("private-stays-home")
forbid(principal, action, resource) when { context.labels.contains("private") && resource.open_world };
"""
FLOW_STEPS = 10_000


def make_registry(rng: random.Random) -> tuple[str, list[dict]]:
    tools, lines = [], []
    for number in range(TOOLS):
        params = {f"p{k}": rng.choice(TYPES) for k in range(rng.randint(1, 4))}
        fields = {f"f{k}": rng.choice(TYPES)[0] for k in range(rng.randint(1, 5))}
        piped = rng.random() < 0.5
        schema = ", ".join(f'{name} = {{ type = "{kind}" }}' for name, (kind, _) in params.items())
        if piped:
            schema += ', items = { type = "array" }'
        returns = (
            '{ type = "array", items = { type = "object", properties = { '
            + ", ".join(f'{field} = {{ type = "{kind}" }}' for field, kind in fields.items())
            + " } } }"
        )
        lines += [
            f"[tools.tool{number}]",
            f"params = {{ {schema} }}",
            f"required = {list(params)[:1]!r}".replace("'", '"'),
            f"returns = {returns}",
            "effects = { read_only = true }",
        ]
        if piped:
            lines.append('pipe = "items"')
        lines.append("")
        tools.append({"name": f"tool{number}", "params": params, "fields": list(fields), "piped": piped})
    return "\n".join(lines), tools


def make_plan(rng: random.Random, tools: list[dict], steps: int = STEPS) -> str:
    lines, made = [], 0
    while made < steps:
        tool = rng.choice(tools)
        args = ", ".join(f"{name}: {literal}" for name, (_, literal) in tool["params"].items())
        line = f"{tool['name']}({args})"
        made += 1
        follower = rng.choice([t for t in tools if t["piped"]])
        if made < steps and rng.random() < 0.5:
            fargs = ", ".join(f"{name}: {literal}" for name, (_, literal) in follower["params"].items())
            line += f"\n  |> {follower['name']}({fargs})"
            made += 1
            tool = follower  # the filter below reads the fields of the last result
        if made < steps and made > 2 and rng.random() < 0.3:
            field = rng.choice(tool["fields"])
            line += f"\n  |> filter(where: {field} != null)"
            made += 1
        lines.append(line)
    return "\n".join(lines) + "\n"


def best(function, argument, repeat: int = 7, sample: float = 0.05) -> float:
    def once(loops: int) -> float:
        start = time.process_time()
        for _ in range(loops):
            function(argument)
        return (time.process_time() - start) / loops

    loops = max(1, math.ceil(sample / max(once(1), 1e-9)))
    gc.collect()
    return min(once(loops) for _ in range(repeat))


def against_parse(registry, text: str) -> None:
    """Table 1: the check with the registry against parsing alone, at 1,000 steps."""
    result = planc.check(text, registry=registry)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        sys.exit(f"the generated plan should check clean: {[(d.code, d.message) for d in errors[:3]]}")
    parse = best(planc.parse, text)
    check = best(lambda source: planc.check(source, registry=registry), text)
    print(
        f"registry: {len(registry.tools)} tools; plan: {result.steps} steps, {len(text) / 1e3:.1f} KB, "
        f"{len(result.diagnostics)} warnings"
    )
    print(f"{'':28} {'ms':>8} {'us/step':>9}")
    print(f"{'parse alone':28} {parse * 1e3:8.2f} {parse / result.steps * 1e6:9.2f}")
    print(f"{'check with the registry':28} {check * 1e3:8.2f} {check / result.steps * 1e6:9.2f}")
    ratio = check / parse
    print(f"check / parse: {ratio:.2f}x (budget <= 3x): {'PASS' if ratio <= 3 else 'FAIL'}")


def linear(registry, tools: list[dict], sizes: dict[int, int]) -> None:
    """Table 2: per-step time of the check with the registry, and with the policy too, by plan size."""
    policy = policy_from_text(POLICY, Path("policy.cedar"))
    print(f"\nper step, by plan size (check with the registry, then with the registry and {POLICY.count('@id')} Cedar policies)")
    print(
        f"{'steps':>8} {'KB':>8} | {'check us/step':>13} {'vs 1,000':>8} | {'+ policy us/step':>16} {'vs 1,000':>8}"
        f" | {'policy us/step':>14}"
    )
    print("-" * 91)
    first = None
    worst = 0.0
    for steps, repeat in sizes.items():
        text = make_plan(random.Random(20261129), tools, steps)
        checked = planc.check(text, registry=registry, policy=policy)
        denied = [d for d in checked.diagnostics if d.is_error]
        if denied or len(checked.policy.decisions) != checked.steps:
            sys.exit(f"every step should be judged and allowed: {[(d.code, d.message) for d in denied[:3]]}")
        plain = best(lambda source: planc.check(source, registry=registry), text, repeat) / steps
        judged = best(lambda source: planc.check(source, registry=registry, policy=policy), text, repeat) / steps
        first = first or (plain, judged)
        worst = max(worst, judged / first[1])
        print(
            f"{steps:8,} {len(text) / 1e3:8.0f} | {plain * 1e6:13.1f} {plain / first[0]:7.2f}x | "
            f"{judged * 1e6:16.1f} {judged / first[1]:7.2f}x | {(judged - plain) * 1e6:14.1f}"
        )
    print(
        f"check with the policy, per step, at most {worst:.2f}x the 1,000-step row (budget <= 1.3x): "
        f"{'PASS' if worst <= 1.3 else 'FAIL'}"
    )


PURE_AGAINST_CONTROL = [
    ("reshape(value: {n})", "round(value: {n})"),
    ('reshape(value: "x{n}")', 'upper(text: "x{n}")'),
    ("reshape(value: [{n}, 1])", "add(a: {n}, b: 1)"),
    ("reshape(value: [{n}, 2])", "sort(over: [{n}, 2])"),
]


PURE_ROUNDS = 61  # the rows are close: the median of many paired rounds


def pure_plans(control: str, pure: str) -> tuple[str, str]:
    return tuple("".join(f"{step.format(n=n)}\n" for n in range(STEPS)) for step in (control, pure))


def pure_against_control(registry, counted: bool = False) -> None:
    """Table 3: checking 1,000 pure steps against checking 1,000 `reshape` steps given the same arguments;
    each pair timed side by side (`paired`: the median of the rounds' ratios, in CPU time); with `counted`,
    each check's machine instructions too (`--count-check`, in a process of its own under valgrind)."""
    rows = []
    for index, (control, pure) in enumerate(PURE_AGAINST_CONTROL):
        control_text, pure_text = pure_plans(control, pure)
        # each bound to this round's text (a default), which a closure over the loop would not be
        control_check = lambda text=control_text: planc.check(text, registry=registry)  # noqa: E731
        pure_check = lambda text=pure_text: planc.check(text, registry=registry)  # noqa: E731
        rows.append(
            (control, pure, *paired(control_check, pure_check, PURE_ROUNDS), bytecodes(control_check), bytecodes(pure_check))
        )
        if counted:
            rows[-1] += tuple(instructions([__file__, "--count-check", f"{index}:{side}"]) for side in (0, 1))
    print(
        f"\nchecking {STEPS:,} pure steps against {STEPS:,} reshape steps with the same arguments, side by side "
        f"in each of {PURE_ROUNDS} rounds"
    )
    print_rows(rows, STEPS, "step")


def count_check(registry, which: str, times: int) -> None:
    """The child of `instructions`: the plan of `PURE_AGAINST_CONTROL[pair][side]` ("PAIR:SIDE", side 0 for
    the control steps, 1 for the pure ones), checked `times` times."""
    pair, side = (int(part) for part in which.split(":"))
    text = pure_plans(*PURE_AGAINST_CONTROL[pair])[side]
    call_repeatedly(lambda: planc.check(text, registry=registry), times)


def flow_policy(registry, tools: list[dict], repeat: int = 5) -> None:
    """Table 4: at 10,000 steps, the check with the policy against the check with the policy and the flow
    rules (`FLOW_RULES`, which read each request's `sources`, `labels` and `control`)."""
    text = make_plan(random.Random(20261129), tools, FLOW_STEPS)
    plain = policy_from_text(POLICY, Path("policy.cedar"))
    flows = policy_from_text(POLICY + "\n" + FLOW_RULES, Path("policy.cedar"))
    checked = planc.check(text, registry=registry, policy=flows)
    if any(d.is_error for d in checked.diagnostics):
        sys.exit(f"every step should be allowed: {[(d.code, d.message) for d in checked.diagnostics[:3]]}")
    labelled = sum(1 for call in checked.flow.calls.values() for labels in call.sources.values() if labels)
    # Side by side, which first alternating, in this process's CPU time (bench/paired.py).
    without, with_flow, median = paired(
        lambda: planc.check(text, registry=registry, policy=plain),
        lambda: planc.check(text, registry=registry, policy=flows),
        repeat,
    )
    print(
        f"\n{FLOW_STEPS:,} steps ({labelled:,} labelled arguments): the policy, then the policy and "
        f"{FLOW_RULES.count('@id')} rules on where values came from; {repeat} rounds side by side, "
        "CPU time"
    )
    print(f"{'':34} {'ms':>9} {'us/step':>9}")
    print(f"{'check with the policy':34} {without * 1e3:9.1f} {without / FLOW_STEPS * 1e6:9.2f}")
    print(f"{'check with the policy + flow rules':34} {with_flow * 1e3:9.1f} {with_flow / FLOW_STEPS * 1e6:9.2f}")
    ratio = with_flow / without
    print(
        f"with flow rules / without: {ratio:.2f}x best to best, {median:.2f}x the median round "
        f"(budget <= 1.2x): {'PASS' if ratio <= 1.2 else 'FAIL'}"
    )


def cedar_costs(registry, tools: list[dict]) -> None:
    """Where a request's time goes: the same 1,000 requests (the steps of the 1,000-step plan) sent
    to Cedar as planc sent them before, and as it sends them now, with Cedar's own timings."""
    import cedarpy

    from planc.passes.policy.decide import ACTION, ACTION_UID, cedar_value, tool_attributes

    policy = policy_from_text(POLICY, Path("policy.cedar"))
    checked = planc.check(make_plan(random.Random(20261129), tools), registry=registry, policy=policy)
    asked = [(checked.resolution.tools[step], decision.request) for step, decision in checked.policy.decisions.items()]
    text_uids = [
        {**request, "context": {**request["context"], "args": cedar_value(request["context"]["args"])}} for _, request in asked
    ]
    entity_lists = [
        [{"uid": {"type": "Tool", "id": tool.name}, "attrs": tool_attributes(tool), "parents": []}] for tool, _ in asked
    ]
    handle = cedarpy.Entities.from_json_str(
        json.dumps(
            [entities[0] for entities in {tool.name: entities for (tool, _), entities in zip(asked, entity_lists)}.values()]
        )
    )
    parsed_uids = [
        {
            **request,
            "principal": {"type": "User", "id": "anonymous"},
            "action": ACTION_UID,
            "resource": {"type": "Tool", "id": tool.name},
        }
        for (tool, _), request in zip(asked, text_uids)
    ]
    assert all(request["action"] == ACTION for _, request in asked)
    ways = {
        "one call each, uids as text, entity as a list (before)": lambda: [
            cedarpy.is_authorized(request, policy.policy_set, entities) for request, entities in zip(text_uids, entity_lists)
        ],
        "one call each, entities parsed once": lambda: [
            cedarpy.is_authorized(request, policy.policy_set, handle) for request in text_uids
        ],
        "one batch, entities parsed once": lambda: cedarpy.is_authorized_batch(text_uids, policy.policy_set, handle),
        "one batch, entities parsed once, uids parsed once (now)": lambda: cedarpy.is_authorized_batch(
            parsed_uids, policy.policy_set, handle
        ),
    }
    print(f"\nwhere a request's time goes: {len(asked):,} requests, us per request")
    for name, send in ways.items():
        print(f"{name:58} {best(lambda _, send=send: send(), None, 5) / len(asked) * 1e6:8.1f}")
    answers = cedarpy.is_authorized_batch(parsed_uids, policy.policy_set, handle)
    for metric in ("build_request_duration_micros", "authz_duration_micros"):
        mean = sum(answer.metrics.get(metric, 0) for answer in answers) / len(answers)
        print(f"{'  of which Cedar: ' + metric.removesuffix('_duration_micros').replace('_', ' '):58} {mean:8.1f}")


def profile(registry, tools: list[dict]) -> None:
    policy = policy_from_text(POLICY, Path("policy.cedar"))
    text = make_plan(random.Random(20261129), tools, 10_000)
    profiler = cProfile.Profile()
    profiler.runcall(planc.check, text, registry=registry, policy=policy)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="1,000 and 10,000 steps only")
    options.add_argument("--profile", action="store_true", help="cProfile of the check with the policy")
    options.add_argument("--cedar", action="store_true", help="where a Cedar request's time goes")
    options.add_argument("--pure", action="store_true", help="only table 3, pure steps against a control step")
    options.add_argument("--flow", action="store_true", help="only table 4, the flow rules at 10,000 steps")
    options.add_argument(
        "--instructions",
        action="store_true",
        help="table 3 counts each check's machine instructions too (valgrind; about 8 minutes more)",
    )
    options.add_argument("--count-check", nargs=2, metavar=("PAIR:SIDE", "TIMES"), help=argparse.SUPPRESS)
    arguments = options.parse_args()
    rng = random.Random(20261129)
    toml, tools = make_registry(rng)
    registry = registry_from_text(toml, Path("planc.toml"))
    if arguments.count_check:
        count_check(registry, arguments.count_check[0], int(arguments.count_check[1]))
        return
    if arguments.profile or arguments.cedar:
        (profile if arguments.profile else cedar_costs)(registry, tools)
        return
    if arguments.pure:
        pure_against_control(registry, arguments.instructions)
        return
    if arguments.flow:
        flow_policy(registry, tools, 7)
        return
    against_parse(registry, make_plan(rng, tools))
    pure_against_control(registry, arguments.instructions)
    linear(registry, tools, {steps: repeat for steps, repeat in SIZES.items() if not arguments.quick or steps < 100_000})
    flow_policy(registry, tools, 3 if arguments.quick else 5)


if __name__ == "__main__":
    main()
