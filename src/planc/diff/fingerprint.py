"""Structural fingerprints of steps: what makes two steps the same, as small ints.

Four fingerprints per step, all blind to labels, formatting, comments, the order of named
arguments and how a reference is written (`$3` or `$hits`):

- `own`: the step by itself: its tool, its arguments with every reference to a step
  replaced by a placeholder, and the `own` of the steps of its blocks. Equal `own`: the
  same step text up to what its references and its piped input are.
- `deep`: `own` plus the `deep` of every step it reads (through a reference or `|>`) and of
  the steps of its blocks, and which of the steps it reads are one step. Equal `deep`: the
  same computation on the same inputs, all the way up.
- `used`: `own` plus who reads the step: the `own` of each reader (a step inside a block
  reads through the step whose block it is), and through which of its inputs. `flow`: the
  same with `deep`. They tell apart two identical steps of which only one is used, and find
  a step again whose own input changed.

Fingerprints of both plans are interned in one table, so equal structure gets equal ids.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import attrs

from planc.diff.plan_view import PlanView, accessor_key, frame_steps, reads_args
from planc.syntax import ast


@attrs.frozen
class StepPrints:
    own: dict  # Step -> int
    deep: dict  # Step -> int
    used: dict  # Step -> int
    flow: dict  # Step -> int
    # Step -> the steps it reads (its references' targets, in a fixed order, and its piped
    # input), then those its blocks' steps read. Steps with equal `deep` have inputs with
    # equal `deep`, one for one.
    inputs: dict
    # Step -> the steps its references read (not its piped input), then those its blocks' steps'
    # references read: which steps these are is what no fingerprint says (`own` and `used` count
    # "a reference", `deep` and `flow` what the step read computes).
    refs: dict


class Fingerprints:
    """The intern table shared by the two plans of one diff."""

    def __init__(self) -> None:
        self._ids: dict[tuple, int] = {}

    def _intern(self, shape: tuple) -> int:
        return self._ids.setdefault(shape, len(self._ids))

    def of(self, view: PlanView) -> StepPrints:
        prints = StepPrints({}, {}, {}, {}, {}, {})
        steps = list(_post_order(frame_steps(view.plan.pipelines), view))  # a block's steps before their step
        for step, _ in steps:
            self._fingerprint(step, view, prints)
        # Who reads a step, as seen from its frame: a step inside a block that reads it counts as
        # the step whose block that is (whose `own` has the block's steps), so a step read from
        # inside a `map` is not taken for one read by a look-alike of that step elsewhere.
        frame_of = dict(steps)
        readers = defaultdict(list)
        for step, frame in steps:
            for slot, target in enumerate(prints.inputs[step]):
                if frame_of.get(target) is frame:
                    readers[target].append((prints.own[step], slot))
        for step, deep in prints.deep.items():
            read_by = tuple(sorted(readers[step]))
            prints.used[step] = self._intern(("used", prints.own[step], read_by))
            prints.flow[step] = self._intern(("flow", deep, read_by))
        return prints

    def _fingerprint(self, step: ast.Step, view: PlanView, prints: StepPrints) -> None:
        """Fingerprint `step` (all but `used` and `flow`), the steps of its blocks done already."""
        reads: list[ast.Step] = []
        args = tuple(
            (arg.name.text, _shape(arg.value, view, prints, reads)) for arg in sorted(step.args, key=lambda arg: arg.name.text)
        )
        piped = view.piped_from.get(step)
        own = prints.own[step] = self._intern(("step", step.tool.text, args))
        frames = view.blocks(step).values()
        direct = reads + ([piped] if piped is not None else [])
        inputs = prints.inputs[step] = tuple(direct) + tuple(
            target for frame in frames for inner in frame for target in prints.inputs[inner]
        )
        # Which of its inputs are one step (each as the number of the distinct step it is): a step
        # that reads one `search()` twice does not compute on the same inputs as one that reads two
        # of them, though each input computes the same.
        distinct: dict = {}
        shared = tuple(distinct.setdefault(target, len(distinct)) for target in inputs)
        blocks = tuple(tuple(prints.deep[inner] for inner in frame) for frame in frames)
        prints.deep[step] = self._intern(
            (
                "deep",
                own,
                tuple(prints.deep[target] for target in reads),
                prints.deep[piped] if piped is not None else None,
                blocks,
                shared,
            )
        )
        prints.refs[step] = tuple(reads) + tuple(target for frame in frames for inner in frame for target in prints.refs[inner])


def _post_order(steps: list, view: PlanView) -> Iterator[tuple[ast.Step, list]]:
    """Each of `steps` and of the steps of their blocks, each with its frame (the list it is in)."""
    for step in steps:
        for frame in view.blocks(step).values():
            yield from _post_order(frame, view)
        yield step, steps


def _shape(expr: ast.Expr, view: PlanView, prints: StepPrints, reads: list) -> tuple:
    """`expr` as nested tuples; a reference to a step is a placeholder, its target goes to `reads`."""
    if isinstance(expr, ast.String):
        return ("string", *(part if isinstance(part, str) else _shape(part.target, view, prints, reads) for part in expr.parts))
    if isinstance(expr, ast.Literal):
        return ("literal", type(expr.value).__name__, expr.value)
    if isinstance(expr, ast.Ref):
        target = view.targets.get(expr)
        if target is None:
            return ("unresolved", expr.name.text, accessor_key(expr.accessors))
        if reads_args(target):
            return ("args", accessor_key(expr.accessors))
        reads.append(target)
        return ("ref", accessor_key(expr.accessors))
    if isinstance(expr, ast.Path):
        return ("path", expr.head.text, accessor_key(expr.accessors))
    if isinstance(expr, ast.ListExpr):
        return ("list", *(_shape(item, view, prints, reads) for item in expr.items))
    if isinstance(expr, ast.Record):
        entries = sorted(expr.entries, key=lambda entry: entry.key.text)
        return ("record", *((entry.key.text, _shape(entry.value, view, prints, reads)) for entry in entries))
    if isinstance(expr, ast.Block):
        return ("block", *(tuple(prints.own[step] for step in pipeline.steps) for pipeline in expr.pipelines))
    if isinstance(expr, ast.Compare):
        return ("compare", expr.op, _shape(expr.left, view, prints, reads), _shape(expr.right, view, prints, reads))
    if isinstance(expr, ast.Not):
        return ("not", _shape(expr.operand, view, prints, reads))
    return (type(expr).__name__, *(_shape(operand, view, prints, reads) for operand in expr.operands))
