"""The `agent` step's loop and `infer`'s question, whatever dispatches the tools.

An agent either returns output conforming to its `output_schema` with
`final: true`, or `{}` with `final: false` when its budget ran out; it never
fabricates. Each round is one inference, and `max_iterations` bounds them:

- tool calls go to `call_tool`, in order; a `ToolFailure` it raises goes back
  to the model as an error result, and so does a call of a tool the agent was
  not given or with arguments that are not a JSON object. The calls are at
  most as many as the rounds, as the cost pass counts them. The last round
  offers no tools: no round would be left to read their results.
- an answer that is not a JSON object costs a round: the model is told why.
- an answer that does not conform to the schema goes once to the `repair`
  role, which corrects it outside the conversation (no round is used); when
  that fails too, the validation errors go back to the agent, which costs a
  round.
- with a `check`, a conforming answer is checked; the problems of a failed
  check go back into the conversation as a repair turn, which adds a round,
  up to `repairs` times; then the step fails with the last problems.

The conversation is a list of messages the loop appends to: a new one starts
with the system message, and a step that continues an earlier agent's
conversation goes on appending to that one's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import attrs
from jsonschema.validators import validator_for

from planc.backend.models.client import Chat, ModelError, Reply, ToolCall, excerpt
from planc.registry.tools.tool import Tool
from planc.syntax.json_input import read_json

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SYSTEM_PROMPT = (
    "You are an agent inside a planc plan. Use the tools you are given when they help, "
    "and never invent what a tool did not tell you."
)
ANSWER_ONLY = "Answer with only the JSON object that conforms to the output schema, and nothing else."
LAST_ROUND = "This is your last round and no tools are left: answer now. " + ANSWER_ONLY
YES_NO_PROMPT = "Answer the question with one word: yes or no."
REPAIR_PROMPT = (
    "You correct JSON so that it conforms to a JSON Schema, changing as little as you can. "
    "Answer with only the corrected JSON object."
)
FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S)

CallTool = Callable[[str, dict, str], Awaitable[object]]  # (name, arguments, the model's id of the call)
Check = Callable[[dict], Awaitable[list[str]]]  # the problems of an answer; none: it passes


class ToolFailure(Exception):
    """What `call_tool` raises for a failed call the model should be told about; other exceptions stop the agent."""


class CheckFailed(Exception):
    """The check still failed after every repair; the message lists its last problems."""


@attrs.define
class Conversation:
    """An agent's conversation: its model role, the tools its first step offered, and every message so far."""

    role: str
    tools: list[Tool]
    messages: list[dict]
    labels: frozenset[str] = frozenset()  # what it has been shown, as labels (passes/flow): all it may repeat


@attrs.frozen
class Turn:
    """What one agent step asks of its conversation."""

    prompt: str
    output_schema: dict
    tools: Sequence[Tool] = ()
    context: object = None
    max_iterations: int = 8
    check: Check | None = None
    check_name: str = ""
    repairs: int = 0


def system_message(system_prompt: str | None) -> dict:
    """The message a new conversation starts with: the built-in prompt, and the step's `system_prompt` after it.

    >>> system_message("You triage incidents.")["content"].endswith("did not tell you.\\n\\nYou triage incidents.")
    True
    """
    return {"role": "system", "content": SYSTEM_PROMPT + (f"\n\n{system_prompt}" if system_prompt else "")}


async def run_agent(client: Chat, turn: Turn, call_tool: CallTool, messages: list[dict], repairer: Chat | None = None) -> dict:
    """Run one agent turn in the conversation `messages` (appended to) to its answer or the end of its
    budget: `{output, iterations, tools_called, final}`. `repairer` is the `repair` role's model."""
    validator = validator_for(turn.output_schema)(turn.output_schema)
    offered = {tool.name: tool for tool in turn.tools}
    messages.append({"role": "user", "content": task(turn.prompt, turn.context, turn.output_schema)})
    called: list[dict] = []
    budget, rounds, repairs, fixed = turn.max_iterations, 0, 0, repairer is None
    while rounds < budget:
        rounds += 1
        last = rounds == budget
        if last and messages[-1]["role"] == "tool":
            messages.append({"role": "user", "content": LAST_ROUND})
        reply = await client.chat(messages, tools=None if last else turn.tools)
        messages.append(reply.message())
        if reply.tool_calls:
            if last:
                break
            for call in reply.tool_calls:
                messages.append(await _tool_result(call, offered, call_tool, called, rounds, budget))
            continue
        answer, problem = parse_answer(reply)
        errors = _errors(validator, answer) if answer is not None else []  # parse_answer: an answer or a problem
        if errors and not fixed and repairer is not None and answer is not None:  # not fixed: there is a repairer
            fixed = True
            repaired = await _fix(repairer, answer, errors, turn.output_schema, validator)
            if repaired is not None:  # the conversation goes on with the answer that was taken
                answer, errors = repaired, []
                messages[-1] = {"role": "assistant", "content": json.dumps(repaired, ensure_ascii=False)}
        if errors:
            problem = "Your answer does not conform to the output schema:\n- " + "\n- ".join(errors) + "\nCorrect it"
        if problem is not None:
            messages.append({"role": "user", "content": f"{problem}. {ANSWER_ONLY}"})
            continue
        assert answer is not None  # there was no problem
        problems = await turn.check(answer) if turn.check is not None else []
        if not problems:
            return {"output": answer, "iterations": rounds, "tools_called": called, "final": True}
        if repairs == turn.repairs:
            raise CheckFailed(f"the check `{turn.check_name}` still fails after {_repairs(repairs)}: " + "; ".join(problems))
        repairs += 1
        budget += 1  # a repair turn is a round of its own
        messages.append({"role": "user", "content": repair_message(turn.check_name, problems)})
    return {"output": {}, "iterations": rounds, "tools_called": called, "final": False}


