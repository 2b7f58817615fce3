"""Random plans for the non-interference properties, from the language's constructs in general.

A plan first reads some sources (the tools of noninterference_world.py: an untrusted inbox and
fetch, a trusted lookup, a secret vault, a trusted account whose schema labels some parts untrusted,
`recent`, which repeats a secret its declaration does not label, and the declared plan `sub`), then does things with what they returned: effectful calls (`send`,
`post`) whose arguments are references, templates, a loop's `item`, `index` and `accumulator`, a
list's `.length`; `map`, `filter` and `reduce` over lists; one item chosen from a list (`filter` and
`take`) or from records a `map` built (`reshape`, `sort`) by a condition on any value, and used in a
call; `decide` and `exit` on conditions and on `infer`; agents offered tools that fail; `ask`; pure steps; exits with messages; the declared plan,
whose own body is drawn too (with its exits and failures). Which value goes where is drawn from what
the sources give, by type, so most plans check; those that do not are not run.
"""

from __future__ import annotations

from hypothesis import strategies as st

SOURCES = ("inbox", "fetch", "lookup", "vault", "account", "sub")
OUTPUT = '{type: "object", properties: {to: {type: "string"}, amount: {type: "integer"}}, required: ["to", "amount"]}'


class Values:
    """The values a plan's steps may read, by type, as expressions: what the sources drawn so far
    give."""

    def __init__(self) -> None:
        self.strings: list[str] = ['"plain"']
        self.numbers: list[str] = ["7"]
        self.flags: list[str] = []
        self.lists: list[tuple[str, str]] = []  # (expression, what its items are: "record", "number", "entry")
        # Texts that hold a secret no label marks (`recent`'s): written out as they are (an argument,
        # a message), never decided on nor shown to a model, which no label would stop.
        self.echoes: list[str] = []

    def add(self, label: str, tool: str) -> None:
        ref = f"${label}"
        if tool == "inbox":
            self.lists.append((ref, "record"))
            self.numbers.append(f"{ref}.length")
        elif tool in ("fetch", "lookup"):
            self.strings.append(f"{ref}.text")
            self.numbers += [f"{ref}.n", f"{ref}.items.length"]
            self.flags.append(f"{ref}.flag")
            self.lists.append((f"{ref}.items", "number"))
        elif tool == "vault":
            self.strings.append(f"{ref}.code")
            self.numbers.append(f"{ref}.pin")
        elif tool == "account":
            self.strings += [f"{ref}.owner.iban", f"{ref}.owner.memo"]
            self.numbers.append(f"{ref}.history.length")
            self.lists.append((f"{ref}.history", "entry"))
        elif tool == "recent":
            self.echoes.append(f"{ref}.text")


def _condition(draw, values: Values) -> str:
    kind = draw(st.sampled_from(["compare", "flag", "text"] if values.flags else ["compare", "text"]))
    if kind == "flag":
        return draw(st.sampled_from(values.flags))
    if kind == "text":
        return f'{draw(st.sampled_from(values.strings))} == "plain"'
    return f"{draw(st.sampled_from(values.numbers))} {draw(st.sampled_from(['>', '==', '<=']))} {draw(st.integers(0, 5))}"


def _text(draw, values: Values, *extra: str, echoes: bool = False) -> str:
    """A template of up to three holes (or literal text); with `echoes`, maybe one of them too."""
    readable = [value for value in values.strings + values.numbers + list(extra) if value[0] not in '"0123456789']
    holes = draw(st.lists(st.sampled_from(readable), max_size=3)) if readable else []
    if echoes and values.echoes and draw(st.booleans()):
        holes.append(draw(st.sampled_from(values.echoes)))
    return '"' + " ".join(["t", *(f"{{{hole}}}" for hole in holes)]) + '"'


def _effect(draw, values: Values, *bound: str) -> str:
    """One effectful call, its arguments drawn from `values` and the names a block binds (`bound`)."""
    if draw(st.booleans()):
        to = draw(st.sampled_from(values.strings + values.echoes + [_text(draw, values, *bound, echoes=True)]))
        amount = draw(st.sampled_from(values.numbers + [name for name in bound if name != "item.text"]))
        return f"send(to: {to}, amount: {amount})"
    return f"post(text: {_text(draw, values, *bound, echoes=True)})"


