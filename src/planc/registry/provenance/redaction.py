"""What planc writes in place of a secret: its mark, and the one step every text it writes passes.

A value labelled `secret` is written as its mark, one recognisable string wherever it lands (a
store row, an event, a span, a page, stderr), of characters no JSON, HTML or repr escaping changes:

    (redacted secret: 20 chars, hmac 3f5c2a9d81e0b7c4)

It shows the value's length (a string's characters, else its compact JSON's) and the first 16 hex
digits of its HMAC-SHA-256 under the user's redaction key: equal values have equal marks, and
without the key no one can test a guess (a six-digit code) against one. `MARK` matches every
mark, so a text with each mark replaced by one constant no longer depends on any secret. The key
is 32 random bytes in `$XDG_CONFIG_HOME/planc/redaction.key` (`~/.config/planc`), made on first
use with mode 0600, and never in the store, the events or the traces; a key file others can read
is refused.

Two rules make a text safe, applied by `Redactor`, one per run:
- by label: a value, or a text made from any input labelled `secret`, is replaced whole by its mark
  (`Redactor.labelled`, `mark`), where planc makes it and knows its labels;
- by value, the backstop: every secret value the run has seen (`Redactor.learn`: the results of
  tools that declare `secret`, the fields their `returns` label `x-labels = ["secret"]`, what a pure
  step made of them) is replaced by its mark wherever it appears in a text planc writes, raw or
  JSON-, repr-, HTML- or URL-escaped (`Redactor.text`, `Redactor.data`). A value shorter than
  `SHORTEST` characters is left to the label rule: it would mark ordinary words and numbers.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import re
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus

from planc.registry.provenance.labels import NO_LABELS, SECRET, LabelView, node_labels, union
from planc.registry.provenance.user_files import (
    ExposedFile,
    PrivateFileProblem,
    config_folder,
    read_private,
    write_private,
)

MARK = re.compile(r"\(redacted secret: \d+ chars, hmac [0-9a-f]{16}\)")
LEGACY = "planc/redacted"  # the key of a mark as runs recorded before keyed marks wrote it
SHORTEST = 6  # the shortest secret value the backstop looks for in text
KEY_FILE = "redaction.key"
# Fields of an event that planc itself writes from the plan and its own words: never a value's text.
PLANC_FIELDS = frozenset({"event", "time", "run", "seq", "step", "tool", "stack", "status", "error_type", "code", "usage", "usd"})


class RedactionKeyProblem(ValueError):
    """The redaction key cannot be used: what is wrong, and what to do."""


Status = tuple[int, int, int, int]  # a file's inode, modification time, mode and owner
_keys: dict[Path, tuple[Status | None, bytes]] = {}  # the key file -> (its status when read, its key)


def key_path() -> Path:
    return config_folder() / KEY_FILE


def redaction_key() -> bytes:
    """The user's redaction key, made on first use; RedactionKeyProblem for a key file others may
    read, or one that holds no key."""
    path = key_path()
    found = _keys.get(path)
    if found is not None and found[0] == _status(path):  # the same file, as it was when it was read
        return found[1]
    try:
        text = read_private(path)
        if text is None:
            # Another process may make it first: then its key is the one.
            write_private(path, secrets.token_hex(32) + "\n", replace=False)
            text = read_private(path) or ""
    except ExposedFile as problem:
        raise RedactionKeyProblem(
            f"the redaction key {problem}: `chmod 600 {path}` (or remove it, and planc makes another)"
        ) from None
    except (PrivateFileProblem, OSError) as problem:
        raise RedactionKeyProblem(f"the redaction key cannot be used: {problem}") from None
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) < 16:
        raise RedactionKeyProblem(f"the redaction key {path} holds no key (64 hex digits): remove it, and planc makes another")
    _keys[path] = (_status(path), key)
    return key


def _status(path: Path) -> Status | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_mode, status.st_uid


def canonical(value: object) -> str:
    """`value` as compact JSON with sorted keys: what a mark's hash and length are of."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str)


def keyed_hash(value: object) -> str:
    """The HMAC-SHA-256 of `value` (its canonical JSON) under the redaction key, in hex."""
    text = canonical(value).encode("utf-8", "surrogatepass")
    return hmac.new(redaction_key(), text, hashlib.sha256).hexdigest()


def mark(value: object) -> str:
    """What planc writes in place of `value`, a secret: its length and keyed hash, never itself.

    >>> found = mark("hunter2")
    >>> bool(MARK.fullmatch(found)), found.startswith("(redacted secret: 7 chars, hmac ")
    (True, True)
    """
    length = len(value) if isinstance(value, str) else len(canonical(value))
    return f"(redacted secret: {length} chars, hmac {keyed_hash(value)[:16]})"


def is_redacted(value: object) -> bool:
    """Whether `value` is or holds a mark (this one, or the one runs recorded before keyed marks
    wrote): what a record keeps of it is not what it was.

    >>> is_redacted({"user": "annie", "password": mark("hunter2")}), is_redacted({"user": "annie"})
    (True, False)
    """
    stack = [value]
    while stack:
        found = stack.pop()
        if isinstance(found, str):
            if MARK.search(found):
                return True
        elif isinstance(found, dict):
            if LEGACY in found:
                return True
            stack.extend(found.keys())
            stack.extend(found.values())
        elif isinstance(found, list):
            stack.extend(found)
    return False


