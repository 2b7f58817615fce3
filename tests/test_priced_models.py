"""Priced model calls: `[models.ROLE]` prices per million tokens in and out; the check bounds each inference
by its prompt and `max_tokens`; a run with `--max-usd` stops before the inference that would pass it, from
the usage the model's replies reported; `planc show-run` and `planc runs` say what a run spent.

The model is a real HTTP server on loopback playing scripted replies, each with its token `usage`; the
agent's tool is a spy that appends each call to `spy.log`. Each test asserts the requests the model was
sent, the calls made, the exit code, the run's recorded status and that no traceback reached the user.
"""

from __future__ import annotations

import pytest
from cli import invoke
from model_server import model_server  # noqa: F401  (the fixture)
from test_attacks import calls, run, statuses  # the spy's lines, a run of p.plan, the recorded statuses
from tool_project import spied_project

import planc

TOOLS = """
import os

SPY = os.environ["PLANC_TEST_SPY"]


def append(text):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(f"append {text}\\n")
    return text
"""

TOML = """
[tools.append]
provider = "python:{module}:append"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
"""

# $10 per million tokens in, nothing out: an inference costs what its prompt does.
PRICES = "input_usd_per_million = 10\noutput_usd_per_million = 0\nmax_tokens = 50\n"
# The model reports 10,000 tokens in: $0.10 an inference.
USAGE = {"prompt_tokens": 10_000, "completion_tokens": 20, "total_tokens": 10_020}
LONG = "x" * 20_000  # a prompt only known at run time: the check cannot price it; each request's bound is ~$0.21


@pytest.fixture
def project(tmp_path, monkeypatch, model_server):
    model = f'\n[models.chat]\nbase_url = "{model_server.url}"\nmodel = "m"\n{PRICES}'
    with spied_project(tmp_path, monkeypatch, "pricedtools", TOOLS, TOML + model) as folder:
        yield folder


AGENT = 'agent(prompt: $args.text, output_schema: {type: "object"}, tools: ["append"], max_iterations: 6)\n'


def script(model_server, rounds: int) -> None:
    for n in range(rounds):
        model_server.call("append", {"text": f"t{n}"}, id=f"call_{n}", usage=USAGE)
    model_server.reply("{}", usage=USAGE)


def test_the_run_stops_before_the_inference_that_would_pass_max_usd(project, model_server):
    """Spent after each reply: $0.10, $0.20, $0.30; the fourth request may cost up to ~$0.21 more, past $0.45."""
    script(model_server, 5)
    result = run(project, AGENT, "--arg", f"text={LONG}", "--max-usd", "0.45")
    assert result.exit_code == 1
    assert len(model_server.requests) == 3
    assert "step 1: the `chat` model was not asked: it would pass the budget: the run has spent $0.30" in result.output
    assert "and `--max-usd` is 0.45" in result.output
    assert calls(project) == ["append t0", "append t1", "append t2"] and statuses(project) == ["failed"]


def test_resuming_the_stopped_run_counts_what_it_spent_from_the_record_and_asks_nothing_more(project, model_server):
    """The resume answers the three inferences from the record, counting their recorded usage ($0.30): the
    fourth would still pass the budget, so the model is not asked again, and the spend is not counted twice."""
    script(model_server, 5)
    assert run(project, AGENT, "--arg", f"text={LONG}", "--max-usd", "0.45").exit_code == 1
    resumed = invoke("resume", "last")
    assert "Traceback" not in resumed.output
    assert resumed.exit_code == 1 and "the run has spent $0.30" in resumed.output
    assert len(model_server.requests) == 3
    assert calls(project) == ["append t0", "append t1", "append t2"] and statuses(project) == ["failed"]
    assert "spent: $0.30" in invoke("show-run", "last").output


def test_a_budget_the_run_stays_within_lets_every_inference_through_and_shows_the_spend(project, model_server):
    script(model_server, 2)
    result = run(project, AGENT, "--arg", f"text={LONG}", "--max-usd", "1")
    assert result.exit_code == 0, result.output
    assert len(model_server.requests) == 3
    assert calls(project) == ["append t0", "append t1"] and statuses(project) == ["ok"]
    shown = invoke("show-run", "last")
    assert shown.exit_code == 0 and "spent: $0.30" in shown.output
    listed = invoke("runs")
    assert listed.exit_code == 0 and listed.output.rstrip().endswith("$0.30")
    assert "<dt>spent</dt><dd>$0.30</dd>" in invoke("show-run", "last", "--format", "html").output


def test_a_reply_without_usage_is_charged_the_most_it_could_cost(project, model_server):
    """A server that reports no usage does not make the budget free: each inference costs its bound (~$0.21)."""
    for n in range(3):
        model_server.call("append", {"text": f"t{n}"}, id=f"call_{n}")
    model_server.reply("{}")
    result = run(project, AGENT, "--arg", f"text={LONG}", "--max-usd", "0.5")
    assert result.exit_code == 1 and "the `chat` model was not asked: it would pass the budget" in result.output
    assert len(model_server.requests) == 2
    assert calls(project) == ["append t0", "append t1"] and statuses(project) == ["failed"]


def test_the_check_bounds_each_inference_by_its_prompt_and_max_tokens(project):
    """6 rounds and the repair role's fix-up, each up to 5 bytes of prompt in and 50 tokens out."""
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().replace("output_usd_per_million = 0", "output_usd_per_million = 1000"), encoding="utf-8")
    project_ = planc.load_project(project)
    plan = 'agent(prompt: "hello", output_schema: {type: "object"}, tools: ["append"], max_iterations: 6)'
    checked = project_.check(plan)
    usd = checked.cost.total.usd
    assert usd.low == 0 and usd.high == pytest.approx(7 * (5 * 10 + 50 * 1000) / 1e6)
    over = project_.check(plan, max_usd=0.3)
    assert [d.code for d in over.diagnostics] == ["E401"]
    assert "the plan may cost up to $0.35035, and `--max-usd` is 0.3" in over.diagnostics[0].message


def test_a_priced_model_without_max_tokens_has_no_bound(project):
    toml = project / "planc.toml"
    toml.write_text(
        toml.read_text().replace("output_usd_per_million = 0\nmax_tokens = 50\n", "output_usd_per_million = 1\n"),
        encoding="utf-8",
    )
    checked = planc.load_project(project).check(AGENT.replace("$args.text", '"hi"'), max_usd=5)
    assert [d.code for d in checked.diagnostics] == ["E401"]
    assert "no upper bound" in checked.diagnostics[0].message


@pytest.mark.parametrize("price", ["-1", '"cheap"', "inf"])
def test_a_price_that_is_not_a_number_of_dollars_is_one_clean_message(project, price):
    toml = project / "planc.toml"
    toml.write_text(toml.read_text().replace("input_usd_per_million = 10", f"input_usd_per_million = {price}"), encoding="utf-8")
    result = run(project, AGENT, "--arg", "text=hi")
    assert result.exit_code == 2
    assert "`input_usd_per_million` of model `chat` must be a number of dollars" in result.output
    assert calls(project) == [] and statuses(project) == []
