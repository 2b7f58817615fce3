"""Two sequence algorithms the matching is built on: a longest increasing subsequence, and
patience alignment of two sequences of keys."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter


def longest_increasing(values: list[int]) -> list[int]:
    """The positions in `values` of one longest strictly increasing subsequence, in O(n log n).

    >>> longest_increasing([3, 0, 1, 4, 2])
    [1, 2, 4]
    """
    tails: list[int] = []  # tails[k]: the least value ending an increasing run of length k + 1
    ends: list[int] = []  # ends[k]: its position
    before = [-1] * len(values)
    for position, value in enumerate(values):
        k = bisect_left(tails, value)
        if k == len(tails):
            tails.append(value)
            ends.append(position)
        else:
            tails[k] = value
            ends[k] = position
        before[position] = ends[k - 1] if k else -1
    run = []
    position = ends[-1] if ends else -1
    while position >= 0:
        run.append(position)
        position = before[position]
    return run[::-1]


def align(keys_a: list, keys_b: list) -> list[tuple[int, int]]:
    """Pairs `(i, j)` with `keys_a[i] == keys_b[j]`, increasing in both: patience alignment.

    The common head and tail are paired first; in between, keys that occur exactly once on
    each side anchor the alignment (the longest run of them in the same order), and the
    stretches between anchors are aligned the same way. Repeated keys with no anchor around
    them stay unpaired.

    >>> align(["x", "a", "b", "c"], ["a", "c", "b", "y"])
    [(1, 0), (3, 1)]
    """
    pairs = []
    pending = [(0, len(keys_a), 0, len(keys_b))]
    while pending:
        a_lo, a_hi, b_lo, b_hi = pending.pop()
        while a_lo < a_hi and b_lo < b_hi and keys_a[a_lo] == keys_b[b_lo]:
            pairs.append((a_lo, b_lo))
            a_lo, b_lo = a_lo + 1, b_lo + 1
        while a_lo < a_hi and b_lo < b_hi and keys_a[a_hi - 1] == keys_b[b_hi - 1]:
            a_hi, b_hi = a_hi - 1, b_hi - 1
            pairs.append((a_hi, b_hi))
        if a_lo == a_hi or b_lo == b_hi:
            continue
        count_a, count_b = Counter(keys_a[a_lo:a_hi]), Counter(keys_b[b_lo:b_hi])
        only_b = {key: j for j, key in enumerate(keys_b[b_lo:b_hi], b_lo) if count_b[key] == 1}
        anchors = [(i, only_b[key]) for i, key in enumerate(keys_a[a_lo:a_hi], a_lo) if count_a[key] == 1 and key in only_b]
        chain = [anchors[n] for n in longest_increasing([j for _, j in anchors])]
        if not chain:
            continue
        pairs += chain
        bounds = [(a_lo - 1, b_lo - 1)] + chain + [(a_hi, b_hi)]
        for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
            if i1 - i0 > 1 and j1 - j0 > 1:
                pending.append((i0 + 1, i1, j0 + 1, j1))
    return sorted(pairs)
