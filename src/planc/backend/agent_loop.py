"""The `agent` step's loop and `infer`'s question, whatever dispatches the tools.

An agent either returns output conforming to its `output_schema` with
`final: true`, or `{}` with `final: false` when its budget ran out; it never
fabricates. Each round is one inference, and `max_iterations` bounds them all:

- tool calls go to `call_tool`, in order; a `ToolFailure` it raises goes back
  to the model as an error result, and so does a call of a tool the agent was
  not given or with arguments that are not a JSON object. The calls are at
  most `max_iterations` in all, as the cost pass counts them. The last round
  offers no tools: no round would be left to read their results.
- an answer that is not a JSON object costs a round: the model is told why.
- an answer that does not conform to the schema gets one repair round with
  the validation errors; a second mismatch ends the agent (`final: false`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence

from jsonschema.validators import validator_for

from planc.backend.models import ModelClient, ModelError, Reply, ToolCall, excerpt
from planc.registry.tool import Tool

SYSTEM_PROMPT = ("You are an agent inside a planc plan. Use the tools you are given when they help, "
                 "and never invent what a tool did not tell you.")
ANSWER_ONLY = "Answer with only the JSON object that conforms to the output schema, and nothing else."
LAST_ROUND = "This is your last round and no tools are left: answer now. " + ANSWER_ONLY
YES_NO_PROMPT = "Answer the question with one word: yes or no."
FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S)

CallTool = Callable[[str, dict, str], Awaitable[object]]  # (name, arguments, the model's id of the call)


class ToolFailure(Exception):
    """What `call_tool` raises for a failed call the model should be told about; other exceptions stop the agent."""


async def run_agent(client: ModelClient, prompt: str, output_schema: dict, tools: Sequence[Tool], call_tool: CallTool,
                    context: object = None, max_iterations: int = 8, system_prompt: str | None = None) -> dict:
    """Run an agent to its answer or the end of its budget: `{output, iterations, tools_called, final}`."""
    validator = validator_for(output_schema)(output_schema)
    offered = {tool.name: tool for tool in tools}
    messages: list[dict] = [{"role": "system", "content": system_prompt or SYSTEM_PROMPT},
                            {"role": "user", "content": task(prompt, context, output_schema)}]
    called: list[str] = []
    repaired, iteration = False, 0
    for iteration in range(1, max_iterations + 1):
        last = iteration == max_iterations
        if last and iteration > 1:
            messages.append({"role": "user", "content": LAST_ROUND})
        reply = await client.chat(messages, tools=None if last else tools)
        messages.append(reply.message())
        if reply.tool_calls:
            if last:
                break
            for call in reply.tool_calls:
                messages.append(await _tool_result(call, offered, call_tool, called, max_iterations))
            continue
        answer, problem = parse_answer(reply)
        if problem is not None:
            messages.append({"role": "user", "content": f"{problem}. {ANSWER_ONLY}"})
            continue
        errors = [f"at {error.json_path}: {error.message}" for error in validator.iter_errors(answer)]
        if not errors:
            return {"output": answer, "iterations": iteration, "tools_called": called, "final": True}
        if repaired:
            break
        repaired = True
        messages.append({"role": "user", "content": "Your answer does not conform to the output schema:\n- "
                         + "\n- ".join(sorted(errors)) + f"\nCorrect it. {ANSWER_ONLY}"})
    return {"output": {}, "iterations": iteration, "tools_called": called, "final": False}


def task(prompt: str, context: object, output_schema: dict) -> str:
    """The agent's first user message: the prompt, the context, and the form of the answer."""
    parts = [prompt]
    if context is not None:
        parts.append("Context (JSON):\n" + json.dumps(context, ensure_ascii=False))
    parts.append("When you are done, answer with only a JSON object that conforms to this JSON Schema:\n"
                 + json.dumps(output_schema, ensure_ascii=False))
    return "\n\n".join(parts)


def parse_answer(reply: Reply) -> tuple[dict | None, str | None]:
    """The JSON object a final answer holds (inside a code fence or not), or why it holds none.

    >>> parse_answer(Reply('```json\\n{"ok": true}\\n```'))
    ({'ok': True}, None)
    >>> parse_answer(Reply("It is high."))[1]
    'Your answer is not JSON (Expecting value: line 1 column 1 (char 0)): It is high.'
    """
    text = (reply.content or "").strip()
    if not text:
        return None, "Your answer was empty"
    fenced = FENCED.fullmatch(text)
    try:
        answer = json.loads(fenced.group(1) if fenced else text)
    except ValueError as error:
        return None, f"Your answer is not JSON ({error}): {excerpt(text)}"
    if not isinstance(answer, dict):
        return None, f"Your answer is JSON but not an object: {excerpt(text)}"
    return answer, None


async def _tool_result(call: ToolCall, offered: dict[str, Tool], call_tool: CallTool, called: list[str],
                       limit: int) -> dict:
    """The tool message answering `call`: the tool's result, or an error the model can act on."""
    if call.name not in offered:
        result: object = {"error": f"there is no tool `{call.name}`; the tools are {', '.join(sorted(offered))}"}
    elif call.error is not None:
        result = {"error": f"`{call.name}` was not called: {call.error}"}
    elif len(called) >= limit:
        result = {"error": f"`{call.name}` was not called: this agent may make {limit} tool calls and made them all"}
    else:
        called.append(call.name)
        try:
            result = await call_tool(call.name, call.arguments, call.id)
        except ToolFailure as failure:
            result = {"error": f"`{call.name}` failed: {failure}"}
    return {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, ensure_ascii=False)}


async def ask_yes_no(client: ModelClient, question: str) -> bool:
    """`infer`: put a yes/no question to the model; an answer other than yes or no is a ModelError naming it."""
    reply = await client.chat([{"role": "system", "content": YES_NO_PROMPT}, {"role": "user", "content": question}])
    word = (reply.content or "").strip().rstrip(".").lower()
    if word not in ("yes", "no"):
        raise ModelError(f"the model answered {excerpt(reply.content or '')!r} to the yes/no question "
                         f"{excerpt(question)!r}: only yes or no is an answer")
    return word == "yes"
