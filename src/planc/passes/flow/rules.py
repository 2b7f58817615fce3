"""The flow rule of each control step: what its result carries besides what any call's result carries
(its arguments' labels and its control labels), and what the steps in its blocks are given, before a
run. A control step without a rule of its own (a pure step) carries only what any call carries.

A rule is `rule(walk, step, env, views, control) -> frozenset`: `views` holds the labels of the
step's value arguments (its piped input under its pipe parameter), `control` the labels that decide
whether it runs. Blocks are walked with `walk.block` (once) or `walk.loop` (once per item). The
run-time handlers (`backend/run/control_steps.py`) add the same labels from what really ran.
"""

from __future__ import annotations

from planc.passes.flow.expressions import expr_labels
from planc.registry.provenance.labels import NO_LABELS, LabelView, union, union_all
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.syntax.steps import deciding


def condition_labels(step, env) -> frozenset[str]:
    """The labels of what decides: the `when` condition, or the `infer` question put to the judge."""
    decides = _deciding(step)
    return expr_labels(decides, env) if decides is not None else NO_LABELS


def _deciding(step):
    arg = deciding(step)
    return arg.value if arg is not None else None


def flow_map(walk, step, env, views, control):
    over = views.get("over", LabelView())
    return walk.loop(step, "do", env.bound_by(step).bind(item=over.item(), index=LabelView()), control).whole()


def flow_filter(walk, step, env, views, control):
    over = views.get("over", LabelView())
    item = over.item()
    inner = env.bound_by(step).bind(item=item, index=LabelView())
    if step.arg("where") is not None:
        return expr_labels(step.arg("where").value, inner.with_fields(item))
    if step.arg("do") is not None:
        return walk.loop(step, "do", inner, control).whole()
    if step.arg("infer") is not None:
        return expr_labels(step.arg("infer").value, inner)
    return NO_LABELS


def flow_reduce(walk, step, env, views, control):
    over = views.get("over", LabelView())
    accumulator = views.get("initial", LabelView()).whole()
    while True:  # the accumulator carries what any round gave it: walked until nothing is added
        bound = env.bound_by(step).bind(item=over.item(), index=LabelView(), accumulator=LabelView(accumulator))
        grown = union(accumulator, walk.loop(step, "do", bound, control).whole())
        if grown is accumulator:
            return accumulator
        accumulator = grown


def flow_decide(walk, step, env, views, control):
    decided = condition_labels(step, env)
    inner = union(control, decided)
    taken = walk.decided_by(_deciding(step), env, lambda: union(walk.block(step, "then", env, inner).whole(),
                                                                 walk.block(step, "else", env, inner).whole()))
    return union(decided, taken)


def flow_exit(walk, step, env, views, control):
    decided = condition_labels(step, env)
    # When it ends the plan, the plan's result is its `output` (else its `value`), decided here.
    walk.exits = union(walk.exits, union(union_all(view.whole() for view in views.values()), union(decided, control)))
    # Whether any later step runs is decided here, by its condition and by what decides that it runs (the
    # `decide` it is in): a run adds those when it asks the condition, or takes either branch.
    walk.gates = union(walk.gates, union(decided, control))
    if step.arg("when") is not None or step.arg("infer") is not None:
        walk.deciders = (*walk.deciders, (_deciding(step), env))
    return decided


def flow_agent(walk, step, env, views, control):
    from planc.analysis.agent_tools import continued

    read = walk.may_read(step, env.targets)
    earlier = continued(step, env.targets)
    if earlier is not None:  # the conversation it continues: all that agent was shown
        read = union(read, env.results.get(earlier, LabelView()).whole())
    return read


# The rule of each control step that has one of its own; every other built-in step (`ask`, `reshape`, the
# pure steps) carries only what any call carries (`CALL_RULE`): tests/test_architecture.py holds the two
# together to the built-in steps.
FLOW_RULES = {"map": flow_map, "filter": flow_filter, "reduce": flow_reduce, "decide": flow_decide,
              "exit": flow_exit, "agent": flow_agent}
CALL_RULE = frozenset({"ask", "reshape", *PURE_STEPS})
