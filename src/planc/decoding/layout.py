"""The grammar as a model should write plans: the decoder grammar (`planc grammar`, without `--full`).

The parser takes every text a person might type; a grammar that constrains a weak model should
offer one way to write each plan, the way `planc fmt` prints it, so that the easiest path is a
well-formed plan and not comment lines or whitespace until the token limit. From the parser's
rules (narrowed to a registry or not) it makes a grammar where:

- nothing is ignored: no comments, and the only spaces are those `planc fmt` prints (one after
  `:` and `,`, around `=`, the comparisons, `and` and `or`; a newline ending each pipeline, `|>`
  at the start of a line indented one level deeper, a block `{ step() }` inline when it holds one
  step and else one pipeline a line, indented);
- a plan has at least one step and ends with the newline after its last pipeline;
- literals have their canonical spelling (`5`, not `05` or `5e0`; a string with only the escapes
  the printer writes; a record key in quotes only when it is not a name); no trailing commas, no
  `;`, no parentheses around values, and around conditions only where the printer writes them;
- a name has at most `LONGEST_NAME` characters, and a tool's name in the generic grammar at most
  `LONGEST_TOOL_NAME` (a registry's grammar spells its tools out): a greedy model unsure how to go
  on may otherwise write one name until its token limit (`Email_oncall_oncall_...`).

Indentation depends on how deep a block is, so each rule that can hold a block is written once
per depth, down to `DEPTH`; at the last depth a block is inline.
"""

from __future__ import annotations

from planc.decoding import regex
from planc.decoding.rules import EMPTY, NOTHING, Choice, Expr, Grammar, Literal, Many, Seq, Symbol, replace, walk

PLAN, PIPELINE, STEP, BLOCK, KEY, LABEL = "plan", "pipeline", "step", "block", "key", "label"
EXPR, AND, NOT, COMPARE = "expr", "and_expr", "not_expr", "compare"  # the conditions of grammar/plan.lark
DEPTH = 5  # blocks nested deeper than this are written inline (one step) or not at all
INDENT = "  "
SPACED = {
    ",": ", ",
    ":": ": ",
    "=": " = ",
    "or": " or ",
    "and": " and ",
    "not": "not ",
    "contains": " contains ",
    **{op: f" {op} " for op in ("==", "!=", "<", "<=", ">", ">=")},
}
# The longest name a model may write: a label, a reference, a field, a record key, a parameter in the
# generic grammar (a registry's spells its parameters out). The longest in the corpus and the examples
# (AgentDojo's plans included) has 21 characters.
LONGEST_NAME = 32
# The longest tool name in the generic grammar: the longest function name model APIs take (OpenAI's and
# Anthropic's, 64). AgentDojo's longest tool has 44 (`get_dietary_restrictions_for_all_restaurants`).
LONGEST_TOOL_NAME = 64
TOOL_NAME = "TOOL_NAME"
_SEPARATORS = {Many(Literal(","), 0, 1), Many(Literal(";"), 0, 1)}  # optional: the printer never writes them

# Literals as the printer spells them: JSON numbers as Python prints them back (an integer without
# leading zeros or `-0`; a fraction short enough to print as written), strings with the escapes
# json.dumps writes and `\{` only before what would otherwise be a template hole; a record key in
# quotes only when it is not a name.
_INT = r"0|-?[1-9][0-9]*"
_FRACTION = r"-?((0|[1-9][0-9]{0,14})\.0|(0|[1-9][0-9]{0,6})\.[0-9]{0,3}[1-9])"
_HOLE = (
    r"\{(\$([0-9]|[1-9][0-9]{1,5}|[A-Za-z_][A-Za-z0-9_]*)|item|index|accumulator)"
    r"(\.[A-Za-z_][A-Za-z0-9_]*|\[(0|[1-9][0-9]{0,5})\])*\}"
)
_ESCAPE = r'\\["\\bfnrt]|\\u00(0[0-7]|0b|0e|0f|1[0-9a-f])'
_CHAR = rf'[^"\\\x00-\x1f]|{_ESCAPE}|\\{_HOLE}'
_KEY_CHAR = rf'[^"\\\x00-\x1f]|{_ESCAPE}'
_NOT_NAME_START = rf'[^"\\\x00-\x1fA-Za-z_]|{_ESCAPE}'
_NOT_NAME_PART = rf'[^"\\\x00-\x1fA-Za-z0-9_]|{_ESCAPE}'
CANONICAL = {
    "INT": r"0|[1-9][0-9]*",
    "NUMBER": f"{_INT}|{_FRACTION}",
    "INTEGER": _INT,
    "STRING": f'"({_CHAR})*"',
    "TEMPLATE": f'"({_CHAR})*{_HOLE}({_CHAR})*"',
}
KEY_STRING = ("KEY_STRING", rf'"(({_NOT_NAME_START}|[A-Za-z_][A-Za-z0-9_]*({_NOT_NAME_PART}))({_KEY_CHAR})*)?"')


