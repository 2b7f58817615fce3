"""The regular expressions of `matches`, run in time linear in the text.

Python's `re` backtracks: `(a+)+$` against forty `a`s and a `b` takes longer than a run should
ever wait. So `matches` reads a pattern with Python's own parser (the same syntax `re` accepts)
and runs it as a Thompson automaton: the set of states the text could be in, advanced one
character at a time, so a search costs at most (text length) x (pattern states) steps, whatever
the pattern. What an automaton cannot do is refused when the pattern is read: backreferences,
lookarounds, conditionals, atomic groups, possessive repeats and flags (`(?i)`; lower the text
instead). A pattern longer than `[limits] regex_chars`, or whose repeats (`a{1000}`) expand to
more than `MAX_STATES` states, is refused too.

>>> search(r"^\\d{4}-\\d{2}$", "2024-05")
True
>>> search(r"(a+)+$", "a" * 40 + "b")
False
>>> print(refusal(r"(\\w)\\1"))
a backreference (`\\1`, `(?P=name)`) needs backtracking
"""

from __future__ import annotations

import functools
import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Callable, Iterable
from typing import Any, Literal

MAX_STATES = 2000

_CHAR, _SPLIT, _ASSERT, _MATCH = range(4)

_REFUSED = {
    sre.GROUPREF: "a backreference (`\\1`, `(?P=name)`) needs backtracking",
    sre.GROUPREF_EXISTS: "a conditional group `(?(1)...)` needs backtracking",
    sre.ASSERT: "a lookaround `(?=...)`, `(?<=...)` needs backtracking",
    sre.ASSERT_NOT: "a lookaround `(?!...)`, `(?<!...)` needs backtracking",
    sre.ATOMIC_GROUP: "an atomic group `(?>...)` needs backtracking",
    sre.POSSESSIVE_REPEAT: "a possessive repeat (`a*+`) needs backtracking",
}

_CATEGORIES = {
    sre.CATEGORY_DIGIT: str.isdecimal,
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
}
_CATEGORIES.update(
    {
        sre.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdecimal(),
        sre.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
        sre.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
    }
)


_ANCHORS = (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING, sre.AT_END, sre.AT_END_STRING, sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY)


class PatternRefused(ValueError):
    """A pattern `matches` does not run: not a regular expression, or one that needs backtracking."""


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (as `re.search` would say), in linear time."""
    return _compiled(pattern).search(text)


def refusal(pattern: str) -> str | None:
    """Why `matches` does not run `pattern`; None when it does."""
    try:
        _compiled(pattern)
    except PatternRefused as error:
        return str(error)
    return None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> _Automaton:
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        raise PatternRefused(f"not a regular expression: {error}") from None
    except RecursionError:
        raise PatternRefused("the pattern nests too deeply") from None
    if parsed.state.flags & ~sre.SRE_FLAG_UNICODE:
        raise PatternRefused("flags like `(?i)` are not supported: lower the text and the pattern instead")
    automaton = _Automaton()
    automaton.start = automaton.sequence(list(parsed), automaton.state(_MATCH))
    return automaton


class _Automaton:
    """States in three lists: what each does, its argument, and the state(s) after it."""

    def __init__(self) -> None:
        self.kinds: list[int] = []
        self.args: list = []
        self.outs: list = []
        self.start = 0

    def state(self, kind: int, arg: object = None, out: int | list[int] | None = None) -> int:
        if len(self.kinds) >= MAX_STATES:
            raise PatternRefused(f"the pattern expands to more than {MAX_STATES} states: use smaller repeat counts")
        self.kinds.append(kind)
        self.args.append(arg)
        self.outs.append(out)
        return len(self.kinds) - 1

    def sequence(self, items: list, after: int) -> int:
        """The first state of `items` (a parsed sequence) followed by the state `after`."""
        for op, value in reversed(items):
            after = self.item(op, value, after)
        return after

    def item(self, op: Any, value: Any, after: int) -> int:
        if op in _REFUSED:
            raise PatternRefused(_REFUSED[op])
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            return self.state(_CHAR, _char_test(op, value), after)
        if op is sre.SUBPATTERN:
            _, added, removed, body = value
            if added or removed:
                raise PatternRefused("flags like `(?i:...)` are not supported: lower the text and the pattern instead")
            return self.sequence(list(body), after)
        if op is sre.BRANCH:
            return self.state(_SPLIT, None, [self.sequence(list(alternative), after) for alternative in value[1]])
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            least, most, body = value
            return self.repeat(least, most, body, after)
        if op is sre.AT:
            if value not in _ANCHORS:
                raise PatternRefused(f"`{value}` is not supported")
            return self.state(_ASSERT, value, after)
        raise PatternRefused(f"`{op}` is not supported")

    def repeat(self, least: int, most: int, body: Iterable, after: int) -> int:
        items = list(body)
        if most is sre.MAXREPEAT:
            loop = self.state(_SPLIT, None, [])
            self.outs[loop] = [self.sequence(items, loop), after]
            after = loop
        else:
            for _ in range(most - least):  # each optional copy may stop before the next
                after = self.state(_SPLIT, None, [self.sequence(items, after), after])
        for _ in range(least):
            after = self.sequence(items, after)
        return after

    def search(self, text: str) -> bool:
        current = self.closure([self.start], text, 0)
        for position, char in enumerate(text):
            if current is True:
                return True
            moved = [self.outs[state] for state in current if self.args[state](char)]
            moved.append(self.start)  # a match may start at any character
            current = self.closure(moved, text, position + 1)
        return current is True

    def closure(self, states: list, text: str, position: int) -> list[int] | Literal[True]:
        """The character-reading states reachable from `states` at `position` without reading; True when the
        match state is among them."""
        seen, found, stack = set(), [], list(reversed(states))
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            kind = self.kinds[state]
            if kind == _CHAR:
                found.append(state)
            elif kind == _SPLIT:
                stack.extend(reversed(self.outs[state]))
            elif kind == _ASSERT:
                if _holds(self.args[state], text, position):
                    stack.append(self.outs[state])
            else:
                return True
        return found


def _char_test(op: Any, value: Any) -> Callable[[str], bool]:
    if op is sre.LITERAL:
        return lambda char: ord(char) == value
    if op is sre.NOT_LITERAL:
        return lambda char: ord(char) != value
    if op is sre.ANY:
        return lambda char: char != "\n"
    tests: list[Callable[..., bool]] = []
    negate = False
    for kind, part in value:
        if kind is sre.NEGATE:
            negate = True
        elif kind is sre.LITERAL:
            tests.append(lambda char, part=part: ord(char) == part)
        elif kind is sre.RANGE:
            tests.append(lambda char, low=part[0], high=part[1]: low <= ord(char) <= high)
        elif kind is sre.CATEGORY:
            tests.append(_CATEGORIES[part])
        else:
            raise PatternRefused(f"`{kind}` in a character class is not supported")
    return lambda char: any(test(char) for test in tests) != negate


def _word(text: str, position: int) -> bool:
    return 0 <= position < len(text) and (text[position].isalnum() or text[position] == "_")


def _holds(at: Any, text: str, position: int) -> bool:
    if at in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING):
        return position == 0
    if at is sre.AT_END:
        return position == len(text) or (position == len(text) - 1 and text[-1] == "\n")
    if at is sre.AT_END_STRING:
        return position == len(text)
    if not text:  # as Python's `re` has it, neither `\b` nor `\B` holds in an empty text
        return False
    if at is sre.AT_BOUNDARY:
        return _word(text, position - 1) != _word(text, position)
    return _word(text, position - 1) == _word(text, position)  # AT_NON_BOUNDARY
