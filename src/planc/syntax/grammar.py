"""The grammar (`grammar/plan.lark`) and the LALR tables Lark builds from it.

The grammar file is the single source of truth: the lexer's patterns, the
parse table and the shape of the tree all come from it. Lark's analysis is
turned into plain data (`Tables`) and cached on disk keyed by the grammar's
hash, so a process that finds the cache neither imports Lark nor analyses
the grammar again.
"""

from __future__ import annotations

import functools
import marshal
import os
import zlib
from pathlib import Path
from typing import NamedTuple

GRAMMAR_NAME = "plan.lark"
START = "start"


class Terminal(NamedTuple):
    name: str
    literal: str | None  # the text of a string terminal, else None
    regexp: str


class Symbol(NamedTuple):
    name: str
    is_terminal: bool
    filtered: bool  # anonymous punctuation the tree leaves out


class Rule(NamedTuple):
    origin: str
    alias: str | None
    expansion: tuple[Symbol, ...]
    collapse: bool  # `?rule`
    keep_all_tokens: bool  # `!rule`


class Tables(NamedTuple):
    terminals: tuple[Terminal, ...]
    ignore: tuple[str, ...]
    rules: tuple[Rule, ...]
    # state -> terminal or rule name -> (True, next state) for a shift, (False, rule index) for a reduce
    states: dict
    start_state: int
    end_state: int


def grammar_text() -> str:
    """The text of the grammar shipped with planc.

    In a wheel the grammar sits in `planc/grammar/`; in a source checkout (and an
    editable install) it is the top-level `grammar/plan.lark` itself.
    """
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "grammar", package.parents[1] / "grammar"):
        if (folder / GRAMMAR_NAME).is_file():
            return (folder / GRAMMAR_NAME).read_text(encoding="utf-8")
    raise FileNotFoundError(f"{GRAMMAR_NAME} is neither in {package / 'grammar'} nor in the source checkout")


@functools.cache
def tables() -> Tables:
    """The grammar's terminals, rules and LALR table, from the cache when it is current."""
    text = grammar_text()
    cache = _cache_path(text)
    try:
        return _from_data(marshal.loads(cache.read_bytes()))
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        pass
    built = _build(text)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(marshal.dumps(_to_data(built)))
        partial.replace(cache)
    except OSError:
        pass  # an unwritable cache only costs the next process the analysis again
    return built


def _cache_path(text: str) -> Path:
    # Two checksums and the length name the grammar's text: every process that parses reads this
    # path, and zlib loads in a tenth of the time hashlib (OpenSSL) takes.
    data = text.encode("utf-8")
    digest = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "planc" / f"grammar-{digest}.marshal"


def _build(text: str) -> Tables:
    import lark

    front = lark.Lark(text, parser="lalr")
    table = front.parser.parser.parser.parse_table
    rules = sorted(
        {rule for actions in table.states.values() for action, rule in actions.values() if action.name == "Reduce"}, key=str
    )
    index = {rule: number for number, rule in enumerate(rules)}
    return Tables(
        terminals=tuple(
            Terminal(str(t.name), str(t.pattern.value) if t.pattern.type == "str" else None, t.pattern.to_regexp())
            for t in front.terminals
        ),
        ignore=tuple(str(name) for name in front.lexer_conf.ignore),
        rules=tuple(
            Rule(
                str(rule.origin.name),
                str(rule.alias) if rule.alias else None,
                tuple(Symbol(str(s.name), s.is_term, bool(getattr(s, "filter_out", False))) for s in rule.expansion),
                bool(rule.options.expand1),
                bool(rule.options.keep_all_tokens),
            )
            for rule in rules
        ),
        states={
            state: {
                str(symbol): (True, target) if action.name == "Shift" else (False, index[target])
                for symbol, (action, target) in actions.items()
            }
            for state, actions in table.states.items()
        },
        start_state=table.start_states[START],
        end_state=table.end_states[START],
    )


def _to_data(built: Tables) -> tuple:
    return (
        tuple(tuple(t) for t in built.terminals),
        built.ignore,
        tuple((r.origin, r.alias, tuple(tuple(s) for s in r.expansion), r.collapse, r.keep_all_tokens) for r in built.rules),
        built.states,
        built.start_state,
        built.end_state,
    )


def _from_data(data: tuple) -> Tables:
    terminals, ignore, rules, states, start_state, end_state = data
    return Tables(
        tuple(Terminal(*t) for t in terminals),
        tuple(ignore),
        tuple(
            Rule(origin, alias, tuple(Symbol(*s) for s in expansion), collapse, keep)
            for origin, alias, expansion, collapse, keep in rules
        ),
        states,
        start_state,
        end_state,
    )
