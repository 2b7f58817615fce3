"""A terminal's regular expression as a small tree of characters, read from Python's `re` syntax.

planc's lexer matches the terminals of `grammar/plan.lark` with Python's `re`. A decoder reads
another syntax: llguidance takes Rust's `regex` syntax, GBNF has only literals and character
classes. So a pattern is read once into this tree, with every character class made explicit (what
`\\s` means is what Python's `re` says it means, not what Rust's does), and each output format
writes the tree in its own syntax.

Two rewrites make a pattern mean for a decoder what it means for the lexer:

- `greedy`: neither format has a lazy repeat (`*?`), which `STRING` uses for triple-quoted strings;
  a lazy repeat followed by a run of one character (`\"\"\"`) becomes the greedy repeat of the same
  units that never lets that run begin, which matches the same texts.
- `without_words`: the lexer reads a name that is spelled like a keyword as the keyword, so `NAME`
  never matches `true` or `not`; a decoder's lexer would take either, so the keywords are cut out
  of the pattern.

And one narrows what a decoder may write: `at_most` bounds a pattern's length (a name that never
ends is how a greedy model loops inside one lexeme until its token limit).
"""

from __future__ import annotations

import functools
import re
import re._constants as sre
import re._parser as sre_parse  # what `re` itself parses patterns with (Lark reads widths with it too)
from collections.abc import Iterable
from typing import Any

import attrs

from planc.decoding.rules import NOTHING, Choice, Expr, GrammarError, Many, Seq, simplify

MAX_CODE_POINT = 0x10FFFF


class PatternError(GrammarError):
    """A pattern that uses what a decoder's syntax cannot say."""


@attrs.frozen
class Chars:
    """One character from a set: `ranges` of code points (sorted, disjoint), or any other one when `negated`."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False

    @classmethod
    def of(cls, text: str) -> Chars:
        return cls(_merged((ord(c), ord(c)) for c in text))

    def negate(self) -> Chars:
        return Chars(self.ranges, not self.negated)

    def matches(self, character: str) -> bool:
        code = ord(character)
        return any(low <= code <= high for low, high in self.ranges) != self.negated

    def without(self, other: Chars) -> Chars:
        """These characters but those of `other` (a set that is not negated)."""
        if self.negated:
            return Chars(_merged([*self.ranges, *other.ranges]), negated=True)
        return Chars(_subtract(self.ranges, other.ranges))

    @property
    def empty(self) -> bool:
        return not self.negated and not self.ranges

    @property
    def single(self) -> str | None:
        """The character, when the set holds exactly one."""
        if not self.negated and len(self.ranges) == 1 and self.ranges[0][0] == self.ranges[0][1]:
            return chr(self.ranges[0][0])
        return None


Regex = Expr  # an EBNF over characters: the nodes of rules.py, with Chars as leaves


# Reading Python's syntax.


def read(pattern: str) -> Regex:
    """`pattern` (Python `re` syntax) as a tree: `*?` kept lazy, character classes explicit."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        raise PatternError(f"/{pattern}/: {error}") from None
    return _read(list(parsed), parsed.state.flags, pattern)


def _read(items: list, flags: int, pattern: str) -> Regex:
    out = [_read_item(op, value, flags, pattern) for op, value in items]
    return out[0] if len(out) == 1 else Seq(tuple(out))


def _read_item(op: Any, value: Any, flags: int, pattern: str) -> Regex:
    if flags & re.IGNORECASE:
        raise PatternError(f"/{pattern}/: case-insensitive patterns are not supported")
    if op is sre.LITERAL:
        return Chars(((value, value),))
    if op is sre.NOT_LITERAL:
        return Chars(((value, value),), negated=True)
    if op is sre.ANY:
        return Chars((), negated=True) if flags & re.DOTALL else Chars.of("\n").negate()
    if op is sre.IN:
        return _read_class(value, pattern)
    if op is sre.BRANCH:
        return Choice(tuple(_read(list(branch), flags, pattern) for branch in value[1]))
    if op is sre.SUBPATTERN:
        _group, add_flags, del_flags, inner = value
        return _read(list(inner), (flags | add_flags) & ~del_flags, pattern)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, high, inner = value
        return Many(_read(list(inner), flags, pattern), low, None if high is sre.MAXREPEAT else high, lazy=op is sre.MIN_REPEAT)
    raise PatternError(f"/{pattern}/: `{op}` (anchors, look-arounds, back-references) has no decoder equivalent")