def repair_message(check: str, problems: Sequence[str]) -> str:
    """The repair turn after a failed check: its problems, and what to do.

    >>> print(repair_message("validate", ["no owner"]))
    The check `validate` found problems with your answer:
    - no owner
    Correct them. Answer with only the JSON object that conforms to the output schema, and nothing else.
    """
    return f"The check `{check}` found problems with your answer:\n- " + "\n- ".join(problems) + f"\nCorrect them. {ANSWER_ONLY}"


def check_problems(result: object) -> list[str]:
    """The problems a check's result reports: `{ok: false, problems: [...]}` fails, anything else passes.

    >>> check_problems({"ok": False, "problems": ["no owner", {"field": "x"}]}), check_problems({"ok": True})
    (['no owner', '{"field": "x"}'], [])
    >>> check_problems({"ok": False})
    ['the check answered `ok: false` and named no problem']
    """
    if not isinstance(result, dict) or result.get("ok") is not False:
        return []
    problems = result.get("problems")
    listed = problems if isinstance(problems, list) else [problems] if problems else []
    return [problem if isinstance(problem, str) else json.dumps(problem, ensure_ascii=False) for problem in listed] or [
        "the check answered `ok: false` and named no problem"
    ]


def _repairs(count: int) -> str:
    return "no repair" if count == 0 else "1 repair" if count == 1 else f"{count} repairs"


def _errors(validator: Validator, answer: dict) -> list[str]:
    return sorted(f"at {error.json_path}: {error.message}" for error in validator.iter_errors(answer))


async def _fix(repairer: Chat, answer: dict, errors: list[str], schema: dict, validator: Validator) -> dict | None:
    """The `repair` role's correction of `answer`, outside the conversation; None when it does not conform either."""
    reply = await repairer.chat(
        [
            {"role": "system", "content": REPAIR_PROMPT},
            {
                "role": "user",
                "content": (
                    f"The JSON Schema:\n{json.dumps(schema, ensure_ascii=False)}\n\n"
                    f"The JSON:\n{json.dumps(answer, ensure_ascii=False)}\n\n"
                    "What does not conform:\n- " + "\n- ".join(errors)
                ),
            },
        ]
    )
    repaired, problem = parse_answer(reply)
    return repaired if repaired is not None and not _errors(validator, repaired) else None


def task(prompt: str, context: object, output_schema: dict) -> str:
    """An agent turn's user message: the prompt, the context, and the form of the answer."""
    parts = [prompt]
    if context is not None:
        parts.append("Context (JSON):\n" + json.dumps(context, ensure_ascii=False))
    parts.append(
        "When you are done, answer with only a JSON object that conforms to this JSON Schema:\n"
        + json.dumps(output_schema, ensure_ascii=False)
    )
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
        answer = read_json(fenced.group(1) if fenced else text)
    except ValueError as error:
        return None, f"Your answer is not JSON ({error}): {excerpt(text)}"
    if not isinstance(answer, dict):
        return None, f"Your answer is JSON but not an object: {excerpt(text)}"
    return answer, None


async def _tool_result(
    call: ToolCall, offered: dict[str, Tool], call_tool: CallTool, called: list[dict], round_: int, limit: int
) -> dict:
    """The tool message answering `call` (made in round `round_`): the tool's result, or an error the model
    can act on."""
    if call.name not in offered:
        tools = f"the tools are {', '.join(sorted(offered))}" if offered else "this agent has no tools"
        result: object = {"error": f"there is no tool `{call.name}`; {tools}"}
    elif call.error is not None:
        result = {"error": f"`{call.name}` was not called: {call.error}"}
    elif len(called) >= limit:
        result = {"error": f"`{call.name}` was not called: this agent may make {limit} tool calls and made them all"}
    else:
        called.append({"tool": call.name, "round": round_})
        try:
            result = await call_tool(call.name, call.arguments, call.id)
        except ToolFailure as failure:
            result = {"error": f"`{call.name}` failed: {failure}"}
    return {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, ensure_ascii=False)}


async def ask_yes_no(client: Chat, question: str) -> bool:
    """`infer`: put a yes/no question to the model; an answer other than yes or no is a ModelError naming it."""
    reply = await client.chat([{"role": "system", "content": YES_NO_PROMPT}, {"role": "user", "content": question}])
    word = (reply.content or "").strip().rstrip(".").lower()
    if word not in ("yes", "no"):
        raise ModelError(
            f"the model answered {excerpt(reply.content or '')!r} to the yes/no question "
            f"{excerpt(question)!r}: only yes or no is an answer"
        )
    return word == "yes"
