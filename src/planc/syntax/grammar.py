"""Load `grammar/plan.lark` and the LALR tables Lark builds from it.

The grammar file is the single source of truth: the lexer's patterns, the
parse table and the shape of the tree all come from it. Lark's analysis is
cached on disk keyed by the grammar's hash, so a process pays for it once.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

GRAMMAR_NAME = "plan.lark"


def grammar_text() -> str:
    """The text of the grammar shipped with planc.

    In a wheel the grammar sits in `planc/grammar/`; in a source checkout it is
    the top-level `grammar/plan.lark` itself.
    """
    packaged = resources.files("planc").joinpath("grammar").joinpath(GRAMMAR_NAME)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[3] / "grammar" / GRAMMAR_NAME
    return checkout.read_text(encoding="utf-8")


@functools.cache
def lark_parser():
    """The Lark LALR front end for the grammar (tables, rules, terminals)."""
    import lark

    return lark.Lark(grammar_text(), parser="lalr", cache=True)
