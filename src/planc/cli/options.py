"""The options several commands share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])  # a command's function, which an option decorates

CONFIG_OPTION = click.option(
    "--config",
    type=click.Path(dir_okay=False),
    help="The planc.toml to use (default: the nearest one above the plan, else above the working directory).",
)
POLICY_OPTION = click.option(
    "--policy",
    "policy_file",
    type=click.Path(dir_okay=False),
    help="A Cedar policy file that judges every step (default: `policy` in planc.toml).",
)
PRINCIPAL_OPTION = click.option(
    "--principal", help='Who the plan runs for, as a Cedar entity (default: `principal` in planc.toml, else User::"anonymous").'
)
PRINCIPAL_JSON_OPTION = click.option(
    "--principal-json",
    metavar="JSON",
    help='Who the plan runs for, as a Cedar entity with the attributes and groups the policy reads: {"uid": '
    '{"type": "User", "id": "alice"}, "attrs": {"org": "acme"}, "parents": [{"type": "Group", "id": "staff"}]} '
    "(replaces planc.toml's principal of that uid; recorded with the run).",
)
ANSWERS_OPTION = click.option(
    "--answers",
    "answers_file",
    type=click.Path(dir_okay=False),
    help="Answer `ask` steps from FILE, a JSON object from a step path or question to "
    "its answer (on a terminal, what it does not answer is asked).",
)
STORE_OPTION = click.option(
    "--store",
    type=click.Path(dir_okay=False),
    envvar="PLANC_STORE",
    help="The run store (default: $PLANC_STORE, else planc.toml's `store`, else "
    ".planc/runs.sqlite beside the planc.toml, else in the working directory).",
)

EVENTS_OPTION = click.option(
    "--events",
    type=click.Path(dir_okay=False),
    help="Write the run's events to FILE as JSON lines, each with its time, run and number.",
)
OTEL_OPTION = click.option(
    "--otel",
    is_flag=True,
    help="Send the run as OpenTelemetry spans over OTLP/HTTP, where OTEL_EXPORTER_OTLP_ENDPOINT "
    "says (default http://localhost:4318); setting that variable does the same. Needs "
    "pip install 'planc[otel]'.",
)


def budget_options(command: F) -> F:
    """`--max-usd`, `--max-calls`, `--max-inferences`: a plan that may cost more is E401."""
    for name, kind, what in (
        ("--max-inferences", click.IntRange(min=0), "make more model inferences"),
        ("--max-calls", click.IntRange(min=0), "make more tool calls"),
        ("--max-usd", click.FloatRange(min=0), "cost more dollars"),
    ):
        command = click.option(name, type=kind, help=f"E401 when the plan may {what} than this.")(command)
    return command


def executor_options(command: F) -> F:
    """`--executor local|ray` and `--ray-address ADDR`: where the Python tool calls of loop items are made."""
    command = click.option(
        "--ray-address",
        metavar="ADDR",
        help="The Ray cluster to use (host:port, ray://host:port or auto; default: planc.toml's "
        "[executor] address, else $RAY_ADDRESS, else a local cluster of this machine).",
    )(command)
    return click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        help="Where the Python tool calls of map/filter/reduce items and of --optimize's parallel "
        "steps are made: this process, or Ray tasks (default: planc.toml's [executor], else "
        "local).",
    )(command)