def for_decoder(grammar: Grammar, depth: int = DEPTH) -> Grammar:
    """`grammar` (the parser's, or narrowed to a registry) as a decoder should follow it.

    >>> from planc.decoding.read import read_grammar
    >>> from planc.decoding.lark_format import to_lark
    >>> print(to_lark(for_decoder(read_grammar()), "").split("pipeline_0: ")[1].splitlines()[0])
    step_0 ("\\n" "  " "|> " step_1)*
    """
    terminals = {
        name: regex.read(CANONICAL[name]) if name in CANONICAL else pattern for name, pattern in grammar.terminals.items()
    }
    terminals[KEY_STRING[0]] = regex.read(KEY_STRING[1])
    notes = dict(grammar.notes)
    rules = {name: _respaced(name, expr) for name, expr in grammar.rules.items() if name not in (PLAN, PIPELINE, BLOCK)}
    name = _own_terminal(grammar, LABEL)
    if name is not None:
        terminals[name] = regex.at_most(grammar.terminals[name], LONGEST_NAME)
        notes[name] = _noted(notes.get(name), f"at most {LONGEST_NAME} characters")
    tool = _own_terminal(grammar, STEP)  # the generic grammar's: a registry's spells its tools out
    if tool is not None:
        terminals[TOOL_NAME] = regex.at_most(grammar.terminals[tool], LONGEST_TOOL_NAME)
        notes[TOOL_NAME] = _noted(grammar.notes.get(tool), f"a tool's name: at most {LONGEST_TOOL_NAME} characters")
        rules[STEP] = replace(rules[STEP], lambda node: Symbol(TOOL_NAME) if node == Symbol(tool) else None)
    rules.update(_conditions())
    piped = _piped_step(grammar)
    nested = _reaching(rules, {STEP, piped})  # the rules that hold steps, so maybe blocks: one per depth
    written: dict[str, Expr] = {PLAN: Many(Seq((Symbol(_at(PIPELINE, 0)), Literal("\n"))), 1, None)}
    written.update((name, expr) for name, expr in rules.items() if name not in nested)
    for level in range(depth + 1):
        deeper = level < depth

        def leveled(node: Expr, level: int = level) -> Expr | None:
            if isinstance(node, Symbol) and (node.name in nested or node.name == BLOCK):
                return Symbol(_at(node.name, level))
            return None

        written.update((_at(name, level), replace(expr, leveled)) for name, expr in rules.items() if name in nested)
        step, inner = Symbol(_at(STEP, level)), _indent(level + 1)
        written[_at(PIPELINE, level)] = Seq((step, Many(piped_at(level, depth, piped), 0, None)))
        inline = Seq((Literal("{ "), step, Literal(" }")))
        if not deeper:
            written[_at(BLOCK, level)] = inline
            continue
        line = Seq((inner, Symbol(_at(PIPELINE, level + 1)), Literal("\n")))
        first_alone = Seq((Symbol(_at(STEP, level + 1)), Literal("\n"), Many(line, 1, None)))
        first_piped = Seq(
            (Symbol(_at(STEP, level + 1)), Many(piped_at(level + 1, depth, piped), 1, None), Literal("\n"), Many(line, 0, None))
        )
        lines = Seq((Literal("{"), Literal("\n"), inner, Choice((first_alone, first_piped)), _indent(level), Literal("}")))
        written[_at(BLOCK, level)] = Choice((inline, lines))
    return Grammar(grammar.start, written, terminals, (), notes).pruned()


