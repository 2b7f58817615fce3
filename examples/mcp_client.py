"""An MCP client session with `planc mcp`, using the official MCP SDK's own client (docs/mcp.md).

It starts `planc mcp` over stdio in a project (examples/incidents by default), asks `describe` for
the language and the tools, sends a plan with a typo to `check_plan`, reads the repair, sends the
fixed plan to `run_plan`, and prints the result and the run's id, which `planc runs` then lists:

    python examples/mcp_client.py [PROJECT_FOLDER]
    planc runs  # in PROJECT_FOLDER

An agent does the same, with a model writing the plans: the repair message is written for one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TYPO = 'serch(query: "disk", limit: 5) |> summarize(style: "bullets")'  # `serch`: no such tool
FIXED = 'search(query: "disk", limit: 5) |> summarize(style: "bullets")'


def answer(result) -> dict:
    """A tool's answer: its structured content, else its text read as JSON."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def session(folder: Path, planc: list[str]) -> str:
    """The acceptance session against the project in `folder`; the run's id."""
    # The whole environment, not the SDK's minimal one: the project's tools may read theirs.
    server = StdioServerParameters(command=planc[0], args=[*planc[1:], "mcp"], cwd=str(folder), env=dict(os.environ))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        described = await client.call_tool("describe", {})
        print(f"describe: {len(described.content[0].text)} characters of language and tools")

        checked = answer(await client.call_tool("check_plan", {"plan": TYPO}))
        print(f"check_plan: ok={checked['ok']}")
        print(checked["repair"])

        ran = answer(await client.call_tool("run_plan", {"plan": FIXED}))
        print(f"run_plan: {ran['status']}, run {ran['run']}")
        print(json.dumps(ran["result"], indent=2))
        return ran["run"]


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("incidents")).resolve()
    beside = Path(sys.executable).with_name("planc")  # the planc of this Python's environment, else on PATH
    asyncio.run(session(folder, [str(beside) if beside.exists() else shutil.which("planc") or "planc"]))


if __name__ == "__main__":
    main()
