"""`RunError`: what a plan that fails while running raises, from whichever layer found the trouble.

It sits at the bottom so that the run store (a store that cannot take a write fails the run like
any other trouble) and the backend raise the one error a run ends on, and neither imports the other
for it.
"""

from __future__ import annotations

NOTHING: frozenset[str] = frozenset()  # no labels (registry.provenance.labels.NO_LABELS, equal to it)


class RunError(Exception):
    """A plan that fails while running: the message names the step, and the span says where; `code` is the
    diagnostic code of a refusal the check would give too (E400, E401), so the run store can count them.
    `labels`: what the error carries (its text, and that it happened), wherever it goes on to."""

    def __init__(self, message: str, node: object = None, code: str | None = None, labels: frozenset[str] = NOTHING) -> None:
        super().__init__(message)
        self.node, self.code, self.labels = node, code, labels
