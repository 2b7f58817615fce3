"""Matching the steps of two plans: which step of B is which step of A.

Frame by frame (the top level first, then the blocks of matched steps, paired by name),
in the spirit of GumTree: the most certain pairs first, each round only among the steps
still free, and later rounds only between the pairs already made.

Fingerprints (`fingerprint.py`) are tried strictest first: `flow` (the same computation,
read the same way), `used` (the same step, read the same way), `deep` (the same
computation), `own` (the same step).

1. Unique fingerprints: a free step whose fingerprint occurs once among the free steps of
   each side is matched; so are, from there, the steps it reads that are the same
   computation (a step's inputs follow from the step that reads them).
2. In each gap between the pairs that keep their order, patience alignment of the free
   steps by each fingerprint in turn, inputs following as in 1.

   In rounds 1 and 2 a step's fingerprint goes with the steps its references read that are
   matched already (`_Matcher._keys`), and still must when the pair is made: look-alikes
   that read steps matched with others are not the same step.
3. The free steps left with an equal `deep` fingerprint anywhere in the frame (moves).
4. In each gap, steps of the same tool, the most similar first (`Comparison.similarity`).
5. Anywhere in the frame, steps of the same tool with at least half their arguments and
   input the same (moved and changed).

Steps only ever pair with a step of the same tool, so a changed tool is a removed step and
an added one. Every round looks at a bounded number of candidates per step, so a plan of n
steps is matched in about O(n log n).
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Hashable

import attrs

from planc.diff.compare import Comparison
from planc.diff.fingerprint import Fingerprints, StepPrints
from planc.diff.plan_view import PlanView, frame_steps
from planc.diff.sequence import align, longest_increasing
from planc.syntax import ast

# The fingerprints steps are matched by, the strictest first. Whether `deep` (what a step computes,
# from which inputs) or `used` (the step alone, and who reads it) is the stricter depends on the
# edit: after a removed reader, the step that computes the same thing is the same step; after a
# removed pipeline head, the step its reader still reads is. `diff_trees` matches both ways and
# keeps the matching that explains B with fewer changes.
KEY_ORDERS = (("flow", "deep", "used", "own"), ("flow", "used", "deep", "own"))
# Candidates per step in rounds 4 and 5: this many on each side of where it would fall.
WINDOW = 25
# Round 5: how similar a step must be to be matched with one in another place.
MOVED_SIMILARITY = 0.5


@attrs.frozen
class Matching:
    partners: dict  # A step -> B step
    partners_b: dict  # B step -> A step
    frames: list  # (A steps, B steps) of every pair of frames compared, the top level first
    comparison: Comparison


def fingerprints(view_a: PlanView, view_b: PlanView) -> tuple:
    """The fingerprints of the steps of both plans, from one table (equal structure, equal ids)."""
    table = Fingerprints()
    return table.of(view_a), table.of(view_b)


def match_plans(
    view_a: PlanView, view_b: PlanView, keys: tuple[str, ...] = KEY_ORDERS[0], prints: tuple | None = None
) -> Matching:
    """Match the steps of plan A with those of plan B, by the fingerprints `keys`, strictest first
    (`prints`: both plans' `fingerprints`, when they were taken already)."""
    prints_a, prints_b = prints or fingerprints(view_a, view_b)
    matcher = _Matcher(view_a, view_b, prints_a, prints_b, keys)
    frames = []
    pending = deque([(frame_steps(view_a.plan.pipelines), frame_steps(view_b.plan.pipelines))])
    while pending:
        steps_a, steps_b = pending.popleft()
        frames.append((steps_a, steps_b))
        matcher.match_frame(steps_a, steps_b)
        for a in steps_a:
            b = matcher.partners.get(a)
            if b is not None:
                blocks_b = view_b.blocks(b)
                pending.extend((inner, blocks_b[name]) for name, inner in view_a.blocks(a).items() if name in blocks_b)
    return Matching(matcher.partners, matcher.partners_b, frames, matcher.comparison)


class _Matcher:
    def __init__(
        self, view_a: PlanView, view_b: PlanView, prints_a: StepPrints, prints_b: StepPrints, keys: tuple[str, ...]
    ) -> None:
        self.prints_a, self.prints_b, self.keys = prints_a, prints_b, keys
        self.partners: dict = {}
        self.partners_b: dict = {}
        self.comparison = Comparison(view_a, view_b, self.partners, self.partners_b)
        self.frame_a: set = set()  # the steps of the frame being matched
        self.frame_b: set = set()

    def pair(self, a: ast.Step, b: ast.Step) -> None:
        self.partners[a] = b
        self.partners_b[b] = a

    def match_frame(self, steps_a: list, steps_b: list) -> None:
        self.frame_a, self.frame_b = set(steps_a), set(steps_b)
        for prints in self.keys:
            self._unique(steps_a, steps_b, prints)
        for prints in self.keys:
            key_a, key_b = self._keys(prints)
            for free_a, free_b in self._gaps(steps_a, steps_b):
                aligned = align([key_a(steps_a[i]) for i in free_a], [key_b(steps_b[j]) for j in free_b])
                self._pair_with_inputs([(steps_a[free_a[i]], steps_b[free_b[j]]) for i, j in aligned])
        self._moved_identical(steps_a, steps_b)
        for free_a, free_b in self._gaps(steps_a, steps_b):
            self._similar([steps_a[i] for i in free_a], [steps_b[j] for j in free_b], 0.0)
        free_b = [b for b in steps_b if b not in self.partners_b]
        if free_b:
            self._similar([a for a in steps_a if a not in self.partners], free_b, MOVED_SIMILARITY)

    def _unique(self, steps_a: list, steps_b: list, prints: str) -> None:
        """Round 1: free steps whose fingerprint occurs once among the free steps of each side."""
        key_a, key_b = self._keys(prints)
        unique_a = _unique([a for a in steps_a if a not in self.partners], key_a)
        unique_b = _unique([b for b in steps_b if b not in self.partners_b], key_b)
        self._pair_with_inputs([(a, unique_b[key]) for key, a in unique_a.items() if key in unique_b])

    def _keys(self, prints: str) -> tuple:
        """What rounds 1 and 2 match a step of A and one of B by: the fingerprint `prints`, and the
        steps its references read as far as the pairs made so far tell (`_reads_a`, `_reads_b`)."""
        prints_a, prints_b = getattr(self.prints_a, prints), getattr(self.prints_b, prints)
        return (lambda a: (prints_a[a], self._reads_a(a))), (lambda b: (prints_b[b], self._reads_b(b)))

    def _reads_a(self, a: ast.Step) -> tuple:
        """The steps `a`'s references read, each as its partner, or None while it has none.

        A fingerprint says what a reference reads at most up to what that step computes, so steps
        with equal fingerprints can read steps that are already matched with others: `search(limit:
        $1)` and `search(limit: $2)` after `$1` and `$2` were matched with different steps. Paired
        by where they stand, such a step would take the place of its look-alike that reads the
        partner, and the diff would show a changed reference and a removed step, not one removed step."""
        return tuple(self.partners.get(target) for target in self.prints_a.refs[a])

    def _reads_b(self, b: ast.Step) -> tuple:
        """The steps `b`'s references read, each as itself once it has a partner, or None before:
        equal to `_reads_a` of an A step exactly when the pairs made so far do not tell them apart."""
        return tuple(target if target in self.partners_b else None for target in self.prints_b.refs[b])

    def _pair_with_inputs(self, pairs: list) -> None:
        """Pair `pairs` (in text order) and, from each, the inputs they read in this frame that
        are the same computation: the last pair first, so a step's inputs follow from the step
        that reads them rather than from where they stand. A pair whose steps read steps that the
        pairs made by then tell apart is left out: the key it was found by was taken before some
        of those pairs were made (another pair's inputs, in the same round)."""
        deep_a, deep_b = self.prints_a.deep, self.prints_b.deep
        pending = list(pairs)
        while pending:
            a, b = pending.pop()
            if a in self.partners or b in self.partners_b or self._reads_a(a) != self._reads_b(b):
                continue
            self.pair(a, b)
            pending += [
                (x, y)
                for x, y in zip(self.prints_a.inputs[a], self.prints_b.inputs[b])
                if x in self.frame_a and y in self.frame_b and deep_a[x] == deep_b[y]
            ]

    def _gaps(self, steps_a: list, steps_b: list) -> list[tuple[list[int], list[int]]]:
        """The free steps (their indexes) between consecutive pairs of the longest run of pairs
        that keep their order; only the gaps with free steps on both sides."""
        where_b = {step: j for j, step in enumerate(steps_b)}
        pairs = [(i, where_b[self.partners[a]]) for i, a in enumerate(steps_a) if a in self.partners]
        chain = [pairs[n] for n in longest_increasing([j for _, j in pairs])]
        bounds = [(-1, -1)] + chain + [(len(steps_a), len(steps_b))]
        gaps = []
        for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
            free_a = [i for i in range(i0 + 1, i1) if steps_a[i] not in self.partners]
            free_b = [j for j in range(j0 + 1, j1) if steps_b[j] not in self.partners_b]
            if free_a and free_b:
                gaps.append((free_a, free_b))
        return gaps

    def _moved_identical(self, steps_a: list, steps_b: list) -> None:
        """Round 3: free steps with equal `deep` fingerprints, in order, wherever they are."""
        waiting: defaultdict[int, deque[ast.Step]] = defaultdict(deque)
        for b in steps_b:
            if b not in self.partners_b:
                waiting[self.prints_b.deep[b]].append(b)
        for a in steps_a:
            if a not in self.partners and waiting.get(self.prints_a.deep[a]):
                self.pair(a, waiting[self.prints_a.deep[a]].popleft())

    def _similar(self, free_a: list, free_b: list, least: float) -> None:
        """Rounds 4 and 5: steps of the same tool, the most similar pairs first (ties in text order)."""
        by_tool = defaultdict(list)
        for j, b in enumerate(free_b):
            by_tool[b.tool.text].append(j)
        seen: defaultdict[str, int] = defaultdict(int)
        same_tool_a: defaultdict[str, int] = defaultdict(int)
        for a in free_a:
            same_tool_a[a.tool.text] += 1
        candidates = []
        for i, a in enumerate(free_a):
            tool = a.tool.text
            js = by_tool.get(tool)
            if not js:
                continue
            # Where `a` would fall among the B steps of its tool, if they are in the same order.
            middle = seen[tool] * len(js) // same_tool_a[tool]
            seen[tool] += 1
            for j in js[max(0, middle - WINDOW) : middle + WINDOW + 1]:
                score = self.comparison.similarity(a, free_b[j])
                if score >= least:
                    candidates.append((-score, i, j))
        candidates.sort()
        for _, i, j in candidates:
            a, b = free_a[i], free_b[j]
            if a not in self.partners and b not in self.partners_b:
                self.pair(a, b)


def _unique(steps: list, key: Callable[[ast.Step], Hashable]) -> dict:
    """Key -> its step, for the keys (`key(step)`) that occur once among `steps`, in their order."""
    keys = [key(step) for step in steps]
    counts = Counter(keys)
    return {k: step for k, step in zip(keys, steps) if counts[k] == 1}
