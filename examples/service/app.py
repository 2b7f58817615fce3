"""A web service that runs the plans it is sent, a person approving every order before it is placed.

    POST /runs                {"plan": "...", "arguments": {...}}
        422: the plan does not check, or its arguments do not fit it (the problems, worded as a model that
             wrote it would be sent them);
        202: the run waits for a person: {"run", "status": "awaiting_approval", "waiting": [the calls]};
        200: the run ended: {"run", "status", "result"}, or {"status": "failed", "error"}.
    POST /runs/{run}/approve  {"deny": false, "call": null}
        the person's answer; the run continues from its record, here: 200, 202 (another call waits) or
        409 (nothing waits: the call was answered already, or the run does not wait).
    GET /runs/{run}           the run as the run store holds it: its status, what waits, its result.

Every run is recorded in the run store of this folder's planc.toml (.planc/runs.sqlite), so the answer
may come minutes later, to another worker process, or from `planc approve RUN` on the command line.
Run it with any ASGI server, `uvicorn app:app` for one (docs/service.md).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel

import planc
from planc.backend.state.values import RunError
from planc.store.run_store import RunStore, RunStoreError

project = planc.load_project(Path(__file__).resolve().parent)
app = FastAPI(title="planc service example")


class PlanRequest(BaseModel):
    plan: str
    arguments: dict = {}


class Answer(BaseModel):
    deny: bool = False
    call: int | None = None  # which call, when several wait (the items of a map)


@app.post("/runs")
async def start_run(request: PlanRequest):
    checked = project.check(request.plan)
    if not checked.ok:
        return JSONResponse(
            {"status": "refused", "problems": planc.render_repair(checked.source, checked.diagnostics)}, status_code=422
        )
    return await ended(project.run_async(checked, arguments=request.arguments, approve=True))


@app.post("/runs/{run_id}/approve")
async def answer_run(run_id: str, answer: Answer):
    return await ended(project.approve_async(run_id, deny=answer.deny, call=answer.call))


@app.get("/runs/{run_id}")
def show_run(run_id: str):
    try:
        store = RunStore(project.store, read_only=True)
        try:
            run = store.run(store.find(run_id))
            return {
                "run": run["id"],
                "status": run["status"],
                "result": run["output"],
                "waiting": waiting(store.awaiting(run["id"])),
            }
        finally:
            store.close()
    except RunStoreError as error:
        return JSONResponse({"error": str(error)}, status_code=404)


async def ended(running):
    """The response for a run (started, or continued after an answer) once it ends or waits."""
    try:
        result = await running
    except planc.AwaitingApproval as asked:
        return JSONResponse(
            {"run": asked.run_id, "status": "awaiting_approval", "waiting": waiting(asked.calls)}, status_code=202
        )
    except planc.ArgumentsRefused as error:  # arguments the plan does not take: nothing ran, nothing recorded
        return JSONResponse({"status": "refused", "problems": str(error)}, status_code=422)
    except planc.NotWaiting as error:  # answered already (perhaps by another request at the same moment)
        return JSONResponse({"error": str(error)}, status_code=409)
    except RunStoreError as error:  # no such run, or a store that cannot be used
        return JSONResponse({"error": str(error)}, status_code=404)
    except RunError as error:  # a denied order stops the run before it; a failed step, likewise
        return {"status": "failed", "error": str(error)}
    # `kept()`: the result as planc writes it anywhere, a value labelled `secret` as its mark.
    return {"run": result.run_id, "status": result.status, "result": result.kept()}


def waiting(calls: list[dict]) -> list[dict]:
    """The calls a run waits on, as a client sees them: which call, the step, the tool, its input, what it asks."""
    return [
        {"call": call["sequence"], "step": call["step"], "tool": call["tool"], "input": call["input"], "asks": call["asks"]}
        for call in calls
    ]
