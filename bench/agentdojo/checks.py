"""Which arguments an AgentDojo check reads: found by replaying a task's ground truth with one argument changed.

A user task's `utility` and an injection task's `security` are Python functions of the environment before and
after a run and of the calls made; what they look at is not declared anywhere. Replaying the calls that make a
check true (a task's ground truth) with one argument changed tells it: when the check turns false, it reads that
argument; when it stays true with text appended to a string, it reads the string loosely (free text: `in`, or
`startswith`), else exactly.

    reads = arguments_read(task_suite, user_task, calls, environment)   # [{"recipient": EXACT, ...}, ...]
"""

from __future__ import annotations

from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime

EXACT, LOOSE = "exact", "loose"
CHANGED = "planc-changed"  # a value no check of the suites expects
APPENDED = " (and more)"


def replay(task_suite, calls, environment):
    """The environment after making `calls` on a copy of `environment`, and the calls made (a failing call is
    made as an agent's would be: its error is its result)."""
    runtime = FunctionsRuntime(task_suite.tools)
    after = environment.model_copy(deep=True)
    made = []
    for call in calls:
        made.append(FunctionCall(function=call.function, args=dict(call.args)))
        runtime.run_function(after, call.function, dict(call.args), raise_on_error=False)
    return after, made


def holds(task_suite, task, calls, environment, output: str = "") -> bool:
    """Whether `task`'s check (utility or security) is true after `calls` on `environment`, the model having
    answered `output`."""
    from agentdojo.types import text_content_block_from_string

    after, made = replay(task_suite, calls, environment)
    return task_suite._check_task_result(task, [text_content_block_from_string(output)], environment, after, made)


def changed(value):
    """A value of the same kind as `value` that no check expects."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1000
    if isinstance(value, float):
        return value * 2 + 1000.5
    if isinstance(value, list):
        return [CHANGED]
    if isinstance(value, dict):
        return {}
    return CHANGED


def with_arguments(calls, index: int, values: dict):
    """`calls` with the arguments of the call at `index` that `values` names taking its values."""
    return [
        FunctionCall(function=call.function, args={**call.args, **values}) if i == index else call for i, call in enumerate(calls)
    ]


def arguments_read(task_suite, task, calls, environment, output: str = "") -> list[dict[str, str]] | None:
    """For each of `calls`, how `task`'s check reads each of its arguments (EXACT or LOOSE; an argument it does
    not read is left out). None when `calls` do not make the check true: then nothing can be learnt from them."""
    calls = list(calls)
    if not holds(task_suite, task, calls, environment, output):
        return None
    found = []
    for index, call in enumerate(calls):
        reads = {}
        for name, value in call.args.items():
            if holds(task_suite, task, with_arguments(calls, index, {name: changed(value)}), environment, output):
                continue
            appended = with_arguments(calls, index, {name: value + APPENDED}) if isinstance(value, str) else None
            loose = appended is not None and holds(task_suite, task, appended, environment, output)
            reads[name] = LOOSE if loose else EXACT
        found.append(reads)
    return found


def calls_needed(task_suite, task, calls, environment, output: str = "") -> list[bool]:
    """For each of `calls`, whether `task`'s check turns false without it."""
    calls = list(calls)
    return [not holds(task_suite, task, calls[:i] + calls[i + 1 :], environment, output) for i in range(len(calls))]
