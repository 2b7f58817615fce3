"""What a step's result carries: the one function the check (the flow pass) and a run (`backend/`) both use.

Any call's result carries its tool's labels, every argument's, its control's and what the step's own rule
adds (a block's results, a condition, what an agent read), as one set. A step whose result is some of the
items of one of its inputs, unchanged and in some order (`filter`, `sort`, `take`, ...), keeps that input's
labels part by part instead: a trusted field of a kept item stays trusted beside an untrusted one. What
decided which items are kept, and in which order, is added to all of the result, since it chose which
values reach a later step: the other arguments (a `count`), the condition (the fields a `where` reads), and
the field a `sort` or `unique` compares (the whole item when it compares whole items). Where content others
can write decided it, the result carries that in a kind of its own, `chosen by untrusted` (`chosen_by`): the
value is still one of the input's items, each what it was, and only which one was chosen; a policy sees the
kind apart (`context.chosen_by`) and may let it choose among trusted items for a call that destroys nothing.
A model's choice (a `filter` that asks a judge, or runs a block) is no such choice: a reader shown the
attacker's words may answer anything, so what it read is the result's own.

>>> from planc.registry.steps.builtins import CONTROL_STEPS
>>> from planc.syntax.parser import parse
>>> step = parse('sort(over: [], field: "amount")').plan.pipelines[0].steps[0]
>>> rows = LabelView(frozenset({"private"}), {"type": "array", "items": {"type": "object", "properties": {
...     "amount": {}, "subject": {"x-labels": ["untrusted"]}}}})
>>> view = result_view(step, CONTROL_STEPS["sort"], {"over": rows.whole()}, NO_LABELS, NO_LABELS, rows)
>>> sorted(view.item().field("amount").whole()), sorted(view.item().field("subject").whole())
(['private'], ['private', 'untrusted'])
>>> step = parse('sort(over: [], field: "subject")').plan.pipelines[0].steps[0]
>>> view = result_view(step, CONTROL_STEPS["sort"], {"over": rows.whole()}, NO_LABELS, NO_LABELS, rows)
>>> sorted(view.item().field("amount").whole())
['chosen by untrusted', 'private']
"""

from __future__ import annotations

from collections.abc import Mapping

from planc.analysis.literals import literal_value
from planc.registry.provenance.labels import (
    NO_LABELS,
    SECRET,
    LabelView,
    chosen_by,
    label_set,
    list_view,
    union,
    union_all,
    view_of,
)
from planc.registry.steps.pure_steps import PURE_STEPS
from planc.registry.tools.tool import Tool
from planc.syntax import ast

# The steps whose result is some of one input's items, unchanged: that input, and the parameter naming the
# field whose values decide which items are kept or their order (None: none does, or the step's own rule says).
KEEPS_ITEMS: Mapping[str, tuple[str, str | None]] = {
    "filter": ("over", None),
    "sort": ("over", "field"),
    "unique": ("over", "field"),
    "take": ("over", None),
    "skip": ("over", None),
    "slice": ("value", None),
    "reshape": ("value", None),  # all of its one input, as it is
}
# A `map`'s result is its block's results, one per item of its list: the list's own labels say which there
# are, how many and in what order; each result carries what its block's result carries (`result_view`).
MAPS_ITEMS = ("map", "over")


BLOCKS = ("do", "then", "else")  # the parameters that take a block of steps


def call_labels(tool_labels: frozenset[str], sources: Mapping[str, frozenset[str]], control: frozenset[str]) -> frozenset[str]:
    """What a call's result carries, and its error too (its text, and that it failed): its tool's
    labels, every argument's and its control's."""
    return union(union(tool_labels, union_all(sources.values())), control)


def answers_depend(tool: Tool) -> bool:
    """Whether what a call of `tool` returns may depend on the calls of it made before (a queue read
    item by item, a page after page, a counter): a tool's own calls, not a declared plan's or a
    built-in step's, unless it is declared `deterministic` (the same arguments, the same answer)."""
    return not tool.builtin and tool.kind != "plan" and not tool.effects.deterministic


def decided_calls(sources: Mapping[str, frozenset[str]], control: frozenset[str]) -> frozenset[str]:
    """What decided that a call was made, with those arguments: what its later calls' answers carry
    (of a tool whose answers depend on its calls before, `answers_depend`)."""
    return union(union_all(sources.values()), control)


# The labels whose values must not reach the record, where which steps ran and how a run ended are
# written: a step whose failure they may decide decides those for them, even where a failure ends
# the run.
RECORDED = label_set([SECRET])


