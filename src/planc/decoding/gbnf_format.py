"""`Grammar` in GBNF, the grammar format of llama.cpp.

GBNF has no lexer: a rule matches characters, and nothing is ignored. So the terminals become
rules of literals and character classes, and the whitespace and comments the lexer skips
(`%ignore`) become a rule `ws` that may follow every lexeme (and begin the text). A comment
runs to the end of its line: inside the text it is followed by its newline, or a
character-level engine would let it stop anywhere and the plan go on on the same line; only at
the very end may the text stop in a comment (`ws-end`).

Names: `start` is `root`, `_accessor` is `accessor`, `and_expr` is `and-expr` (GBNF names are
letters, digits and dashes); terminals keep their upper case.
"""

from __future__ import annotations

from planc.decoding import regex
from planc.decoding.rules import Choice, Expr, Grammar, GrammarError, Literal, Many, Seq, Symbol, replace, simplify, write

WS = "ws"
SPACE = "space"  # one run of whitespace, or one comment and its newline
WS_END = "ws-end"
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
# In a class, `-` and `^` would mean a range or a negation, and llama.cpp has no `\-` or `\^`.
_CLASS_ESCAPES = {"\\": "\\\\", "]": "\\]", "[": "\\[", "-": "\\x2D", "^": "\\x5E", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def to_gbnf(grammar: Grammar, header: str) -> str:
    """The GBNF text of `grammar`, each line of `header` as a comment at the top."""
    names = _names(grammar)

    def leaf(node: object) -> str:
        if isinstance(node, Literal):
            return _literal(node.text)
        if isinstance(node, Symbol):
            return names.get(node.name, node.name)
        return _class(node)

    def spaced(node: Expr) -> Expr | None:
        """A lexeme, with the whitespace and comments that may follow it."""
        lexeme = isinstance(node, Literal) or isinstance(node, Symbol) and node.terminal
        return Seq((node, Many(Symbol(WS), 0, 1))) if lexeme and grammar.ignore else None

    ignored = [_characters(grammar.terminals[name]) for name in grammar.ignore]
    to_end = [expr for expr in ignored if _runs_to_line_end(expr)]
    spaces = Choice(tuple(Seq((expr, Literal("\n"))) if expr in to_end else expr for expr in ignored))
    root = replace(grammar.rule(grammar.start), spaced)
    if grammar.ignore:
        root = Seq((Many(Symbol(WS), 0, 1), root) + ((Many(Symbol(WS_END), 0, 1),) if to_end else ()))
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += ["", f"root ::= {write(root, leaf)}"]
    lines += [
        f"{names[name]} ::= {write(replace(expr, spaced), leaf)}" for name, expr in grammar.rules.items() if name != grammar.start
    ]
    lines.append("")
    for name, pattern in grammar.terminals.items():
        if name in grammar.ignore:
            continue
        if name in grammar.notes:
            lines.append(f"# {names[name]}: {grammar.notes[name]}")
        lines.append(f"{names[name]} ::= {write(_characters(pattern), leaf)}")
    # `ws` is recursive, not `space+`: the same text, but llguidance's GBNF reader then keeps it a
    # rule, made of `space` lexemes, rather than melting it into the lexemes around it (as it
    # does with any rule of lexemes only): a lexeme `NAME ws "="` would make its greedy lexer read
    # `search (` as the start of a label, and fail at the `(`.
    if not grammar.ignore:  # the decoder grammar: every space is in the rules
        return "\n".join(lines) + "\n"
    lines.append(f"{WS} ::= {SPACE} {WS}?")
    lines.append(f"{SPACE} ::= {write(spaces, leaf)}")
    if to_end:
        lines.append(f"{WS_END} ::= {write(Choice(tuple(to_end)), leaf)}")
    return "\n".join(lines) + "\n"


def _names(grammar: Grammar) -> dict[str, str]:
    names = {name: name.strip("_").replace("_", "-") for name in [*grammar.rules, *grammar.terminals]}
    names[grammar.start] = "root"
    taken: dict[str, str] = {}
    for name, written in names.items():
        if written in taken or written in (WS, SPACE, WS_END):
            raise GrammarError(f"`{name}` and `{taken.get(written, written)}` would have the same GBNF name")
        taken[written] = name
    return names


def _characters(pattern: regex.Regex) -> Expr:
    """A pattern as GBNF says it: runs of single characters as literals, any character spelled out."""

    def spelled(node: Expr) -> Expr | None:
        if not isinstance(node, regex.Chars):
            return None
        if node.single is not None:
            return Literal(node.single)
        if node.negated and not node.ranges:  # not `.`: llguidance's GBNF reader takes it to refuse a newline
            return Choice((regex.Chars.of("\n").negate(), Literal("\n")))
        return node

    def joined(node: Expr) -> Expr | None:
        if not isinstance(node, Seq):
            return None
        items: list = []
        for item in (replace(item, joined) for item in node.items):
            if isinstance(item, Literal) and items and isinstance(items[-1], Literal):
                items[-1] = Literal(items[-1].text + item.text)
            else:
                items.append(item)
        return items[0] if len(items) == 1 else Seq(tuple(items))

    return replace(simplify(replace(pattern, spelled)), joined)


def _runs_to_line_end(expr: Expr) -> bool:
    """Whether an ignored pattern ends with anything but newlines, as a comment does."""
    last = expr.items[-1] if isinstance(expr, Seq) else expr
    return (
        isinstance(last, Many)
        and last.high is None
        and isinstance(last.item, regex.Chars)
        and last.item.negated
        and not last.item.matches("\n")
    )


def _literal(text: str) -> str:
    return '"' + "".join(_ESCAPES.get(c) or _code(c) for c in text) + '"'


def _class(chars: object) -> str:
    if not isinstance(chars, regex.Chars):
        raise GrammarError(f"cannot write {chars!r} in GBNF")

    def one(code: int) -> str:
        character = chr(code)
        return _CLASS_ESCAPES.get(character) or _code(character)

    body = "".join(one(low) if low == high else f"{one(low)}-{one(high)}" for low, high in chars.ranges)
    return f"[{'^' if chars.negated else ''}{body}]"


def _code(character: str) -> str:
    """A character as itself, or as an escape both llama.cpp and llguidance's GBNF reader take alike
    (`\\xHH` below 256; `\\uHHHH` from U+1000 to U+FFFF, as the reader drops leading zeros)."""
    code = ord(character)
    if character.isprintable() and not (character.isspace() and character != " "):
        return character
    if code < 0x100:
        return "\\x%02X" % code
    if 0x1000 <= code <= 0xFFFF:
        return "\\u%04X" % code
    return character
