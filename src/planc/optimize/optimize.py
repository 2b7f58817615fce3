"""Optimize: rewrite a checked plan where a stated legality condition holds (docs/optimize.md).

Two rewrites, each reported as a note at the steps of the input it is about:

- N600: a repeated call of a tool declared read-only and deterministic, with
  no step between the two calls that changes anything, is removed, and what
  read its result reads the first call's (`common_calls.py`, `remove_steps.py`);
- N601: top-level steps that read nothing of each other and change nothing
  run at the same time; a step that changes something or may exit keeps its
  place in text order (`schedule.py`, `step_effects.py`).

N602 says where a tool's missing effects metadata is all that stops a rewrite,
and which metadata would allow it; with no metadata there is no rewrite.
Only run when asked (`planc optimize`, `planc run --optimize`).
"""

from __future__ import annotations

from collections.abc import Sequence, Sized

import attrs

from planc.analysis.step_effects import StepEffects, step_effects
from planc.diagnostics import Diagnostic, sort_key
from planc.diagnostics.build import diagnostic
from planc.optimize.common_calls import Reuse, common_calls
from planc.optimize.remove_steps import remove_steps
from planc.optimize.schedule import Schedule, schedule
from planc.passes.check import CheckResult, recheck
from planc.syntax import ast
from planc.syntax.printer import print_plan

MANY = 6  # a note names this many steps at most


@attrs.frozen
class Optimized:
    checked: CheckResult  # the rewritten plan, checked as the input was (the input's own when no call was removed)
    schedule: Schedule  # when each of its top-level steps may start
    notes: tuple[Diagnostic, ...]  # N600-N602, at the steps of the input they are about


def optimize(checked: CheckResult) -> Optimized:
    """Rewrite `checked` (a plan without errors) and schedule its steps; each rewrite comes with a note.

    >>> from planc.passes.check import check
    >>> [note.code for note in optimize(check('search(query: "x")\\nsearch(query: "x")')).notes]
    ['N602', 'N602']
    """
    if not checked.ok:
        raise ValueError("only a plan without errors can be optimized")
    assert checked.plan is not None and checked.resolution is not None  # a plan without errors
    effects = _effects(checked)
    paths = checked.resolution.paths
    reuses = common_calls(checked.plan, checked.resolution, effects)
    removed = {reuse.removed for reuse in reuses}
    notes = [_reused(reuse, paths) for reuse in reuses]
    notes += [
        _not_reused(reuse, effects, paths)
        for reuse in common_calls(checked.plan, checked.resolution, effects, if_declared=True)
        if reuse.removed not in removed
    ]
    rewritten, origins = checked, list(effects)
    if reuses:
        plan, origins = remove_steps(checked.plan, checked.resolution, {r.removed: r.kept for r in reuses})
        rewritten = recheck(checked, print_plan(plan))
        if not rewritten.ok:  # a bug of the optimizer's, never the plan's
            raise AssertionError(f"the rewritten plan has errors: {[d.message for d in rewritten.diagnostics]}")
    assert rewritten.plan is not None and rewritten.resolution is not None  # checked again without errors
    new_effects = _effects(rewritten)
    origin = dict(zip(new_effects, origins))  # a step of the rewritten plan -> the step of the input it comes from
    planned = schedule(rewritten.plan, rewritten.resolution.targets, new_effects)
    ordered = [origin[step] for step in planned.steps if new_effects[step].ordered()]
    notes += [_together([origin[step] for step in wave], ordered, paths) for wave in planned.waves() if len(wave) > 1]
    for wave in schedule(rewritten.plan, rewritten.resolution.targets, new_effects, if_declared=True).waves():
        held = [step for step in wave if new_effects[step].ordered()]
        if len(wave) > 1 and held:
            notes.append(_not_together([origin[step] for step in wave], [origin[step] for step in held], effects, paths))
    return Optimized(rewritten, planned, tuple(sorted(notes, key=sort_key)))


def _effects(checked: CheckResult) -> dict[ast.Step, StepEffects]:
    """Each top-level step of `checked`, in text order, with what it may do."""
    assert checked.context is not None and checked.resolution is not None and checked.plan is not None
    registry = checked.context.registry
    return {
        step: step_effects(step, checked.resolution.tools, registry)
        for pipeline in checked.plan.pipelines
        for step in pipeline.steps
    }


