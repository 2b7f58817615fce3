"""The service example (examples/service/, docs/service.md): a FastAPI app that takes a plan from a request,
checks it, runs it, and waits for a person to approve each order; the answer comes in a second request,
from another process, or twice at once, and the order is placed once or never.

Each test drives the app with FastAPI's own TestClient, counts the orders the shop really placed (its
orders file), and reads the run's record from the run store.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli import HANG_GUARD_S, invoke, planc_executable

pytest.importorskip("fastapi", reason="the service example needs FastAPI: pip install 'planc[service]'")
from fastapi.testclient import TestClient  # noqa: E402

from planc.registry.provenance.redaction import MARK  # noqa: E402
from planc.store.run_store import RunStore  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "service"
PLAN = 'price(item: "toner")\norder(item: "toner", quantity: 2)\n'


@pytest.fixture
def service(tmp_path, monkeypatch):
    """A copy of the example (its run store and orders file in the copy) and its app, imported afresh."""
    yield from serving(tmp_path, monkeypatch)


# A shop tool whose result is a secret: a coupon's code, the same each time (declared deterministic, so
# a run approved later is continued with it).
COUPON = "QXZJVKQXZJVKQXZJVKQX"
COUPON_TOML = """
[tools.coupon]
provider = "python:shop:coupon"
params = {}
returns = { type = "object", properties = { code = { type = "string" } } }
effects = { read_only = true, deterministic = true, open_world = false }
labels = ["secret"]
"""
COUPON_TOOL = f"\n\ndef coupon() -> dict:\n    return {{'code': {COUPON!r}}}\n"


@pytest.fixture
def secret_service(tmp_path, monkeypatch):
    """The service, its shop also giving coupons: `coupon()` returns a secret code."""
    yield from serving(tmp_path, monkeypatch, COUPON_TOML, COUPON_TOOL)


def serving(tmp_path, monkeypatch, toml: str = "", tools: str = ""):
    """A copy of the example, `toml` added to its planc.toml and `tools` to its shop; its app."""
    folder = tmp_path / "service"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".planc", "orders.jsonl"))
    with open(folder / "planc.toml", "a", encoding="utf-8") as declared:
        declared.write(toml)
    with open(folder / "shop.py", "a", encoding="utf-8") as shop:
        shop.write(tools)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("SHOP_ORDERS", str(folder / "orders.jsonl"))
    monkeypatch.delenv("PLANC_STORE", raising=False)
    spec = importlib.util.spec_from_file_location(f"service_app_{tmp_path.name}", folder / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    yield folder, app.app
    sys.modules.pop("shop", None)  # the tools module, imported from this copy


def orders(folder: Path) -> list[dict]:
    placed = folder / "orders.jsonl"
    return [json.loads(line) for line in placed.read_text().splitlines()] if placed.exists() else []


def record(folder: Path, run_id: str) -> dict:
    store = RunStore(folder / ".planc" / "runs.sqlite", read_only=True)
    try:
        return store.run(run_id)
    finally:
        store.close()


def outcomes(folder: Path, run_id: str) -> list[tuple[str, str]]:
    return [(call["tool"], call["outcome"]) for call in record(folder, run_id)["calls"]]


def started(client: TestClient) -> str:
    """POST the plan: the run waits for the order's approval, which nothing has placed yet."""
    response = client.post("/runs", json={"plan": PLAN})
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["status"] == "awaiting_approval"
    assert body["waiting"] == [
        {"call": 2, "step": "2", "tool": "order", "input": {"item": "toner", "quantity": 2}, "asks": "`order` is effectful"}
    ]
    return body["run"]


def test_a_plan_is_checked_run_waits_and_a_second_request_approves_it(service):
    folder, app = service
    client = TestClient(app)
    run_id = started(client)
    assert orders(folder) == []
    shown = client.get(f"/runs/{run_id}").json()
    assert shown["status"] == "awaiting_approval" and [call["tool"] for call in shown["waiting"]] == ["order"]
    assert outcomes(folder, run_id) == [("price", "ok"), ("order", "awaiting_approval")]

    response = client.post(f"/runs/{run_id}/approve", json={})
    assert response.status_code == 200, response.text
    assert response.json() == {"run": run_id, "status": "ok", "result": {"order": 1, "item": "toner", "quantity": 2}}
    assert orders(folder) == [{"item": "toner", "quantity": 2}]
    assert client.get(f"/runs/{run_id}").json()["status"] == "ok"
    assert outcomes(folder, run_id) == [("price", "ok"), ("order", "ok")]

    again = client.post(f"/runs/{run_id}/approve", json={})  # answered: nothing waits, nothing is ordered
    assert again.status_code == 409 and again.json() == {"error": f"run {run_id} does not wait for approval: it finished (ok)"}
    assert len(orders(folder)) == 1
    unknown = client.post("/runs/no-such-run/approve", json={})
    assert unknown.status_code == 404 and unknown.json()["error"].endswith("no run `no-such-run`")