def fails_on(
    step: ast.Step,
    tool: Tool,
    sources: Mapping[str, frozenset[str]],
    control: frozenset[str],
    added: frozenset[str],
    asked: frozenset[str],
) -> frozenset[str] | None:
    """The labels of what may decide whether `step` fails (None: it cannot fail on what it is given): a
    call (a tool's code, a declared plan's steps), a pure step (`parse_json`, `divide` fail on some
    values of their types) and a model (an `agent`, shown all it read, `added`; an `infer`, asked
    `asked`) can. So can a step with a block (a loop, a `decide`), whose steps may fail: what decides
    whether and how often the block runs (the list, the condition) decides whether it failed, though
    it ran no time. An `exit`, `reshape` and `ask` fail on nothing they are given (an `ask` goes
    unanswered by a person's choice), so their failures decide nothing here.
    """
    given = decided_calls(sources, control)
    if not tool.builtin or tool.name in PURE_STEPS:
        return given
    if tool.name == "agent":
        return union(given, added)
    if step.arg("infer") is not None:
        return union(control, asked)
    if any(step.arg(block) is not None for block in BLOCKS):
        return union(given, asked)
    return None


def failure_control(tool_labels: frozenset[str], given: frozenset[str] | None, caught: bool) -> frozenset[str]:
    """What a step's possible failure (decided by `given`, `fails_on`) adds to the control of every
    later step of its plan, and to the plan's result and outcome. Where the failure is caught (a
    declared plan an agent calls goes back to the agent as an error), whether it happened decides
    what runs next: all its labels, its tool's too, as the error carries them. Where it ends the run,
    which steps ran and how the run ended are recorded: the labels of `RECORDED` it was given.

    >>> sorted(failure_control(frozenset({"untrusted"}), frozenset({"secret", "private"}), caught=False))
    ['secret']
    >>> sorted(failure_control(frozenset({"untrusted"}), frozenset({"private"}), caught=True))
    ['private', 'untrusted']
    """
    if given is None:
        return NO_LABELS
    if caught:
        return union(tool_labels, given)
    return label_set(given & RECORDED) if given else NO_LABELS


def kept_input(tool: Tool | None) -> str | None:
    """The input whose items `tool`'s result keeps, part by part, or whose items it runs its block for (a
    `map`'s); None: its result carries one set."""
    if tool is None or not tool.builtin:
        return None
    if tool.name == MAPS_ITEMS[0]:
        return MAPS_ITEMS[1]
    return KEEPS_ITEMS[tool.name][0] if tool.name in KEEPS_ITEMS else None


def result_view(
    step: ast.Step,
    tool: Tool,
    sources: Mapping[str, frozenset[str]],
    control: frozenset[str],
    added: frozenset[str],
    items: LabelView | None = None,
    block: LabelView | None = None,
) -> LabelView:
    """What `step`'s result carries: `tool`'s labels, its arguments' (`sources`, each argument's whole), its
    control's and what its rule adds (`added`); for a step that keeps its input's items, that input's view
    (`items`) with the rest added to all of it; for a `map`, a list of what its block's results carry (`block`:
    none, `added` for each), its list's own labels (`items`) for which there are and in what order."""
    kept = kept_input(tool)
    if kept is None:
        return view_of(union(call_labels(tool.labels, sources, control), added), tool.returns)
    if tool.name == MAPS_ITEMS[0]:
        over = items if items is not None else LabelView(sources.get(kept, NO_LABELS))
        others = {name: labels for name, labels in sources.items() if name != kept}
        return list_view(union(call_labels(tool.labels, others, control), over.members()), block or LabelView(added))
    items = items if items is not None else LabelView(sources.get(kept, NO_LABELS))
    deciding = union_all(labels for name, labels in sources.items() if name != kept)
    by = compared(step, KEEPS_ITEMS[tool.name][1], items)
    if picked_by_a_model(step, tool):
        return items.adding(union(union(tool.labels, deciding), union(union(control, added), by)))
    choice = chosen_by(union(union(deciding, added), by))
    return items.adding(union(union(tool.labels, control), choice))


def picked_by_a_model(step: ast.Step, tool: Tool) -> bool:
    """Whether what keeps the items of `step` is a model's answer (a `filter` that asks a judge, or runs a
    block, which may hold an agent) rather than a comparison of their values: its labels are then the
    result's own, never a choice's (a reader that read the attacker's words may answer anything)."""
    return tool.name == "filter" and step.arg("where") is None


def compared(step: ast.Step, field: str | None, items: LabelView) -> frozenset[str]:
    """The labels of what a `sort` or `unique` compares (its parameter `field`): the field the plan names, or
    the whole item (no field, or one only a run knows)."""
    if field is None:
        return NO_LABELS
    arg = step.arg(field)
    name = literal_value(arg.value) if arg is not None else None
    item = items.item()
    return item.field(name).whole() if isinstance(name, str) else item.whole()