def _read_class(items: list, pattern: str) -> Chars:
    negated = False
    ranges: list[tuple[int, int]] = []
    for op, value in items:
        if op is sre.NEGATE:
            negated = True
        elif op is sre.LITERAL:
            ranges.append((value, value))
        elif op is sre.RANGE:
            ranges.append(value)
        elif op is sre.CATEGORY:
            category = _category(value)
            if category.negated:
                raise PatternError(f"/{pattern}/: a negated category inside a class is not supported")
            ranges += category.ranges
        else:
            raise PatternError(f"/{pattern}/: `{op}` in a character class is not supported")
    return Chars(_merged(ranges), negated)


@functools.cache
def _category(category: object) -> Chars:
    """The characters a class such as `\\s` matches, as Python's `re` matches them on text."""
    name = str(category)
    negated = "_NOT_" in name
    escape = {"SPACE": r"\s", "DIGIT": r"\d", "WORD": r"\w"}.get(name.rsplit("_", 1)[-1])
    if escape is None:
        raise PatternError(f"the category {name} is not supported")
    every = "".join(map(chr, range(MAX_CODE_POINT + 1)))
    found = re.findall(escape, every)
    return Chars(_merged((ord(c), ord(c)) for c in found), negated)


def _merged(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return tuple((low, high) for low, high in merged)


def _subtract(ranges: Iterable[tuple[int, int]], removed: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    left = []
    for low, high in ranges:
        pieces = [(low, high)]
        for cut_low, cut_high in removed:
            pieces = [
                piece
                for start, end in pieces
                for piece in ((start, min(end, cut_low - 1)), (max(start, cut_high + 1), end))
                if piece[0] <= piece[1]
            ]
        left += pieces
    return _merged(left)


# Rewrites.


def greedy(regex: Regex) -> Regex:
    r"""`regex` without lazy repeats, matching the texts whose whole the lazy pattern's `re.match` takes.

    A lazy repeat `(unit)*?` followed by a run of one character `q` repeated n times stops at the
    first run of n `q` that begins at a unit's start. Read greedily, the same texts are the units
    in which every run of `q` is shorter than n and is followed by another unit, then the run.

    >>> lazy = r"<<(\\.|[^\\])*?>>"
    >>> pattern = re.compile(to_python(greedy(read(lazy))))
    >>> texts = ("<<a>>", "<<a>>>", "<<a>b>>", "<<>>>>", "<<\\>>>")
    >>> [(bool(pattern.fullmatch(t)), re.match(lazy, t).end() == len(t)) for t in texts]
    [(True, True), (False, False), (True, True), (False, False), (True, True)]
    """
    if isinstance(regex, Chars):
        return regex
    if isinstance(regex, Choice):
        return Choice(tuple(greedy(option) for option in regex.options))
    if isinstance(regex, Many):
        if regex.lazy:
            raise PatternError("a lazy repeat must be followed by the text that ends it")
        return attrs.evolve(regex, item=greedy(regex.item))
    assert isinstance(regex, Seq)  # a pattern holds no literal or symbol
    items = list(regex.items)
    out: list[Regex] = []
    for index, item in enumerate(items):
        if isinstance(item, Many) and item.lazy:
            out.append(_until_run(item, items[index + 1 :]))
        else:
            out.append(greedy(item))
    return Seq(tuple(out))


def _until_run(repeat: Many, after: list[Regex]) -> Regex:
    if repeat.low != 0 or repeat.high is not None:
        raise PatternError("only a lazy `*?` can be rewritten")
    run = [item.single if isinstance(item, Chars) else None for item in after]
    if not run or run[0] is None:
        raise PatternError("a lazy repeat must be followed by the text that ends it")
    quote = run[0]
    length = next((n for n, c in enumerate(run) if c != quote), len(run))
    units = repeat.item.options if isinstance(repeat.item, Choice) else (repeat.item,)
    others: list[Regex] = []
    for unit in units:
        unit = greedy(unit)
        first = unit.items[0] if isinstance(unit, Seq) else unit
        if not isinstance(first, Chars):
            raise PatternError("each unit of a lazy repeat must begin with a character")
        if isinstance(unit, Seq) and first.matches(quote):
            raise PatternError("a unit of several characters of a lazy repeat may not begin with its end")
        rest = first.without(Chars.of(quote))
        if rest.empty:
            continue
        others.append(Seq((rest, *unit.items[1:])) if isinstance(unit, Seq) else rest)
    other = others[0] if len(others) == 1 else Choice(tuple(others))
    if length == 1:
        return Many(other, 0, None)
    quotes = Many(Chars.of(quote), 1, length - 1)
    return Many(Choice((other, Seq((quotes, other)))), 0, None)


def without_words(regex: Regex, words: Iterable[str]) -> Regex:
    """`regex` (a first character then any number of others, like `NAME`) that never matches one of `words`.

    A trie of the words: at each of its nodes a name may stop (unless the word ends there), go on
    along the trie, or leave it with any other character and then go on freely.

    >>> name = without_words(read("[a-z][a-z]*"), ["or"])
    >>> pattern = re.compile(to_python(name))
    >>> [bool(pattern.fullmatch(w)) for w in ("or", "o", "ore", "x", "orx")]
    [False, True, True, True, True]
    """
    words = sorted(set(words))
    if not words:
        return regex
    shape = regex.items if isinstance(regex, Seq) else ()
    if not (
        len(shape) == 2
        and isinstance(shape[0], Chars)
        and isinstance(shape[1], Many)
        and isinstance(shape[1].item, Chars)
        and (shape[1].low, shape[1].high) == (0, None)
    ):
        raise PatternError("keywords can only be cut out of a pattern like `[first][rest]*`")
    first, rest = shape[0], shape[1].item
    trie: dict = {}
    for word in words:
        node = trie
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}  # the end of a word

    def branches(node: dict, allowed: Chars) -> list[Regex]:
        followed = "".join(c for c in node if c)
        found: list[Regex] = [Seq((Chars.of(c), after(node[c]))) for c in sorted(followed)]
        leave = allowed.without(Chars.of(followed))
        if leave == rest:
            found.append(Many(rest, 1, None))
        elif not leave.empty:
            found.append(Seq((leave, Many(rest, 0, None))))
        return found

    def after(node: dict) -> Regex:
        options = ([] if "" in node else [Seq(())]) + branches(node, rest)
        return options[0] if len(options) == 1 else Choice(tuple(options))

    options = branches(trie, first)
    return options[0] if len(options) == 1 else Choice(tuple(options))


def at_most(regex: Regex, longest: int) -> Regex:
    """`regex` matching only its texts of at most `longest` characters.

    For a pattern whose parts vary in length only at its end (a part of a sequence varies only when
    it is the last; a repeat is of a part of a fixed length), as a name is, keywords cut out or not:
    each repeat is bounded by what the fixed parts before it leave.

    >>> name = at_most(without_words(read("[a-z][a-z]*"), ["or"]), 3)
    >>> pattern = re.compile(to_python(name))
    >>> [bool(pattern.fullmatch(w)) for w in ("o", "ore", "ores", "or", "abc", "abcd")]
    [True, True, False, False, True, False]
    """

    def bounded(node: Regex, room: int) -> Regex:
        if isinstance(node, Chars):
            return node if room >= 1 else NOTHING
        if isinstance(node, Choice):
            return Choice(tuple(bounded(option, room) for option in node.options))
        if isinstance(node, Many):
            size = _fixed_length(node.item)
            if size is None:
                raise PatternError("only a repeat of a part of a fixed length can be bounded")
            most = room // size if size else node.high
            high = most if node.high is None or most is not None and most < node.high else node.high
            if high is not None and node.low > high:
                return NOTHING
            return Seq(()) if high == 0 else attrs.evolve(node, high=high)
        assert isinstance(node, Seq)  # a pattern holds no literal or symbol
        if not node.items:
            return node
        fixed = [_fixed_length(item) for item in node.items[:-1]]
        if None in fixed:
            raise PatternError("only the last part of a sequence may vary in length to be bounded")
        length = sum(size for size in fixed if size is not None)
        if length > room:
            return NOTHING
        return Seq((*node.items[:-1], bounded(node.items[-1], room - length)))

    return simplify(bounded(regex, longest))


def _fixed_length(regex: Regex) -> int | None:
    """How many characters every text of `regex` has, or None when they differ."""
    if isinstance(regex, Chars):
        return 1
    if isinstance(regex, Seq):
        lengths = [_fixed_length(item) for item in regex.items]
        return None if None in lengths else sum(length for length in lengths if length is not None)
    if isinstance(regex, Choice):
        options = {_fixed_length(option) for option in regex.options}
        return options.pop() if len(options) == 1 else None
    assert isinstance(regex, Many)  # a pattern holds no literal or symbol
    size = _fixed_length(regex.item)
    return size * regex.low if size is not None and regex.low == regex.high else None


def to_python(regex: Regex) -> str:
    """`regex` in Python's syntax again (for tests and doctests: what a decoder gets is the formats')."""
    if isinstance(regex, Chars):
        body = "".join(
            re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in regex.ranges
        )
        return f"[{'^' if regex.negated else ''}{body}]" if body or not regex.negated else r"[\s\S]"
    if isinstance(regex, Seq):
        return "".join(f"(?:{to_python(item)})" if isinstance(item, Choice) else to_python(item) for item in regex.items)
    if isinstance(regex, Choice):
        return "|".join(to_python(option) for option in regex.options)
    assert isinstance(regex, Many)  # a pattern holds no literal or symbol
    high = "" if regex.high is None else regex.high
    return f"(?:{to_python(regex.item)}){{{regex.low},{high}}}{'?' if regex.lazy else ''}"
