"""Every diagnostic code: its title, what it means, and an example that triggers it.

This table is the one place codes are described. `docs/diagnostics.md` is
generated from it (`make docs`), a test checks the file is current, and
another runs every example through `planc.check` to see it report its code.
Codes are stable and never reused.
"""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen
class Code:
    code: str
    title: str
    explanation: str
    example: str  # a plan (or a model reply, with `extract`) that reports this code
    extract: bool = False
    registry: str | None = None  # the planc.toml the example is checked against, when it calls tools
    policy: str | None = None  # the Cedar policy (policy.cedar) the example is checked against
    budget: dict = attrs.field(factory=dict)  # `check`'s budget arguments for the example (`max_calls`, ...)
    optimize: bool = False  # a note of the optimizer's: the example is optimized after it is checked

    def check_example(self):
        """`planc.check` of the example, against its registry and policy when it has them (and
        with the optimizer's notes added, for a code of the optimizer's)."""
        from planc.passes.check import check
        from planc.passes.policy.load import policy_from_text
        from planc.registry.config import registry_from_text

        # As if the registry were a planc.toml at the top of the repository: plan files it
        # declares are found from there.
        where = Path(__file__).resolve().parents[3] / "planc.toml"
        registry = registry_from_text(self.registry, where) if self.registry else None
        policy = policy_from_text(self.policy, where.with_name("policy.cedar")) if self.policy else None
        checked = check(self.example, extract_plan=self.extract, registry=registry, policy=policy, **self.budget)
        if not self.optimize:
            return checked
        from planc.optimize.optimize import optimize

        return attrs.evolve(checked, diagnostics=checked.diagnostics + optimize(checked).notes)


# The tools the type examples call.
INCIDENT_TOOLS = """\
[tools.search]
params = { query = { type = "string" }, limit = { type = "integer", minimum = 1, maximum = 100 } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" }, title = { type = "string" }, status = { enum = ["open", "resolved"] } } } }
effects = { read_only = true }

[tools.notify]
params = { channel = { type = "string" }, text = { type = "string" } }
required = ["channel", "text"]
"""

# The tools the optimizer's examples call.
OPTIMIZER_TOOLS = """\
[tools.search]
params = { query = { type = "string" } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
effects = { read_only = true, deterministic = true }

[tools.notify]
params = { channel = { type = "string" }, text = { type = "string" } }
required = ["channel", "text"]
effects = { read_only = false, destructive = false }

[tools.lookup]
params = { id = { type = "string" } }
required = ["id"]
"""

# The policy of the E400 example.
NO_DESTRUCTIVE = """\
@id("no-destructive")
@reason("a tool that may destroy data needs a person's approval")
forbid(principal, action == Action::"call", resource) when { resource.destructive };

permit(principal, action == Action::"call", resource);
"""