def _loop(draw, values: Values) -> str:
    over, items = draw(st.sampled_from(values.lists))
    fields = {
        "record": ["item.text", "item.n"],
        "number": ["item"],
        "entry": ["item.memo", "item.iban"],
    }[items]
    kind = draw(st.sampled_from(["map", "filter", "reduce"]))
    if kind == "map":
        return f"map(over: {over}, concurrency: 1, do: {{ {_effect(draw, values, 'index', *fields)} }})"
    if kind == "filter":
        where = {"record": "n > 2", "number": "item > 2", "entry": 'memo != "x"'}[items]
        return f"filter(over: {over}, where: {where}) |> map(concurrency: 1, do: {{ {_effect(draw, values, 'index', *fields)} }})"
    return (
        f"reduce(over: {over}, initial: 0, do: {{ {_effect(draw, values, 'index', 'accumulator', *fields)}; "
        f"add(a: accumulator, b: 1) }})"
    )


def _step(draw, values: Values, number: int) -> list[str]:
    """One step of the plan (two where the second reads the first: an agent, an ask)."""
    kinds = [
        "effect",
        "decide",
        "decide infer",
        "exit",
        "exit infer",
        "agent",
        "agent",
        "ask",
        "lookup",
        "pure",
        "sub",
    ]
    if values.lists:
        kinds += ["loop", "choose", "rows"]
    kind = draw(st.sampled_from(kinds))
    if kind == "effect":
        return [_effect(draw, values)]
    if kind == "choose":  # one item of a list, chosen by a comparison with any value, used in a call
        over, items = draw(st.sampled_from(values.lists))
        compared, read = {"record": ("n", ".text"), "number": ("item", ""), "entry": ("memo", ".iban")}[items]
        against = draw(st.sampled_from(values.strings if items == "entry" else values.numbers))
        how = "!=" if items == "entry" else draw(st.sampled_from([">", "==", "<="]))
        chosen = f"$c{number}[0]{read}"
        use = draw(st.sampled_from([f'post(text: "chose {{{chosen}}}")', f'send(to: "{{{chosen}}}", amount: 1)']))
        return [f"filter(over: {over}, where: {compared} {how} {against}) |> c{number} = take(count: 1)", use]
    if kind == "loop":
        return [_loop(draw, values)]
    if kind == "rows":  # records built per item, one field from the item and one from anything; one chosen by it
        over, items = draw(st.sampled_from(values.lists))
        key = {"record": "item.text", "number": "item", "entry": "item.iban"}[items]
        by = draw(st.sampled_from(values.numbers + values.strings))
        chosen = f"$c{number}[0].{draw(st.sampled_from(['k', 'v']))}"
        use = draw(st.sampled_from([f'post(text: "chose {{{chosen}}}")', f'send(to: "{{{chosen}}}", amount: 1)']))
        return [
            f"rows{number} = map(over: {over}, concurrency: 1, do: {{ reshape(value: {{k: {key}, v: {by}}}) }})",
            f'sort(over: $rows{number}, field: "v") |> c{number} = take(count: 1)',
            use,
        ]
    if kind in ("decide", "decide infer"):
        how = f"when: {_condition(draw, values)}" if kind == "decide" else f"infer: {_text(draw, values)}"
        otherwise = f", else: {{ {_effect(draw, values)} }}" if draw(st.booleans()) else ""
        return [f"decide({how}, then: {{ {_effect(draw, values)} }}{otherwise})"]
    if kind in ("exit", "exit infer"):
        how = f"when: {_condition(draw, values)}" if kind == "exit" else f"infer: {_text(draw, values)}"
        status = draw(st.sampled_from(["ok", "error"]))
        return [f'exit({how}, status: "{status}", message: {_text(draw, values, echoes=True)})']
    if kind == "agent":
        tools = draw(
            st.lists(
                st.sampled_from(["fetch", "lookup", "send", "post", "plan__sub"]),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        listed = ", ".join(f'"{tool}"' for tool in tools)
        follow = draw(
            st.sampled_from(
                [
                    "send(to: $a{n}.output.to, amount: $a{n}.output.amount)",
                    'post(text: "answer {{$a{n}.output.to}}")',
                ]
            )
        )
        return [
            f"a{number} = agent(prompt: {_text(draw, values)}, tools: [{listed}], max_iterations: 4, output_schema: {OUTPUT})",
            follow.format(n=number),
        ]
    if kind == "ask":
        label = f"q{number}"
        return [
            f'{label} = ask(question: {_text(draw, values)}, when_unanswered: "default", default: "no")',
            f'decide(when: ${label} == "yes", then: {{ {_effect(draw, values)} }})',
        ]
    if kind == "sub":  # the declared plan, whose `exit`s decide whether the steps after this one run
        values.numbers.append(f"$d{number}.n")
        called = f"d{number} = plan__sub(k: {draw(st.sampled_from(values.numbers[:-1]))})"
        return [called, f'post(text: "after {number}")']  # a call that reads nothing, made if it ends well
    if kind == "lookup":  # a trusted tool that fails with its argument in its error
        return [f"lookup(key: {draw(st.sampled_from(values.strings))})"]
    text, number_ = draw(st.sampled_from(values.strings)), draw(st.sampled_from(values.numbers))
    return draw(
        st.sampled_from(
            [
                [f"parse_json(text: {text})"],
                [f"upper(text: {text}) |> post()"],
                [f"p{number} = add(a: {number_}, b: 1)", f'send(to: "plain", amount: $p{number})'],
            ]
        )
    )


def _sub(draw) -> str:
    """The declared plan `sub` (its parameter `k`): a source, then effects, exits and failures; its
    result `{n: NUMBER}`, or an exit's `{n: 1}`."""
    values = Values()
    values.numbers.append("$args.k")
    lines = []
    tool = draw(st.sampled_from(["fetch", "inbox", "lookup", "account", "fetch"]))
    argument = {
        "fetch": "id: $args.k",
        "lookup": 'key: "k{$args.k}"',
        "inbox": 'folder: "s{$args.k}"',
        "account": "id: $args.k",
    }[tool]
    lines.append(f"r = {tool}({argument})")
    values.add("r", tool)
    read = Values()  # what its `exit`s decide on: what its source returned
    read.numbers, read.strings = [], []
    read.add("r", tool)
    read.strings = read.strings or ['"plain"']
    read.numbers = read.numbers or values.numbers
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["effect", "exit", "exit", "loop"] if values.lists else ["effect", "exit", "exit"]))
        if kind == "effect":
            lines.append(_effect(draw, values))
        elif kind == "loop":
            lines.append(_loop(draw, values))
        else:
            status = draw(st.sampled_from(["error", "ok", "error"]))
            lines.append(
                f'exit(when: {_condition(draw, read)}, status: "{status}", output: {{n: 1}}, message: {_text(draw, values)})'
            )
    lines.append(f"reshape(value: {{n: {draw(st.sampled_from(values.numbers))}}})")  # its result, or an exit's
    return "\n".join(lines) + "\n"


@st.composite
def plans(draw) -> tuple[str, str]:
    """A plan, and the body of the declared plan `sub` it may call."""
    values = Values()
    lines = []
    for number in range(1, draw(st.integers(1, 3)) + 1):
        tool = draw(st.sampled_from(SOURCES))
        constant = draw(st.integers(0, 3))
        if tool == "sub":
            lines.append(f"s{number} = plan__sub(k: {constant})")
            values.numbers.append(f"$s{number}.n")
            continue
        argument = {
            "inbox": f'folder: "f{constant}"',
            "fetch": f"id: {constant}",
            "lookup": f'key: "k{constant}"',
            "vault": f'name: "v{constant}"',
            "account": f"id: {constant}",
        }[tool]
        lines.append(f"s{number} = {tool}({argument})")
        values.add(f"s{number}", tool)
        if tool == "vault" and draw(st.booleans()):
            lines.append(f"r{number} = recent()")
            values.add(f"r{number}", "recent")
    for number in range(len(lines) + 1, len(lines) + draw(st.integers(1, 4)) + 1):
        lines += _step(draw, values, number)
    return "\n".join(lines) + "\n", _sub(draw)
