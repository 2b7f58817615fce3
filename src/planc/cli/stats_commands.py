"""`planc stats`: what the recorded runs say together, as text or JSON; `--sql` for any other question."""

from __future__ import annotations

import json
import re
import sys
import time

import click

from planc.cli.options import STORE_OPTION
from planc.cli.usage import UsageError

SINCE = re.compile(r"^(\d+)([mhd])$")
UNITS = {"m": 60, "h": 3600, "d": 86400}


def since_seconds(text: str, now: float) -> float:
    """`--since`: a time ago (`30m`, `12h`, `7d`) or a date (`2026-12-01`, `2026-12-01T09:30`), as seconds
    since the epoch; a UsageError otherwise.

    >>> since_seconds("2h", 10_000.0)
    2800.0
    """
    ago = SINCE.match(text)
    if ago:
        return now - int(ago.group(1)) * UNITS[ago.group(2)]
    for form in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
        try:
            return time.mktime(time.strptime(text, form))
        except ValueError:
            continue
    raise UsageError(f"--since {text}: say how long ago (`30m`, `12h`, `7d`) or from when (`2026-12-01`, `2026-12-01T09:30`)")


@click.command("stats")
@STORE_OPTION
@click.option(
    "--since", help="Only the runs started since then: `7d`, `12h`, `30m` ago, or a date (`2026-12-01`, `2026-12-01T09:30`)."
)
@click.option("--tool", help="Only this tool's steps and calls, and the runs whose plans call it.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--sql",
    "sql",
    metavar="QUERY",
    help="Run one read-only query over the store's tables and views (docs/store.md) and print its rows.",
)
def stats_command(store: str | None, since: str | None, tool: str | None, output_format: str, sql: str | None) -> None:
    """What the recorded runs say together: the tools each step position calls, failures and refusals by tool
    and by diagnostic code, the check's estimates against what the steps did, the codes `planc plan`
    repaired, and how long runs took. Reading only: nothing in the store changes."""
    from planc.cli.runs import open_store
    from planc.store.stats import SqlError, query_store, stats

    if sql is not None and (since or tool):
        raise UsageError("--sql is a whole query: say what --since and --tool would say in its WHERE")
    runs = open_store(store, read_only=True)  # an older store is brought up to date first, as `planc runs` does
    path = runs.path
    runs.close()
    try:
        if sql is not None:
            rows = query_store(path, sql)
        else:
            found = stats(path, since_seconds(since, time.time()) if since else None, tool)
    except SqlError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    if sql is not None:
        _print_rows(rows, output_format)
    elif output_format == "json":
        click.echo(json.dumps(found))
    else:
        click.echo(render_stats(found), nl=False)


def _print_rows(rows: list[dict], output_format: str) -> None:
    if output_format == "json":
        click.echo(json.dumps(rows))
        return
    if rows:
        click.echo("\t".join(rows[0]))
    for row in rows:
        click.echo("\t".join("" if value is None else str(value) for value in row.values()))


def _range(bounds: list) -> str:
    low, high = bounds
    if low is None:
        return "-"
    high = "unbounded" if high is None else high
    return f"{low}" if low == high else f"{low}-{high}"


def render_stats(found: dict) -> str:
    """`planc stats`'s text: one section per question, the same numbers as its JSON."""
    runs = found["runs"]
    lines = [
        f"runs: {runs['count']} (" + ", ".join(f"{n} {status}" for status, n in runs["by_status"].items()) + ")",
        "  duration ms: " + ", ".join(f"{name} {value if value is not None else '-'}" for name, value in runs["ms"].items()),
        "",
        "tools by step position (top-level steps):",
    ]
    for position, tools in found["positions"].items():
        lines.append(f"  step {position}: " + ", ".join(f"{name} {n}" for name, n in tools.items()))
    failures = found["failures"]
    lines += ["", "failures and refusals:"]
    for name, outcomes in failures["calls_by_tool"].items():
        lines.append(f"  calls of {name}: " + ", ".join(f"{n} {outcome}" for outcome, n in outcomes.items()))
    for name, n in failures["runs_by_tool"].items():
        lines.append(f"  runs failed at a step of {name}: {n}")
    for code, n in failures["runs_by_code"].items():
        lines.append(f"  runs refused with {code}: {n}")
    lines += ["", "estimated against actual, per tool (top-level steps):"]
    for name, cost in found["costs"].items():
        lines.append(
            f"  {name}: {cost['steps']} steps; calls {_range(cost['calls']['estimated'])} estimated, "
            f"{cost['calls']['made']} made; usd {_range(cost['usd']['estimated'])} estimated, "
            f"{cost['usd']['spent']} spent; ms {_range(cost['ms']['estimated'])} estimated per step, "
            f"p50 {cost['ms']['p50']}, p90 {cost['ms']['p90']}"
        )
    lines += ["", "planc plan: rounds by error code:"]
    for code, rounds in found["repairs"].items():
        lines.append(
            f"  {code}: in {rounds['rounds']} rounds, {rounds['repaired']} sent back, {rounds['fixed']} fixed by the next answer"
        )
    return "\n".join(lines) + "\n"