def test_a_plan_that_does_not_check_is_refused_with_its_problems_and_nothing_runs(service):
    folder, app = service
    response = TestClient(app).post("/runs", json={"plan": 'order(item: "toner", quantity: 2, colour: "red")'})
    assert response.status_code == 422 and "`order` has no parameter `colour`" in response.json()["problems"]
    assert orders(folder) == [] and not (folder / ".planc" / "runs.sqlite").exists()


def test_another_process_approves_and_the_run_goes_on_there(service):
    folder, app = service
    client = TestClient(app)
    run_id = started(client)
    approved = subprocess.run(
        [planc_executable(), "approve", run_id], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=folder
    )
    assert approved.returncode == 0 and "Traceback" not in approved.stderr, approved.stderr
    assert json.loads(approved.stdout) == {"order": 1, "item": "toner", "quantity": 2}
    assert orders(folder) == [{"item": "toner", "quantity": 2}]
    shown = client.get(f"/runs/{run_id}").json()
    assert shown == {"run": run_id, "status": "ok", "result": {"order": 1, "item": "toner", "quantity": 2}, "waiting": []}


def test_a_denied_order_is_never_placed_and_the_run_fails_before_it(service):
    folder, app = service
    client = TestClient(app)
    run_id = started(client)
    response = client.post(f"/runs/{run_id}/approve", json={"deny": True})
    assert response.status_code == 200
    assert response.json() == {
        "status": "failed",
        "error": "step 2: stopped before calling `order`: a person denied it (`planc approve --deny`)",
    }
    assert orders(folder) == []
    assert record(folder, run_id)["status"] == "failed"
    assert outcomes(folder, run_id) == [("price", "ok"), ("order", "not_approved")]

    late = invoke("approve", run_id)  # a yes after the no: one line, and still no order
    assert late.exit_code == 1 and "Traceback" not in late.output
    assert late.stderr == f"error: run {run_id} does not wait for approval: it failed\n"
    resumed = invoke("resume", run_id)  # nor does a resume place it
    assert resumed.exit_code == 1 and orders(folder) == []


def test_two_requests_approving_at_once_place_the_order_once(service):
    folder, app = service
    run_id = started(TestClient(app))
    both = threading.Barrier(2)
    answers = []

    def approve():
        client = TestClient(app)  # a client of its own, as two users' requests would be
        both.wait()
        answers.append(client.post(f"/runs/{run_id}/approve", json={}))

    threads = [threading.Thread(target=approve) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answer.status_code for answer in answers) == [200, 409]
    won = next(answer for answer in answers if answer.status_code == 200)
    lost = next(answer for answer in answers if answer.status_code == 409)
    assert won.json()["result"] == {"order": 1, "item": "toner", "quantity": 2}
    assert lost.json()["error"].startswith(f"run {run_id} does not wait for approval: it ")
    assert orders(folder) == [{"item": "toner", "quantity": 2}]
    assert outcomes(folder, run_id) == [("price", "ok"), ("order", "ok")]


def test_two_processes_approving_at_once_place_the_order_once(service):
    folder, app = service
    run_id = started(TestClient(app))
    processes = [
        subprocess.Popen(
            [planc_executable(), "approve", run_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=folder
        )
        for _ in range(2)
    ]
    ended = [(process.wait(timeout=HANG_GUARD_S), *process.communicate()) for process in processes]
    assert sorted(code for code, _, _ in ended) == [0, 1], ended
    [(_, out, _)] = [each for each in ended if each[0] == 0]
    [(_, _, err)] = [each for each in ended if each[0] == 1]
    assert json.loads(out)["order"] == 1
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith(f"error: run {run_id} ")
    assert orders(folder) == [{"item": "toner", "quantity": 2}]
    assert outcomes(folder, run_id) == [("price", "ok"), ("order", "ok")]


def test_a_secret_reaches_the_services_answers_as_its_mark_only(secret_service):
    """A result that is a secret, the input of a call that waits for approval, the run as GET shows
    it and the result of a call made with the secret hold the coupon code's mark, never the code;
    the order is placed with the code itself."""
    folder, app = secret_service
    client = TestClient(app)
    ended = client.post("/runs", json={"plan": "coupon()\n"})
    assert ended.status_code == 200 and MARK.fullmatch(ended.json()["result"]), ended.text
    waits = client.post("/runs", json={"plan": "coupon()\norder(item: $1.code, quantity: 1)\n"})
    assert waits.status_code == 202, waits.text
    [waiting] = waits.json()["waiting"]
    assert MARK.fullmatch(waiting["input"]["item"]) and waiting["input"]["quantity"] == 1
    run_id = waits.json()["run"]
    shown = client.get(f"/runs/{run_id}")
    approved = client.post(f"/runs/{run_id}/approve", json={})
    assert approved.status_code == 200 and approved.json()["status"] == "ok", approved.text
    said = [ended.text, waits.text, shown.text, approved.text]
    assert not any(COUPON[:6] in text for text in said), said
    assert all(MARK.search(text) for text in said), said
    assert orders(folder) == [{"item": COUPON, "quantity": 1}]