def _reused(reuse: Reuse, paths: dict) -> Diagnostic:
    step, kept, tool = paths[reuse.removed], paths[reuse.kept], reuse.removed.tool.text
    between = (
        f"no step between them (step{_plural(reuse.between)} {_numbers(reuse.between, paths)}) changes anything"
        if reuse.between
        else "no step runs between them"
    )
    return diagnostic(
        "N600",
        "reused",
        reuse.removed.span,
        step=step,
        repeated=step,
        kept=kept,
        hints=(
            f"legal: `{tool}` is declared read-only and deterministic, both calls have the same arguments, and {between}",
            f"what read step {step}'s result (references, and the step it piped into) reads step {kept}'s",
        ),
    )


def _not_reused(reuse: Reuse, effects: dict, paths: dict) -> Diagnostic:
    step, kept, tool = paths[reuse.removed], paths[reuse.kept], reuse.removed.tool.text
    undeclared = {name: between for between in reuse.between for name in effects[between].undeclared}
    hints = [
        f"if `{name}` (step {paths[between]}, between the two calls) changes nothing, declare "
        f"`effects = {{ read_only = true }}` for it"
        for name, between in undeclared.items()
    ]
    if effects[reuse.removed].undeclared:
        hints.insert(
            0,
            f"if `{tool}` changes nothing and gives the same result for the same arguments, declare "
            f"`effects = {{ read_only = true, deterministic = true }}` for it in planc.toml "
            f"(or `@planc.tool(read_only=True, deterministic=True)`)",
        )
        undeclared = {tool: reuse.removed, **undeclared}
    return diagnostic(
        "N602",
        "not_reused",
        reuse.removed.span,
        step=step,
        hints=(*hints, f"step {step} would then use step {kept}'s result"),
        repeated=step,
        kept=kept,
        names=_names(list(undeclared)),
        have="has" if len(undeclared) == 1 else "have",
    )


def _together(wave: list[ast.Step], ordered: list[ast.Step], paths: dict) -> Diagnostic:
    hints = [
        "none of them reads another's result, by a reference or a pipe, in its arguments or its blocks",
        "none of them changes anything or may exit: every tool they call is declared read-only",
    ]
    if ordered:
        hints.append(
            f"the steps that change something or may exit ({_named(ordered, paths)}) keep their place: "
            f"each starts after every step before it has finished, and before any step after it"
        )
    return diagnostic("N601", "together", wave[0].span, step=paths[wave[0]], hints=hints, steps=_numbers(wave, paths))


def _not_together(wave: list[ast.Step], held: list[ast.Step], effects: dict, paths: dict) -> Diagnostic:
    names = _names(list(dict.fromkeys(name for step in held for name in effects[step].undeclared)))
    many = " and " in names
    hints = (
        f"if {'they change' if many else 'it changes'} nothing, declare `effects = {{ read_only = true }}` "
        f"for {names} in planc.toml (or `@planc.tool(read_only=True)`), and these steps run at the same time",
    )
    at, step, have = held[0].span, paths[held[0]], "have" if many else "has"
    if len(held) > 1:
        return diagnostic(
            "N602",
            "not_together_many",
            at,
            step=step,
            hints=hints,
            steps=_numbers(wave, paths),
            names=names,
            have=have,
            held=_numbers(held, paths),
        )
    return diagnostic(
        "N602",
        "not_together",
        at,
        step=step,
        hints=hints,
        steps=_numbers(wave, paths),
        names=names,
        have=have,
        held=_numbers(held, paths),
    )


def _numbers(steps: Sequence[ast.Step], paths: dict) -> str:
    """`1, 2 and 4`; `1, 2, 3, ... and 100 (100 steps)` when there are many."""
    numbers = [paths[step] for step in steps]
    if len(numbers) > MANY:
        return f"{', '.join(numbers[:3])}, ... and {numbers[-1]} ({len(numbers)} steps)"
    return _names(numbers, quote="")


def _named(steps: Sequence[ast.Step], paths: dict) -> str:
    named = ", ".join(f"{paths[step]} `{step.tool.text}`" for step in steps[:MANY])
    return named + (f" and {len(steps) - MANY} more" if len(steps) > MANY else "")


def _names(names: list[str], quote: str = "`") -> str:
    """`a`, `b` and `c`."""
    quoted = [f"{quote}{name}{quote}" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _plural(items: Sized) -> str:
    return "s" if len(items) > 1 else ""