def cut(text: str, limit: int) -> str:
    """`text` cut at `limit` characters, "…" after, where a secret's mark counts as one character
    and is kept whole or left out: where a text is cut does not depend on any secret.

    >>> marks = [f"(redacted secret: {n} chars, hmac {'0' * 16})" for n in (9, 10)]
    >>> [cut(f"code {found} refused", 9).replace(found, "M") for found in marks]
    ['code M re…', 'code M re…']
    >>> cut("x" * 5, 5), cut("x" * 6, 5)
    ('xxxxx', 'xxxxx…')
    """
    if len(text) <= limit:
        return text
    end = counted = 0  # where the last mark kept ends, and how many characters count up to there
    for found in MARK.finditer(text):
        plain = found.start() - end
        if counted + plain >= limit:
            break
        end, counted = found.end(), counted + plain + 1
    if counted + len(text) - end <= limit:
        return text
    return text[: end + limit - counted] + "…"


def shown_arguments(arguments: Mapping[str, object], sources: Mapping[str, frozenset[str]]) -> dict:
    """`arguments` with each one whose labels (`sources`) say `secret` replaced by its mark."""
    for labels in sources.values():
        if SECRET in labels:
            break
    else:  # what most calls are: a loop, as a generator costs a call its every time
        return dict(arguments)
    return {name: mark(value) if SECRET in sources.get(name, NO_LABELS) else value for name, value in arguments.items()}


def escaped_forms(text: str) -> set[str]:
    """`text` as it may appear inside a text planc writes: raw, JSON-escaped (once and twice, ASCII
    or not), repr-escaped, HTML-escaped and URL-encoded.

    >>> sorted(escaped_forms('a"b'))
    ['a"b', 'a%22b', 'a&quot;b', 'a\\\\"b', 'a\\\\\\\\\\\\"b']
    """
    forms = {text, html.escape(text), quote(text, safe=""), quote(text), quote_plus(text), repr(text)[1:-1], ascii(text)[1:-1]}
    for ensure_ascii in (False, True):
        once = json.dumps(text, ensure_ascii=ensure_ascii)[1:-1]
        forms |= {once, json.dumps(once, ensure_ascii=ensure_ascii)[1:-1]}
    return forms


def secret_parts(value: object, view: LabelView) -> Iterator[object]:
    """The strings and numbers of `value` that its labels (`view`) say are `secret`."""
    if SECRET in union(view.labels, node_labels(view.schema)):
        yield from _leaves(value)
    elif view.schema is None or SECRET not in view.whole():
        return
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from secret_parts(inner, view.field(str(key)))
    elif isinstance(value, list):
        for inner in value:
            yield from secret_parts(inner, view.item())


def _leaves(value: object) -> Iterator[object]:
    stack = [value]
    while stack:
        found = stack.pop()
        if isinstance(found, dict):
            stack.extend(found.keys())
            stack.extend(found.values())
        elif isinstance(found, (list, tuple)):
            stack.extend(found)
        elif isinstance(found, (str, int, float)) and not isinstance(found, bool):
            yield found


class KnownValues:
    """Values to take out of every text, each replaced by what is written in its place, in every
    escaped form it may take there: the one mechanism behind a run's redaction step (`Redactor`) and
    the credentials of a remote MCP server (`planc.registry.mcp.mcp_credentials`)."""

    def __init__(self) -> None:
        self.marks: dict[str, str] = {}  # each escaped form of a known value -> what replaces it
        self._pattern: re.Pattern[str] | None = None

    def add(self, text: str, replacement: str, shortest: int = SHORTEST) -> None:
        """Take `text` out of every text, writing `replacement`; a `text` shorter than `shortest`
        characters is left alone (it would replace ordinary words)."""
        if len(text) < shortest:
            return
        for form in escaped_forms(text):
            if len(form) >= shortest and form not in self.marks:
                self.marks[form] = replacement
                self._pattern = None

    def text(self, text: str) -> str:
        """`text` with every form of every secret value learned replaced by the value's mark (the
        marks already in it kept)."""
        if not self.marks:
            return text
        if self._pattern is None:
            forms = sorted(self.marks, key=len, reverse=True)  # the longest first
            alternatives = "|".join(re.escape(form) for form in forms)
            self._pattern = re.compile(f"({MARK.pattern})|{alternatives}")
        marks = self.marks
        return self._pattern.sub(lambda found: found[0] if found[1] else marks[found[0]], text)

    def data(self, value: object) -> object:
        """`value` (JSON data, or a tuple of them) with `text` applied to every string in it, keys
        included."""
        if not self.marks:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self.data(item) for item in value)
        if isinstance(value, dict):
            return {self.data(key): self.data(item) for key, item in value.items()}
        return value


class Redactor(KnownValues):
    """The redaction step of one run: what it writes anywhere passes through it first. It learns the
    run's secret values as they appear, before any text that could hold them is written."""

    def learn(self, value: object, view: LabelView) -> None:
        """Take the parts of `value` that `view` labels `secret` as the run's secret values."""
        for part in secret_parts(value, view):
            text = part if isinstance(part, str) else canonical(part)
            if len(text) >= SHORTEST:
                self.add(text, mark(part))

    def labelled(self, value: object, labels: frozenset[str]) -> object:
        """`value` as planc writes it: its mark when `labels` say `secret`, else every secret in it
        marked."""
        return mark(value) if SECRET in labels else self.data(value)

    def event(self, event: dict) -> dict:
        """An event as planc writes it: every field but those planc writes itself (`PLANC_FIELDS`)
        redacted."""
        if not self.marks:
            return event
        return {field: found if field in PLANC_FIELDS else self.data(found) for field, found in event.items()}

    def scrub(self, error: BaseException) -> BaseException:
        """`error` with its message redacted, in place (it is raised on, to whoever prints it)."""
        if self.marks:
            error.args = tuple(self.text(each) if isinstance(each, str) else each for each in error.args)
        return error
