"""Every diagnostic code: its title, what it means, the messages it is reported with, and an example.

This table is the one place codes are described, and plain data. Every diagnostic
is built from it (`planc.diagnostics.build.diagnostic`): a code's `messages` map
the name of each form it is reported in to a `str.format` template whose named
fields the reporting site fills in, so the wording of every message is here.
`planc.explain` runs the examples and generates `docs/diagnostics.md` from it
(`make docs`). tests/test_docs.py checks that file is current and that every
example reports its code; tests/test_codes.py that every form a `diagnostic(...)`
call names is in the table and every form of the table is named by a call.
Codes are stable and never reused.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs


def _read_only(messages: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(messages)


@attrs.frozen
class Code:
    code: str
    title: str
    explanation: str
    # Form name -> `str.format` template with named fields: "`{written}` refers to no step: ...".
    messages: Mapping[str, str] = attrs.field(converter=_read_only)
    example: str  # a plan (or a model reply, with `extract`) that reports this code
    extract: bool = False
    registry: str | None = None  # the planc.toml the example is checked against, when it calls tools
    policy: str | None = None  # the Cedar policy (policy.cedar) the example is checked against
    budget: dict = attrs.field(factory=dict)  # `check`'s budget arguments for the example (`max_calls`, ...)
    optimize: bool = False  # a note of the optimizer's: the example is optimized after it is checked
    approvals: bool = False  # the example is checked as for a run in which a person approves flagged calls
    # The shapes the run store learned that the example is checked with: tool -> (JSON Schema, calls).
    learned: dict = attrs.field(factory=dict)


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

# A trusted tool that declares no `returns`, whose results' shape the run store learns.
LEARNING_TOOLS = """\
[tools.lookup]
params = { id = { type = "string" } }
required = ["id"]
labels = []
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

# The tools and policy of the flow examples: a bill anyone could have written, and a payment.
FLOW_TOOLS = """\
[tools.read_bill]
params = { path = { type = "string" } }
returns = { type = "object", properties = { iban = { type = "string" }, total = { type = "number" } } }
effects = { read_only = true }

[tools.pay]
params = { recipient = { type = "string" }, amount = { type = "number" } }
labels = []
"""
FLOW_POLICY = """\
@id("no-untrusted-recipient")
@reason("money goes only to recipients the user gave, not to one read from content others can write")
forbid(principal, action, resource) when
  { context.sources has recipient && context.sources.recipient.contains("untrusted") };

permit(principal, action == Action::"call", resource);
"""

# A tool whose results are secret, and one that changes the world (W508's example).
SECRET_TOOLS = """\
[tools.vault]
returns = { type = "object", properties = { pin = { type = "string" } } }
effects = { read_only = true }
labels = ["secret"]

[tools.notify]
params = { channel = { type = "string" }, text = { type = "string" } }
labels = []
"""

# The policy of the E400 example.
NO_DESTRUCTIVE = """\
@id("no-destructive")
@reason("a tool that may destroy data needs a person's approval")
forbid(principal, action == Action::"call", resource) when { resource.destructive };

permit(principal, action == Action::"call", resource);
"""


