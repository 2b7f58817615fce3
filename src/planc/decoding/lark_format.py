"""`Grammar` in the Lark dialect llguidance reads (and so OpenAI's grammar-constrained custom tools
and vLLM's `guidance` backend): rules in Lark's EBNF, terminals as regular expressions in Rust's
`regex` syntax, and `%ignore` for whitespace and comments.
"""

from __future__ import annotations

from planc.decoding import regex
from planc.decoding.rules import Choice, Grammar, GrammarError, Literal, Many, Seq, Symbol, write
from planc.syntax.json_input import printable_json

# Characters with a meaning of their own in Rust's regex syntax (outside and inside a class), and
# `/`, which would end the `/.../` of a Lark terminal.
_SPECIAL = set("\\.+*?()|[]{}^$#&-~/")
_SPECIAL_IN_CLASS = set("\\[]^-&~/")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def to_lark(grammar: Grammar, header: str) -> str:
    """The Lark text of `grammar`, each line of `header` as a comment at the top."""
    lines = [f"// {line}".rstrip() for line in header.splitlines()]
    skip = _free_name("IGNORED", grammar)
    # llguidance applies `%ignore` only between two lexemes, never before the first one or after
    # the last, where the lexer takes whitespace and comments as well: the start rule says so.
    start = grammar.rule(grammar.start)
    if grammar.ignore:
        start = Seq((Many(Symbol(skip), 0, 1), start, Many(Symbol(skip), 0, 1)))
    lines += ["", f"{grammar.start}: {write(start, _leaf)}"]
    lines += [f"{name}: {write(expr, _leaf)}" for name, expr in grammar.rules.items() if name != grammar.start]
    lines.append("")
    for name, pattern in grammar.terminals.items():
        if name in grammar.notes:
            lines.append(f"// {name}: {grammar.notes[name]}")
        lines.append(f"{name}: /{_pattern(pattern)}/")
    # One `%ignore` of one terminal, the same as the start rule's: with several, or with another
    # terminal matching the same text, llguidance's lexer may take the wrong one and fail.
    if grammar.ignore:
        lines.append(f"{skip}: ({' | '.join(grammar.ignore)})+")
        lines.append(f"%ignore {skip}")
    return "\n".join(lines) + "\n"


def _free_name(name: str, grammar: Grammar) -> str:
    while name in grammar.terminals or name in grammar.rules:
        name = "_" + name
    return name


def _leaf(node: object) -> str:
    if isinstance(node, Literal):
        return printable_json(node.text)  # a grammar string holds no raw control character
    if isinstance(node, Symbol):
        return node.name
    raise GrammarError(f"cannot write {node!r} in a rule")


def _pattern(node: regex.Regex, inside: bool = False) -> str:
    """A pattern in Rust's regex syntax; `inside` a sequence or a repeat, an alternation is grouped."""
    if isinstance(node, regex.Chars):
        return _chars(node)
    if isinstance(node, Seq):
        text = "".join(_pattern(item, inside=True) for item in node.items)
        return f"(?:{text})" if inside and len(node.items) != 1 else text
    if isinstance(node, Choice):
        text = "|".join(_pattern(option) for option in node.options)
        return f"(?:{text})" if inside else text
    if not isinstance(node, Many) or node.lazy:
        raise GrammarError(f"cannot write {node!r} as a pattern for llguidance")
    item = _pattern(node.item, inside=True)
    suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((node.low, node.high))
    if suffix is None:
        suffix = "{%d}" % node.low if node.low == node.high else "{%d,%s}" % (node.low, node.high or "")
    return item + suffix


def _chars(chars: regex.Chars) -> str:
    single = chars.single
    if single is not None:
        return _character(single, _SPECIAL)
    if chars.negated and not chars.ranges:
        return "(?s:.)"
    body = "".join(
        _character(chr(low), _SPECIAL_IN_CLASS)
        if low == high
        else f"{_character(chr(low), _SPECIAL_IN_CLASS)}-{_character(chr(high), _SPECIAL_IN_CLASS)}"
        for low, high in chars.ranges
    )
    return f"[{'^' if chars.negated else ''}{body}]"


def _character(character: str, special: set[str]) -> str:
    if character in _ESCAPES:
        return _ESCAPES[character]
    if character in special:
        return "\\" + character
    if not character.isprintable() or character.isspace() and character != " ":
        return "\\x{%X}" % ord(character)
    return character
