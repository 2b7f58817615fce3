"""The plan language's grammar for constrained decoders (`planc grammar`, docs/grammar.md).

`grammar/plan.lark` is read into rules (`read.py`: its rules as written, its terminals as the
lexer matches them, via `regex.py`), narrowed to a registry's tools when there is one
(`specialise.py`), and written in the format a decoder reads: the Lark dialect of llguidance
(`lark_format.py`) or llama.cpp's GBNF (`gbnf_format.py`). The rules live in `rules.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planc.decoding.rules import GrammarError

if TYPE_CHECKING:
    from planc.registry.loading.registry import Registry

FORMATS = ("lark", "gbnf")

__all__ = ["FORMATS", "GrammarError", "export_grammar"]


def export_grammar(registry: Registry | None = None, format: str = "lark", full: bool = False) -> str:
    """The grammar of plans, as text in `format` ("lark" or "gbnf"): narrowed to `registry`'s tools,
    their parameters and the types of their literals when given one. It is the decoder grammar
    (`layout.py`: plans as `planc fmt` prints them, no comments) unless `full`, which gives every
    text the parser takes.

    >>> "start: IGNORED? plan IGNORED?" in export_grammar(full=True).splitlines()
    True
    >>> "start: plan" in export_grammar().splitlines()
    True
    """
    from planc.decoding.read import read_grammar

    if format not in FORMATS:
        raise ValueError(f"unknown grammar format {format!r}: one of {', '.join(FORMATS)}")
    grammar = read_grammar()
    header = "The planc plan language (grammar/plan.lark), written for constrained decoding by `planc grammar`."
    if registry is not None:
        from planc.decoding.specialise import specialise

        grammar = specialise(grammar, registry)
        header += (
            "\nNarrowed to a registry: a step calls one of its tools or a control step, with that tool's "
            "parameters;\na literal for a parameter of a plain type has that type."
        )
    if not full:
        from planc.decoding.layout import for_decoder

        grammar = for_decoder(grammar)
        header += (
            "\nFor a model to write: plans as `planc fmt` prints them, without comments, at least one step, "
            "\nending with the newline after the last one (`--full`: every text the parser takes)."
        )
    header += "\nWhat the grammar leaves to `planc check` is in docs/grammar.md."
    if format == "lark":
        from planc.decoding.lark_format import to_lark

        return to_lark(grammar, header)
    from planc.decoding.gbnf_format import to_gbnf

    return to_gbnf(grammar, header)