_ALL = [
    Code(
        "E100",
        "unexpected token or unparseable input",
        "The text is not a plan at this point. The message names what was expected there "
        "in words (`,` or `)`, a value, a step) and what was found. Common model mistakes get "
        "their own message and, where the intent is certain, a fix: `=` for `:` in an argument, "
        "`|` for `|>`, `&&`/`||`/`!` for `and`/`or`/`not`, a missing comma, an unclosed bracket, "
        "a markdown fence, and JSON, Python or prose where a plan should be.",
        {
            # Characters no plan has (the lexer).
            "long_number": "this number is too long: more than {most} characters",
            "leading_zero": "a number cannot start with `0`: `{number}`",
            "curly_quotes": 'strings use straight double quotes `"`, not curly quotes',
            "fence": "the plan is inside a markdown code fence",
            "bar": "`|` is not an operator here: a pipe is written `|>`",
            "bars": "`||` is not an operator here: write `or`",
            "ampersand": "`{written}` is not an operator here: write `and`",
            "bang": "`!` is not an operator here: write `not` (or `!=` for inequality)",
            "character": "unexpected character `{character}`",
            # What the parser and its builder refuse.
            "too_deep": "this nests too deeply: planc reads plans nested at most {most} levels",
            "huge_number": "the number `{number}` is too large",
            "escape": "invalid escape `\\{escape}` in a string",
            # A parse failure explained (syntax/errors.py), the known mistakes first.
            "json": "this is JSON, not a plan",
            "python": "this looks like Python code, not a plan",
            "yaml": "this looks like YAML, not a plan",
            "prose": "this looks like prose, not a plan step",
            "unclosed": "this `{bracket}` is never closed",
            "step_as_value": "a step cannot be used as a value: `{call}`",
            "keyword_name": "`{keyword}` is a keyword and cannot name an argument",
            "equals_for_colon": "expected `:` after the argument name `{name}`, found `=`",
            "equals_in_record": "expected `:` after the key `{key}`, found `=`",
            "colon_for_equals": "expected `(` or `=` after `{label}`, found `:`",
            "step_after_pipe": "expected a step after `|>`, found {found}",
            # `expected` and `found` are words: "`,` or `)`", "a value", "`limit`", "the end of the plan".
            "expected": "expected {expected}, found {found}",
            "expected_after": "expected {expected} after `{previous}`, found {found}",
            "expected_after_argument": "expected {expected} after the argument `{argument}`, found {found}",
        },
        'search(query: "sev2 outages" limit: 50)',
    ),
    Code(
        "E101",
        "unterminated string",
        'A string opened with `"` has no closing quote on the same line. Text over several '
        'lines goes in triple quotes: `"""..."""`.',
        {
            "unclosed": 'unterminated string: this string has no closing `"`',
            "unclosed_triple": 'unterminated string: this `"""` string is never closed',
        },
        'summarize(style: "bullets)',
    ),
    Code(
        "E102",
        "positional argument",
        'Arguments are always named: `search(query: "x")`, not `search("x")`. When the '
        "registry knows the tool, the hint names its parameters.",
        {"positional": "positional argument `{value}`: arguments are passed by name"},
        'search("sev2 outages", limit: 50)',
    ),
    Code(
        "E103",
        "single-quoted string",
        "Strings use double quotes. The fix rewrites the string with double quotes.",
        {"single_quotes": "strings use double quotes, not single quotes"},
        "summarize(style: 'bullets')",
    ),
    Code(
        "E104",
        "empty plan",
        "There is no step in the input (only whitespace or comments).",
        {"empty": "the plan is empty: there is no step to run"},
        "# nothing to do yet\n",
    ),
    Code(
        "E105",
        "duplicate argument name",
        "The same argument is given twice in one step; keep one.",
        {"twice": "the argument `{name}` is given twice in this step"},
        'search(query: "outages", limit: 5, limit: 10)',
    ),
    Code(
        "E106",
        "plan too large",
        "A plan (or, with `--extract`, the model reply it is taken from) larger than `plan_bytes` of "
        "`[limits]` in planc.toml, 64 MiB unless it says otherwise, is refused before it is parsed, so a "
        "runaway input is a clear error rather than minutes of work and memory. The size is counted in "
        "bytes of UTF-8; the error points at the text past the limit, and says how to raise it.",
        {
            "too_large": "the plan is {size}, over the limit of {limit}; raise `plan_bytes` under `[limits]` in "
            "planc.toml to check it"
        },
        'search(query: "outages in the last week", limit: 50)\n  |> summarize(style: "bullets")',
        registry="[limits]\nplan_bytes = 40\n",
    ),
    Code(
        "E200",
        "unknown tool",
        "The step calls a tool that is neither a control step nor declared in the registry "
        "(planc.toml, its MCP lock, its plans), or an agent's `check` names a tool the registry does not "
        "have. The hint names the closest tools.",
        {"unknown_tool": "unknown tool `{name}`", "unknown_check": "`check` names `{name}`, which is not a tool"},
        'serch(query: "outages", limit: 5)',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E201",
        "unknown argument for this tool",
        "The tool has no parameter of that name. The hint names the closest parameters, or all of them.",
        {"unknown_argument": "`{tool}` has no parameter `{name}`"},
        'search(query: "outages", limt: 5)',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E202",
        "missing required argument",
        "A parameter the tool requires is not given. A pipe parameter counts as given when the step receives a piped result.",
        {
            "missing_argument": "`{tool}` is missing the required argument {names}",
            "missing_arguments": "`{tool}` is missing the required arguments {names}",
            "needed_when": "`{tool}` needs `{needed}` when `{param}` is {value!r}",
        },
        'notify(channel: "#incidents")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E203",
        "forward or self reference",
        "A step reads the result of itself or of a step that comes after it. Steps can only read the results of earlier steps.",
        {
            "self": "`{written}` refers to the step it is used in",
            "later_step": "`{written}` refers to step {number}, which comes after this step",
            "later_label": "`{written}` refers to the step labelled `{label}`, which comes after this step",
        },
        'summarize(text: $2)\nsearch(query: "outages")',
    ),
    Code(
        "E204",
        "reference out of range or unknown label",
        "`$0`, a step number past the last step, or a label no step has. A label defined inside "
        "a block is visible only inside that block.",
        {
            "no_step": "`{written}` refers to no step: the plan's steps are numbered 1 to {count}",
            "hidden_label": "`{written}` is not visible here: the step labelled `{label}` ({path}) is inside a block",
            "unknown_label": "`{written}` refers to no step: there is no label `{label}`",
        },
        'hits = search(query: "outages")\nsummarize(text: $hit)',
    ),
    Code(
        "E205",
        "duplicate label",
        "Labels are unique in the whole plan, and `args` is reserved for `$args`.",
        {
            "args": "`args` cannot be a label: `$args` reads the run's arguments",
            "duplicate": "the label `{label}` is already used",
        },
        'hits = search(query: "outages")\nhits = search(query: "incidents")',
    ),
    Code(
        "E206",
        "bare word outside a condition or block",
        "A bare word is a field name only inside `filter(where: ...)`, and `item`, `index` and "
        "`accumulator` only inside blocks that bind them. Anywhere else it is most likely a "
        "string that lost its quotes; the fix adds them.",
        {"bare_word": "bare word `{text}`: a value here must be a string, number, reference or list"},
        'search(query: "outages") |> summarize(style: bullets)',
    ),
    Code(
        "E207",
        "`item`, `index` or `accumulator` outside a block that binds it",
        "`item` and `index` are bound inside the `do` block of `map`, `filter` and `reduce` (and "
        "in `filter`'s `where` and `infer`); `accumulator` only inside `reduce`'s `do` block.",
        {"unbound": "`{name}` is not bound here"},
        'search(query: "outages") |> summarize(text: item.title)',
    ),
    Code(
        "E208",
        "tool pattern matches nothing",
        "An `agent`'s `tools` list names tools by name or by `*` pattern (`linear__*`); each "
        "pattern must match at least one tool of the registry.",
        {"no_match": "the tool pattern `{pattern}` matches no tool"},
        'agent(prompt: "Triage the outages", output_schema: {type: "object"}, tools: ["search", "linear__*"])',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E209",
        "pipe into a step that cannot take it",
        "`a(...) |> b(...)` passes `a`'s result to `b`'s pipe parameter. It is an error when `b` "
        "declares no pipe parameter, or when the step also gives that parameter explicitly.",
        {
            "no_pipe": "`{tool}` takes no piped input: it has no pipe parameter",
            "piped_and_given": "`{param}` is given twice: by the pipe `|>` and here",
        },
        'search(query: "outages") |> notify(channel: "#incidents", text: "new outages")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E210",
        "plan cycle",
        "A plan declared under `[plans.NAME]` is the tool `plan__NAME`. A call that leads back to "
        "a plan already being run, directly or through other plans, would never end.",
        {"cycle": "calling `{name}` never ends: {cycle}"},
        "plan__loop()",
        registry=INCIDENT_TOOLS + '\n[plans.loop]\nfile = "docs/examples/loop.plan"\n',
    ),
    Code(
        "E211",
        "a declared plan this step calls cannot run",
        "A plan declared under `[plans.NAME]` is checked with every plan that calls it, as part of the "
        "call: when its file cannot be read, or has errors of its own (syntax, names, types), the "
        "calling step is refused before anything runs. The hints list the plan's errors at their place "
        "in its file. (What the policy says of the plan's steps is judged for each caller, under the "
        "caller's principal and loops: a denial there is an E400 at the calling step.)",
        {
            "unreadable": "`{name}` cannot run: {problem}",
            "errors": "`{name}` cannot run: {file} has {count} error{plural}",
        },
        "plan__broken()",
        registry=INCIDENT_TOOLS + '\n[plans.broken]\nfile = "docs/examples/broken.plan"\n',
    ),
    Code(
        "E212",
        "a conversation that cannot continue this way",
        "`agent(..., continue: $review)` sends its prompt into the conversation of the earlier agent step "
        "`$review`: its messages, tool calls and results, with the same model and system prompt. So "
        "`continue` takes a reference to an agent step (not a part of its result), a continuing step "
        "does not give `model` or `system_prompt`, and its `tools` may narrow the tools the "
        "conversation's first step offered but never add one. The turns of one conversation are taken "
        "in text order: from inside a `map` whose items run at the same time they would interleave, so "
        "a `map` whose body continues a conversation begun outside it needs `concurrency: 1` (one "
        "follow-up per item, in order).",
        {
            "not_agent": "`continue` takes a reference to an earlier agent step, like `$review`, found {found}",
            "kept": "`{param}` cannot change in a conversation: a continuing step keeps the first step's (step {first})",
            "widened": "`{pattern}` offers `{tool}`, which the conversation's first step (step {first}) does not offer",
            "concurrency": "this `map` runs {concurrency} items at once, and its body continues the conversation "
            "of step {first}: its turns would interleave",
        },
        'review = agent(prompt: "Review the outages", output_schema: {type: "object"}, tools: ["search"])\n'
        'agent(prompt: "Tell the team", output_schema: {type: "object"}, continue: $review, tools: ["notify"])',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E300",
        "argument value does not match the parameter's type",
        "A literal argument is validated against the JSON Schema of its parameter, and the message "
        "says in words what was expected and what was found; a string that differs from one of an "
        '`enum`\'s values only in case (`"Prose"`) gets a did-you-mean and a fix, as W503 does. A reference, a template or a piped '
        "result is checked by its static type: the `returns` schema of the step it reads and the "
        "path into it. A type planc does not know (a tool without `returns`, `$args`) passes. A pure "
        "step over a list is checked by the list's items too: `sum` and `average` work with numbers, "
        "`min`, `max` and `sort` with numbers or strings (each item's `field`, when it is given). "
        "Comparisons are checked too: `<`, `<=`, `>`, `>=` need two numbers or two strings, and "
        "`contains` a string or a list on its left.",
        {
            # `what` names the parameter: "`limit` of `search`"; `expected` and `found` are words.
            "wrong_value": "wrong value for {what}: expected {expected}, found {found}",
            "missing_key": "wrong value for {what}: the object has no key `{key}`, which is required",
            "unexpected_key": "wrong value for {what}: unexpected key `{key}`",
            "not_block": "{what} takes a block of steps `{{ ... }}`, found {found}",
            "piped": "`{tool}` takes `{param}` from the pipe: expected {expected}, found the result of the step before, {found}",
            "ordering": "`{op}` compares two numbers or two strings, found {left} and {right}",
            "contains": "`contains` needs a string or a list on its left, found {left}",
        },
        'search(query: "outages", limit: "ten")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E301",
        "unknown field in a reference path",
        "A reference, a template hole or a bare name in `filter(where: ...)` reads a field that the "
        "type it reads from does not have; the hint lists the fields that exist. An object schema "
        "that declares `properties` has only those fields unless it says `additionalProperties`. "
        "`.length` on a list or a string is its length; on an object it is the field `length`. A "
        "field read from a list or a string that is a slip for `length` (`lenght`, `size`, `len`) "
        "gets a did-you-mean and a fix.",
        {
            "no_field": "`{written}` has no field `{field}`",
            "no_field_in": "`{written}` is {what}: it has no field `{field}`",
            "no_items": "`{written}` is {what}: it has no items to index with `[{index}]`",
        },
        'search(query: "outages")\nnotify(channel: "#ops", text: "Top: {$1[0].titel}")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E302",
        "condition where a value is expected, or a value where a condition is",
        "Conditions (`==`, `<`, `contains`, `and`, `or`, `not`) are only allowed as `where` of "
        "`filter` and `when` of `decide` and `exit`. There, a single reference to a boolean "
        "(`when: $2.final`) is a condition too, but a string, a list or a number is not: compare "
        'it, or ask the judge model with `infer: "..."`.',
        {
            "not_condition": "expected a condition, found {found}",
            "condition_as_value": "{what} takes a value, not a condition",
        },
        'search(query: "outages")\ndecide(when: "there are many", then: { notify(channel: "#ops", text: "{$1.length} open") })',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "E303",
        "invalid control-step input",
        "A control step's input that cannot work: a one-of group given twice or not at all (both "
        "`where` and `do` on a `filter`, neither `when` nor `infer` on a `decide`), an agent's "
        "`output_schema` that is not a JSON Schema of an object, `max_iterations` below 1, "
        "a `check` that is not a tool's name or whose required parameters the output schema "
        "does not require (the check is called with the answer's fields), or `repairs` without a `check`.",
        {
            "none_of": "`{tool}` gives none of {options}: it takes exactly one",
            "more_than_one": "`{tool}` gives more than one of {options}: it takes exactly one",
            "at_most_one": "`{tool}` gives more than one of {options}: it takes at most one",
            "max_iterations": "`max_iterations` must be at least 1, found {found}",
            "schema_not_record": "`output_schema` must be a JSON Schema of an object, found {found}",
            "not_object_schema": '`output_schema` must be an object schema (`type: "object"`), found {found}',
            "invalid_schema": "`output_schema` is not a valid JSON Schema: {error}",
            "check_not_name": "`check` names a tool: it takes the tool's name as a string",
            "repairs_without_check": "`repairs` counts the repairs of a failed `check`, and this agent has no `check`",
            # The check is called with the answer's fields as its arguments.
            "check_needs": "the check `{tool}` needs `{param}`, which the output schema does not require",
        },
        'agent(prompt: "List the release risks", output_schema: {type: "array", items: {type: "string"}})',
    ),
    Code(
        "E400",
        "call denied by policy",
        'With a Cedar policy (`--policy FILE`, or `policy = "..."` in planc.toml), every step, '
        "steps inside blocks included, is put to it as a call before anything runs "
        "(docs/policy.md has the request). A step the policy denies is reported at its tool, "
        "naming the `forbid` policies that denied it by their `@id` (or their position in the "
        "file), with their `@reason`; or, when no `permit` policy matches, saying so. A policy that "
        "cannot be evaluated for the call (Cedar's type error: `context.args.amount > 1000` when the "
        "amount is a decimal) denies it, named with Cedar's error, and so does an argument Cedar cannot "
        "hold (more than four decimal places, an integer beyond 64 bits), named with the reason. Arguments "
        "only known at run time are named in `context.dynamic`; the interpreter asks the policy "
        "again with their values before the call, and stops the run with the same message. Each "
        "argument's labels (where its value came from: `untrusted` for what a tool without declared "
        "labels returned) are in `context.sources`, and the labels of the conditions that decide whether "
        "the call runs in `context.control`; a call denied for them is reported at the reference that "
        "carries the labels, naming the step and tool its value came from.",
        {
            "forbidden": "calling `{tool}` is forbidden by policy {names} (for {principal})",
            "forbidden_many": "calling `{tool}` is forbidden by policies {names} (for {principal})",
            "no_permit": "calling `{tool}` is not permitted (for {principal}): no policy of {policy} permits it",
            # The call could not be put to the policy; `problem` is Cedar's own words, or the value Cedar cannot hold.
            "unjudged": "calling `{tool}` is not permitted (for {principal}): {problem}",
            # A policy Cedar could not evaluate for the call denies it; `error` is Cedar's, `errors` each policy's.
            "unevaluated": "calling `{tool}` is denied (for {principal}): policy {names} could not be evaluated for it: {error}",
            "unevaluated_many": "calling `{tool}` is denied (for {principal}): policies {names} could not be "
            "evaluated for it: {errors}",
            # Denied for where a value came from (`context.sources`, `context.control`): at the reference.
            "flow": "calling `{tool}` with `{argument}` from {labels} data is forbidden by {names} (for {principal})",
            "control": "calling `{tool}` is forbidden by {names} (for {principal}): whether it runs is decided by {labels} data",
        },
        'search(query: "outages")\nnotify(channel: "#ops", text: "{$1.length} outages")',
        registry=INCIDENT_TOOLS,
        policy=NO_DESTRUCTIVE,
    ),
    Code(
        "E401",
        "over budget",
        "`--max-usd`, `--max-calls` and `--max-inferences` are budgets: a plan whose cost may exceed "
        "one of them is refused before anything runs. What counts is the most of the plan's cost "
        "range (docs/cost.md), and a cost with no upper bound (W500) exceeds every budget. The "
        "error points at the top-level step where the running total first passes the budget, and "
        "says how much that step and the steps before it may spend.",
        {
            # `amount` is a number of calls or inferences with its noun ("3 tool calls"), or dollars.
            "over_count": "over budget: the plan may make up to {amount}, and `{option}` is {limit:g}",
            "over_usd": "over budget: the plan may cost up to {amount}, and `{option}` is {limit:g}",
            "unbounded_count": "over budget: the plan's number of {noun}s has no upper bound, and `{option}` is {limit:g}",
            "unbounded_usd": "over budget: the plan's cost has no upper bound, and `{option}` is {limit:g}",
        },
        'map(over: ["#ops", "#db", "#web"], do: { notify(channel: item, text: "the deploy starts") })',
        registry=INCIDENT_TOOLS,
        budget={"max_calls": 2},
    ),
    Code(
        "W500",
        "unbounded fan-out",
        "A `map`, `filter` or `reduce` spends tool calls or model inferences on every item of a list "
        "whose length planc cannot bound, so the plan's cost has no upper bound and exceeds every "
        "budget. A list is bounded by a literal list's length, by `maxItems` in its type, or by the "
        "tool that made it when the tool declares `returns_at_most` (the parameter that caps its "
        "result's length, like `limit`) and that parameter has a literal value, a `maximum` or a "
        "`default`. A `filter` with `where` costs nothing per item and never warns, and neither does a list "
        "planc knows nothing of: the result of a tool it does not know (as without a registry) or a value "
        "of unknown type (docs/cost.md).",
        {
            "block": "unbounded fan-out: `{tool}` runs its block once per item of a list with no known length, "
            "so the plan's cost has no upper bound",
            "infer": "unbounded fan-out: `{tool}` asks the judge model once per item of a list with no known length, "
            "so the plan's cost has no upper bound",
        },
        'search(query: "outages") |> map(do: { notify(channel: "#ops", text: item.title) })',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "W501",
        "result of a step that changes nothing is never used",
        "A step that changes nothing only produces its result: a call of a tool declared read-only, a "
        "pure step, or a control step (`map`, `filter`, `decide`, ...) whose blocks change nothing and "
        "that cannot `exit`. When no reference, pipe or block passes that result on, and it is not the "
        "plan's (or its block's) result, the step does nothing.",
        {"unused": "the result of `{tool}` is never used"},
        'search(query: "outages")\nnotify(channel: "#ops", text: "search done")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "W502",
        "text that looks like another template language's hole",
        "`{{E0.x}}`, `${{ x }}`, `${x}` and `{E0.title}` are literal text in planc, which writes a "
        "hole as `{$1.field}`, `{$label.field}` or `{item.field}`. The fix is offered when the planc "
        "spelling is certain: the text inside is a planc reference or a binding (`{{$1.title}}`, "
        "`{ item.id }`), or starts with a label the string can read (`{{hits.title}}`). A lone word "
        "in single braces (`{name}`) is left alone, as a tool may do its own templating; `\\{` "
        "always writes a literal brace.",
        {
            "foreign_hole": "`{text}` looks like a hole from another template language; planc leaves it as literal text",
            "foreign_hole_filled": "`{text}` looks like a hole from another template language; planc fills the `{hole}` "
            "inside it and keeps the rest as literal text",
        },
        'search(query: "outages")\nnotify(channel: "#ops", text: "Top: {{$1[0].title}}")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "W503",
        "comparison with a value outside the `enum`",
        "`==` or `!=` compares a value whose type declares an `enum` with a literal that is not one "
        "of its values, so the comparison is always false (or always true). When the literal "
        "differs from one value only in case, the fix is that value.",
        {
            "never_equal": "{value} is not a value of `{typed}`, so this comparison is always false",
            "always_unequal": "{value} is not a value of `{typed}`, so this comparison is always true",
        },
        'search(query: "outages") |> filter(where: status == "closed")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "W504",
        "an ignore comment names an error",
        "`# planc: ignore[W501]` at the end of a line silences those warnings and notes on that line (a comment "
        "alone on its line speaks for the next line; with no list, every warning and note there). An error "
        "cannot be silenced: a plan with an error is refused whatever a comment says, so naming an error code "
        "in such a comment does nothing but this warning.",
        {"error_code": "`{name}` is an error, and an error cannot be ignored: the plan is refused while it has one"},
        'search(query: "outages", limt: 5)  # planc: ignore[E201]',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "W505",
        "a call that runs only if a person approves where its values came from",
        "With a person to ask (`planc run --approve`, or a program's gate), a call the policy refuses "
        "only for where its values came from (its labels in `context.sources` or `context.control`, "
        "E400 otherwise) is not refused before the run: when the run reaches it, the person is shown "
        "the call and its labels and decides, and the record keeps that a person let it through. "
        "Refused at the question, the run stops before the call. The warning points at the reference "
        "that carries the labels and names the step and tool the value came from.",
        {
            "flow": "calling `{tool}` with `{argument}` from {labels} data is forbidden by {names} (for "
            "{principal}): it runs only if a person approves it",
            "control": "calling `{tool}` is forbidden by {names} (for {principal}) as whether it runs is "
            "decided by {labels} data: it runs only if a person approves it",
        },
        'read_bill(path: "bill.txt")\npay(recipient: $1.iban, amount: 10)',
        registry=FLOW_TOOLS,
        policy=FLOW_POLICY,
        approvals=True,
    ),
    Code(
        "W506",
        "label on a pipeline's first step",
        "A label names one step. On the first step of a pipeline (`hits = search(...) |> map(...)`) it names "
        "that step's result, not the pipeline's. When nothing reads the label while a reference reads the "
        "pipeline's last step by its number, the label was meant for the last step; the fix moves it there "
        "(`search(...) |> hits = map(...)`).",
        {
            "head_label": "the label `{label}` names the first step of its pipeline, whose result nothing reads; "
            "step {last}, the pipeline's result, is read"
        },
        'hits = search(query: "outages") |> map(do: { reshape(value: item.title) })\nnotify(channel: "#ops", text: "{$2}")',
        registry=INCIDENT_TOOLS,
    ),
    Code(
        "W507",
        "field that no result had, by the shape learned of a tool",
        "A tool that declares no `returns` has no declared type, so reading a field of its result is not an "
        "error. But when the tool is trusted (`labels = []`), the run store learns the shape of its results from "
        "its successful calls (their types, field names and lengths, never their values; `planc registry "
        "shapes` lists them), and a reference that reads a field none of them had is most likely misspelt. It "
        "is a warning, never an error, as the next result may differ; the message says from how many calls "
        "the shape was learned. A declared `returns` always wins (E301); `planc registry shapes --write TOOL` "
        "declares the learned shape as the tool's `returns`.",
        {
            "no_field": "`{written}` has no field `{field}` in the shape learned from {calls} call{s} of `{tool}`",
            "no_field_in": "`{written}` is {what} in the shape learned from {calls} call{s} of `{tool}`: it has no "
            "field `{field}`",
            "no_items": "`{written}` is {what} in the shape learned from {calls} call{s} of `{tool}`: it has no "
            "items to index with `[{index}]`",
        },
        'lookup(id: "INC-1")\nnotify(channel: "#ops", text: "{$1.titel}")',
        registry=LEARNING_TOOLS,
        learned={
            "lookup": (
                {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "title": {"type": "string"}},
                    "required": ["id", "title"],
                },
                3,
            )
        },
    ),
    Code(
        "W508",
        "a secret decides which steps run",
        "A value labelled `secret` is never written anywhere planc writes (the run store, events, traces, "
        "stderr, `show-run`): each is replaced by its mark, its length and a keyed hash. But which steps "
        "ran, and how the run ended, is recorded too, so a condition that reads a secret (a `decide`'s "
        "or an `exit`'s `when` or `infer`, or what decides how often a block runs) writes something "
        "about it: whether it held. So does a step that may fail on a secret it is given (a tool call, "
        "a declared plan, a pure step, an `agent` or an `infer`): whether it failed decides whether the "
        "steps after it run, and the run's status and message. An `exit`'s message and an `ask`'s "
        "question fail on nothing: they are written as marks. The warning points at the reference "
        "that carries the secret. Compare the secret where planc does not record the outcome (inside "
        "a tool), or accept that the record tells which branch ran.",
        {
            "decides": "`{written}` is secret, and it decides whether {what} runs: which steps ran is recorded",
            "exits": "`{written}` is secret, and it decides whether the run ends at the `exit` at step "
            "{path}: how the run ended is recorded",
            "fails": "`{written}` is secret, and {what} may fail on it, which decides whether the steps "
            "after it run and how the run ends: both are recorded",
        },
        'vault()\ndecide(when: $1.pin == "1234", then: { notify(channel: "#ops", text: "unlocked") })',
        registry=SECRET_TOOLS,
    ),
    Code(
        "N600",
        "repeated call reused",
        "`planc optimize` (and `planc run --optimize`) removed a call that repeats an earlier one, and what "
        "read its result (references to it, and the step it piped into) reads the earlier call's. Legal "
        "because the tool is declared read-only and deterministic (`effects = { read_only = true, "
        "deterministic = true }`), the two calls have the same arguments (references to the same steps, the "
        "same piped input), and no step between them changes anything. Only top-level steps are compared, "
        "never control steps or declared plans (docs/optimize.md).",
        {"reused": "step {repeated} repeats the call of step {kept}: it is removed, and step {kept}'s result is used instead"},
        'first = search(query: "disk full")\nagain = search(query: "disk full")\n'
        'notify(channel: "#ops", text: "{$first.length} and {$again.length}")',
        registry=OPTIMIZER_TOOLS,
        optimize=True,
    ),
    Code(
        "N601",
        "steps run at the same time",
        "Under the optimizer's schedule (`planc run --optimize`) these top-level steps start together. Legal "
        "because none of them reads another's result (by a reference or a pipe, in its arguments or its "
        "blocks' steps) and none of them changes anything or may exit: every tool they call is declared "
        "read-only. A step that changes something or may exit keeps its place: it starts after every step "
        "before it has finished, and every step after it waits for it (docs/optimize.md).",
        {"together": "steps {steps} run at the same time"},
        'disk = search(query: "disk full")\nmemory = search(query: "out of memory")\n'
        'notify(channel: "#ops", text: "{$disk.length} disk and {$memory.length} memory incidents")',
        registry=OPTIMIZER_TOOLS,
        optimize=True,
    ),
    Code(
        "N602",
        "no rewrite: no effects metadata",
        "A rewrite the optimizer would make is stopped only by a tool with no effects metadata, which planc "
        "takes as possibly changing anything and giving a different result every time: a repeated call runs "
        "again, and steps that read nothing of each other still run one after the other. The note names the "
        "tools and the metadata that would allow the rewrite (`read_only = true` to move a step, and "
        "`deterministic = true` too to reuse a result). Declare it only when it is true: planc relies on it. "
        "A tool whose effects are all the conservative defaults counts as having no metadata.",
        {
            # `names` are the tools without metadata, and `have` agrees with them ("has" or "have").
            "not_reused": "step {repeated} repeats the call of step {kept}, and both calls run: {names} {have} no effects "
            "metadata",
            "not_together": "steps {steps} read nothing of each other and could run at the same time, but {names} {have} "
            "no effects metadata, so step {held} keeps its place in text order",
            "not_together_many": "steps {steps} read nothing of each other and could run at the same time, but {names} "
            "{have} no effects metadata, so steps {held} keep their place in text order",
        },
        'lookup(id: "INC-1")\nlookup(id: "INC-2")',
        registry=OPTIMIZER_TOOLS,
        optimize=True,
    ),
]

CODES: dict[str, Code] = {code.code: code for code in _ALL}