_ALL = [
    Code("E100", "unexpected token or unparseable input",
         "The text is not a plan at this point. The message names what was expected there "
         "in words (`,` or `)`, a value, a step) and what was found. Common model mistakes get "
         "their own message and, where the intent is certain, a fix: `=` for `:` in an argument, "
         "`|` for `|>`, `&&`/`||`/`!` for `and`/`or`/`not`, a missing comma, an unclosed bracket, "
         "a markdown fence, and JSON, Python or prose where a plan should be.",
         'search(query: "sev2 outages" limit: 50)'),
    Code("E101", "unterminated string",
         "A string opened with `\"` has no closing quote on the same line. Text over several "
         "lines goes in triple quotes: `\"\"\"...\"\"\"`.",
         'summarize(style: "bullets)'),
    Code("E102", "positional argument",
         "Arguments are always named: `search(query: \"x\")`, not `search(\"x\")`. When the "
         "registry knows the tool, the hint names its parameters.",
         'search("sev2 outages", limit: 50)'),
    Code("E103", "single-quoted string",
         "Strings use double quotes. The fix rewrites the string with double quotes.",
         "summarize(style: 'bullets')"),
    Code("E104", "empty plan",
         "There is no step in the input (only whitespace or comments).",
         "# nothing to do yet\n"),
    Code("E105", "duplicate argument name",
         "The same argument is given twice in one step; keep one.",
         'search(query: "outages", limit: 5, limit: 10)'),
    Code("E200", "unknown tool",
         "The step calls a tool that is neither a control step nor declared in the registry "
         "(planc.toml, its MCP lock, its plans). The hint names the closest tools.",
         'serch(query: "outages", limit: 5)', registry=INCIDENT_TOOLS),
    Code("E201", "unknown argument for this tool",
         "The tool has no parameter of that name. The hint names the closest parameters, or all "
         "of them.",
         'search(query: "outages", limt: 5)', registry=INCIDENT_TOOLS),
    Code("E202", "missing required argument",
         "A parameter the tool requires is not given. A pipe parameter counts as given when the "
         "step receives a piped result.",
         'notify(channel: "#incidents")', registry=INCIDENT_TOOLS),
    Code("E203", "forward or self reference",
         "A step reads the result of itself or of a step that comes after it. Steps can only "
         "read the results of earlier steps.",
         'summarize(text: $2)\nsearch(query: "outages")'),
    Code("E204", "reference out of range or unknown label",
         "`$0`, a step number past the last step, or a label no step has. A label defined inside "
         "a block is visible only inside that block.",
         'hits = search(query: "outages")\nsummarize(text: $hit)'),
    Code("E205", "duplicate label",
         "Labels are unique in the whole plan, and `args` is reserved for `$args`.",
         'hits = search(query: "outages")\nhits = search(query: "incidents")'),
    Code("E206", "bare word outside a condition or block",
         "A bare word is a field name only inside `filter(where: ...)`, and `item`, `index` and "
         "`accumulator` only inside blocks that bind them. Anywhere else it is most likely a "
         "string that lost its quotes; the fix adds them.",
         'search(query: "outages") |> summarize(style: bullets)'),
    Code("E207", "`item`, `index` or `accumulator` outside a block that binds it",
         "`item` and `index` are bound inside the `do` block of `map`, `filter` and `reduce` (and "
         "in `filter`'s `where` and `infer`); `accumulator` only inside `reduce`'s `do` block.",
         'search(query: "outages") |> summarize(text: item.title)'),
    Code("E208", "tool pattern matches nothing",
         "An `agent`'s `tools` list names tools by name or by `*` pattern (`linear__*`); each "
         "pattern must match at least one tool of the registry.",
         'agent(prompt: "Triage the outages", output_schema: {type: "object"}, tools: ["search", "linear__*"])',
         registry=INCIDENT_TOOLS),
    Code("E209", "pipe into a step that cannot take it",
         "`a(...) |> b(...)` passes `a`'s result to `b`'s pipe parameter. It is an error when `b` "
         "declares no pipe parameter, or when the step also gives that parameter explicitly.",
         'search(query: "outages") |> notify(channel: "#incidents", text: "new outages")',
         registry=INCIDENT_TOOLS),
    Code("E210", "plan cycle",
         "A plan declared under `[plans.NAME]` is the tool `plan__NAME`. A call that leads back to "
         "a plan already being run, directly or through other plans, would never end.",
         'plan__loop()', registry=INCIDENT_TOOLS + '\n[plans.loop]\nfile = "docs/examples/loop.plan"\n'),
    Code("E300", "argument value does not match the parameter's type",
         "A literal argument is validated against the JSON Schema of its parameter, and the message "
         "says in words what was expected and what was found. A reference, a template or a piped "
         "result is checked by its static type: the `returns` schema of the step it reads and the "
         "path into it. A type planc does not know (a tool without `returns`, `$args`) passes. "
         "Comparisons are checked too: `<`, `<=`, `>`, `>=` need two numbers or two strings, and "
         "`contains` a string or a list on its left.",
         'search(query: "outages", limit: "ten")', registry=INCIDENT_TOOLS),
    Code("E301", "unknown field in a reference path",
         "A reference, a template hole or a bare name in `filter(where: ...)` reads a field that the "
         "type it reads from does not have; the hint lists the fields that exist. An object schema "
         "that declares `properties` has only those fields unless it says `additionalProperties`. "
         "`.length` on a list or a string is its length; on an object it is the field `length`.",
         'search(query: "outages")\nnotify(channel: "#ops", text: "Top: {$1[0].titel}")',
         registry=INCIDENT_TOOLS),
    Code("E302", "condition where a value is expected, or a value where a condition is",
         "Conditions (`==`, `<`, `contains`, `and`, `or`, `not`) are only allowed as `where` of "
         "`filter` and `when` of `decide` and `exit`. There, a single reference to a boolean "
         "(`when: $2.final`) is a condition too, but a string, a list or a number is not: compare "
         "it, or ask the judge model with `infer: \"...\"`.",
         'search(query: "outages")\ndecide(when: "there are many", then: { notify(channel: "#ops", text: "{$1.length} open") })',
         registry=INCIDENT_TOOLS),
    Code("E303", "invalid control-step input",
         "A control step's input that cannot work: a one-of group given twice or not at all (both "
         "`where` and `do` on a `filter`, neither `when` nor `infer` on a `decide`), an agent's "
         "`output_schema` that is not a JSON Schema of an object, `max_iterations` below 1, or "
         "`tools: []`.",
         'agent(prompt: "List the release risks", output_schema: {type: "array", items: {type: "string"}})'),
    Code("E400", "call denied by policy",
         "With a Cedar policy (`--policy FILE`, or `policy = \"...\"` in planc.toml), every step, "
         "steps inside blocks included, is put to it as a call before anything runs "
         "(docs/policy.md has the request). A step the policy denies is reported at its tool, "
         "naming the `forbid` policies that denied it by their `@id` (or their position in the "
         "file), with their `@reason`; or, when no `permit` policy matches, saying so. Arguments "
         "only known at run time are named in `context.dynamic`; the interpreter asks the policy "
         "again with their values before the call.",
         'search(query: "outages")\nnotify(channel: "#ops", text: "{$1.length} outages")',
         registry=INCIDENT_TOOLS, policy=NO_DESTRUCTIVE),
    Code("E401", "over budget",
         "`--max-usd`, `--max-calls` and `--max-inferences` are budgets: a plan whose cost may exceed "
         "one of them is refused before anything runs. What counts is the most of the plan's cost "
         "range (docs/cost.md), and a cost with no upper bound (W500) exceeds every budget. The "
         "error points at the top-level step where the running total first passes the budget, and "
         "says how much that step and the steps before it may spend.",
         'map(over: ["#ops", "#db", "#web"], do: { notify(channel: item, text: "the deploy starts") })',
         registry=INCIDENT_TOOLS, budget={"max_calls": 2}),
    Code("W500", "unbounded fan-out",
         "A `map`, `filter` or `reduce` spends tool calls or model inferences on every item of a list "
         "whose length planc cannot bound, so the plan's cost has no upper bound and exceeds every "
         "budget. A list is bounded by a literal list's length, by `maxItems` in its type, or by the "
         "tool that made it when the tool declares `returns_at_most` (the parameter that caps its "
         "result's length, like `limit`) and that parameter has a literal value, a `maximum` or a "
         "`default`. A `filter` with `where` costs nothing per item and never warns, and neither does a list "
         "planc knows nothing of: the result of a tool it does not know (as without a registry) or a value "
         "of unknown type (docs/cost.md).",
         'search(query: "outages") |> map(do: { notify(channel: "#ops", text: item.title) })',
         registry=INCIDENT_TOOLS),
    Code("W501", "result of a read-only step is never used",
         "A step whose tool is declared read-only only produces its result; when no reference, pipe "
         "or block passes that result on, and it is not the plan's result, the call does nothing.",
         'search(query: "outages")\nnotify(channel: "#ops", text: "search done")', registry=INCIDENT_TOOLS),
    Code("W502", "text that looks like another template language's hole",
         "`{{E0.x}}`, `${{ x }}`, `${x}` and `{E0.title}` are literal text in planc, which writes a "
         "hole as `{$1.field}`, `{$label.field}` or `{item.field}`. The fix is offered when the planc "
         "spelling is certain: the text inside is a planc reference or a binding (`{{$1.title}}`, "
         "`{ item.id }`), or starts with a label the string can read (`{{hits.title}}`). A lone word "
         "in single braces (`{name}`) is left alone, as a tool may do its own templating; `\\{` "
         "always writes a literal brace.",
         'search(query: "outages")\nnotify(channel: "#ops", text: "Top: {{$1[0].title}}")',
         registry=INCIDENT_TOOLS),
    Code("W503", "comparison with a value outside the `enum`",
         "`==` or `!=` compares a value whose type declares an `enum` with a literal that is not one "
         "of its values, so the comparison is always false (or always true). When the literal "
         "differs from one value only in case, the fix is that value.",
         'search(query: "outages") |> filter(where: status == "closed")', registry=INCIDENT_TOOLS),
    Code("N600", "repeated call reused",
         "`planc optimize` (and `planc run --optimize`) removed a call that repeats an earlier one, and what "
         "read its result (references to it, and the step it piped into) reads the earlier call's. Legal "
         "because the tool is declared read-only and deterministic (`effects = { read_only = true, "
         "deterministic = true }`), the two calls have the same arguments (references to the same steps, the "
         "same piped input), and no step between them changes anything. Only top-level steps are compared, "
         "never control steps or declared plans (docs/optimize.md).",
         'first = search(query: "disk full")\nagain = search(query: "disk full")\n'
         'notify(channel: "#ops", text: "{$first.length} and {$again.length}")',
         registry=OPTIMIZER_TOOLS, optimize=True),
    Code("N601", "steps run at the same time",
         "Under the optimizer's schedule (`planc run --optimize`) these top-level steps start together. Legal "
         "because none of them reads another's result (by a reference or a pipe, in its arguments or its "
         "blocks' steps) and none of them changes anything or may exit: every tool they call is declared "
         "read-only. A step that changes something or may exit keeps its place: it starts after every step "
         "before it has finished, and every step after it waits for it (docs/optimize.md).",
         'disk = search(query: "disk full")\nmemory = search(query: "out of memory")\n'
         'notify(channel: "#ops", text: "{$disk.length} disk and {$memory.length} memory incidents")',
         registry=OPTIMIZER_TOOLS, optimize=True),
    Code("N602", "no rewrite: no effects metadata",
         "A rewrite the optimizer would make is stopped only by a tool with no effects metadata, which planc "
         "takes as possibly changing anything and giving a different result every time: a repeated call runs "
         "again, and steps that read nothing of each other still run one after the other. The note names the "
         "tools and the metadata that would allow the rewrite (`read_only = true` to move a step, and "
         "`deterministic = true` too to reuse a result). Declare it only when it is true: planc relies on it. "
         "A tool whose effects are all the conservative defaults counts as having no metadata.",
         'lookup(id: "INC-1")\nlookup(id: "INC-2")', registry=OPTIMIZER_TOOLS, optimize=True),
]

