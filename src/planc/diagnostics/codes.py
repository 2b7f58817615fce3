"""Every diagnostic code: its title, what it means, and an example that triggers it.

This table is the one place codes are described. `docs/diagnostics.md` is
generated from it (`make docs`), a test checks the file is current, and
another runs every example through `planc.check` to see it report its code.
Codes are stable and never reused.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Code:
    code: str
    title: str
    explanation: str
    example: str  # a plan (or a model reply, with `extract`) that reports this code
    extract: bool = False


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
]

CODES: dict[str, Code] = {code.code: code for code in _ALL}


def render_markdown() -> str:
    """The text of docs/diagnostics.md."""
    from rich.console import Console

    from planc.check import check
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
        "is checked by the test suite, and its output is what `planc check example.plan` prints for it.",
        "",
    ]
    for code in _ALL:
        result = check(code.example, extract_plan=code.extract)
        console = Console(width=200, no_color=True, force_terminal=False)
        with console.capture() as captured:
            for diagnostic in result.diagnostics:
                console.print(render_text(diagnostic, result.source, "example.plan"))
        out += [f"## {code.code}", "", f"**{code.title}**", "", code.explanation, "", "```",
                code.example.rstrip("\n"), "```", "", "```text", captured.get().rstrip("\n"), "```", ""]
    return "\n".join(out)
