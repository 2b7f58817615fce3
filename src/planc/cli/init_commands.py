"""`planc init`: a working starting point in an empty folder."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planc.cli.usage import UsageError

TOOLS = '''"""The project's tools: Python functions planc calls. `@planc.tool` declares each one from its type hints."""

import planc

NOTES: list[str] = []  # where `add_note` writes; a real tool would write to a database or an API


@planc.tool(read_only=True, deterministic=True)
def search_notes(query: str, limit: int = 10) -> list[str]:
    """The notes that contain `query`, at most `limit`."""
    return [note for note in NOTES if query.lower() in note.lower()][:limit]


@planc.tool(idempotent=False, destructive=False, open_world=False)
def add_note(text: str) -> dict:
    """Add a note; its number and text."""
    NOTES.append(text)
    return {"number": len(NOTES), "text": text}
'''

CONFIG = """# The tools a plan may call, the policy every call is judged by, and the limits of a run.
# docs: planc's docs/registry.md (tools), docs/policy.md (the policy).
policy = "policy.cedar"

[tools.search_notes]
provider = "python:tools:search_notes"  # module:function, imported from this folder

[tools.add_note]
provider = "python:tools:add_note"
"""

POLICY = """// Every call a plan makes is put to these policies, before the plan runs and again before each call.
@id("no-destructive-calls")
@reason("a tool that may destroy data needs a person's approval")
forbid(principal, action == Action::"call", resource) when { resource.destructive };

permit(principal, action == Action::"call", resource);
"""

PLAN = """# Add a note, then find it again.
add_note(text: "planc is set up")
found = search_notes(query: "planc")
reshape(value: {count: $found.length, notes: $found})
"""

FILES = {"planc.toml": CONFIG, "tools.py": TOOLS, "policy.cedar": POLICY, "hello.plan": PLAN}


@click.command("init")
@click.argument("folder", default=".", type=click.Path(file_okay=False))
def init_command(folder: str) -> None:
    """Write a working starting point into FOLDER (default: here): planc.toml with two Python tools declared
    by @planc.tool, a Cedar policy, and a plan that checks and runs. Refuses to overwrite anything."""
    target = Path(folder)
    existing = [name for name in FILES if (target / name).exists()]
    if existing:
        raise UsageError(
            f"{', '.join(str(target / name) for name in existing)} already "
            f"exist{'s' if len(existing) == 1 else ''}: planc init writes only into a folder without them"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in FILES.items():
            with open(target / name, "x", encoding="utf-8") as file:  # "x": never over a file made meanwhile
                file.write(text)
    except OSError as error:
        raise UsageError(f"{target}: {error.strerror or error}") from None
    for name in FILES:
        click.echo(f"wrote {target / name}", err=True)
    where = "" if folder == "." else f"cd {folder} && "
    click.echo(f"next: {where}planc check hello.plan && planc run hello.plan", err=True)
    sys.exit(0)