CODES: dict[str, Code] = {code.code: code for code in _ALL}


def render_markdown() -> str:
    """The text of docs/diagnostics.md."""
    from rich.console import Console

    from planc.diagnostics.render_text import render_text

    out = [
        "# Diagnostics",
        "",
        "Every problem planc reports has a stable code. `E1xx` are syntax errors, `E2xx` resolution",
        "errors, `E3xx` type errors, `E4xx` policy and budget errors, `W5xx` warnings and `N6xx` notes",
        "on rewrites. Each diagnostic points at the exact span of the input it is about, and may carry",
        "hints and a fix (a replacement for a span).",
        "",
        "This file is generated from `src/planc/diagnostics/codes.py` by `make docs`; each example below",
        "is checked by the test suite, and its output is what `planc check example.plan` prints for it",
        "(with `--config planc.toml` where the example calls tools declared in the `planc.toml` shown).",
        "",
    ]
    shown: dict[str, str] = {}  # registry text -> the first code whose example uses it
    for code in _ALL:
        result = code.check_example()
        console = Console(width=200, no_color=True, force_terminal=False)
        with console.capture() as captured:
            for diagnostic in result.diagnostics:
                console.print(render_text(diagnostic, result.source, "example.plan"))
        out += [f"## {code.code}", "", f"**{code.title}**", "", code.explanation, ""]
        if code.registry in shown:
            first = shown[code.registry]
            out += [f"With the `planc.toml` shown under [{first}](#{first.lower()}).", ""]
        elif code.registry:
            shown[code.registry] = code.code
            out += ["With this `planc.toml`:", "", "```toml", code.registry.rstrip("\n"), "```", ""]
        if code.optimize:
            out += ["Reported by `planc optimize example.plan` (and `planc run --optimize`).", ""]
        if code.budget:
            options = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in code.budget.items())
            out += [f"Checked with `{options}`.", ""]
        if code.policy:
            out += ["With this `policy.cedar` (`--policy policy.cedar`):", "", "```cedar", code.policy.rstrip("\n"),
                    "```", ""]
        out += ["```", code.example.rstrip("\n"), "```", "", "```text", captured.get().rstrip("\n"), "```", ""]
    return "\n".join(out)