def _own_terminal(grammar: Grammar, rule: str) -> str | None:
    """The one terminal `rule` names directly (the name of a label, the tool's in a generic `step`), if one."""
    found = {node.name for node in walk(grammar.rules.get(rule, NOTHING)) if isinstance(node, Symbol) and node.terminal}
    return found.pop() if len(found) == 1 else None


def _noted(note: str | None, more: str) -> str:
    return f"{note}; {more}" if note else more


def piped_at(level: int, depth: int, piped: str = STEP) -> Expr:
    """`|> step` on a line of its own after a step at `level`; the step one of rule `piped`."""
    if level >= depth:
        return NOTHING
    return Seq((Literal("\n"), _indent(level + 1), Literal("|> "), Symbol(_at(piped, level + 1))))


def _piped_step(grammar: Grammar) -> str:
    """The rule of a step after `|>` in `pipeline` (`("|>" step)*`): `step`, or, in a registry's grammar,
    the steps that take a piped value."""
    for node in walk(grammar.rules[PIPELINE]):
        if (
            isinstance(node, Seq)
            and len(node.items) == 2
            and node.items[0] == Literal("|>")
            and isinstance(node.items[1], Symbol)
        ):
            return node.items[1].name
    return STEP


def _indent(level: int) -> Expr:
    """The indentation of `level`, a lexeme per level: as one lexeme, a line's indentation would begin
    like a deeper line's, and llguidance's lexer, having read the longer one's start, cannot go back."""
    return Seq((Literal(INDENT),) * level)


def _conditions() -> dict[str, Expr]:
    """`or`, `and` and `not` with parentheses where the printer writes them, and nowhere else: around
    an `or` inside an `and`, a `not` or another `or`; around an `and` inside an `and` or a `not`."""

    def chain(operand: Expr, word: str) -> Expr:
        return Seq((operand, Many(Seq((Literal(SPACED[word]), operand)), 1, None)))

    def parenthesised(rule: str) -> Expr:
        return Seq((Literal("("), Symbol(rule), Literal(")")))

    or_operand = Choice((Symbol(AND), parenthesised("or_chain")))
    and_operand = Choice((Symbol(NOT), parenthesised("or_chain"), parenthesised("and_chain")))
    return {
        EXPR: Choice((Symbol(AND), chain(or_operand, "or"))),
        "or_chain": chain(or_operand, "or"),
        AND: Choice((Symbol(NOT), chain(and_operand, "and"))),
        "and_chain": chain(and_operand, "and"),
        NOT: Choice((Seq((Literal(SPACED["not"]), and_operand)), Symbol(COMPARE))),
    }


def _at(name: str, level: int) -> str:
    return f"{name}_{level}"


def _respaced(name: str, expr: Expr) -> Expr:
    """A rule with the spaces the printer writes around its literals, no optional separators, no
    parenthesised values and (in a record key) no quoted names."""

    def change(node: Expr) -> Expr | None:
        if node in _SEPARATORS:
            return EMPTY
        if isinstance(node, Seq) and len(node.items) == 3 and node.items[0] == Literal("(") and node.items[2] == Literal(")"):
            return NOTHING
        if name == KEY:
            return Symbol(KEY_STRING[0]) if node == Symbol("STRING") else None
        if isinstance(node, Literal) and node.text in SPACED:
            return Literal(SPACED[node.text])
        return None

    return replace(expr, change)


def _reaching(rules: dict[str, Expr], targets: set[str]) -> set[str]:
    """The rules from which one of `targets` can be reached (the targets included)."""
    uses = {name: {node.name for node in walk(expr) if isinstance(node, Symbol)} for name, expr in rules.items()}
    found = set(targets)
    while True:
        more = {name for name, used in uses.items() if name not in found and used & (found | {BLOCK, PIPELINE})}
        if not more:
            return found
        found |= more
