# densim: two commands on a fresh clone.
#   make demo   # creates .venv, installs densim (its own dependencies only), compiles its kernels, runs the built-in demo
#   make test   # adds the optional extras, the test tools and Chromium, checks the layers (lint), runs the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# two install steps (scripts/bootstrap.sh), each with its stamp: `make demo` needs only the first
STAMP      := $(VENV)/.densim-installed
TEST_STAMP := $(VENV)/.densim-test-tools
PYTEST_ARGS ?=

.PHONY: setup-test lint golden demo test bench bench-placement bench-io bench-plan bench-outofcore bench-peers bench-peers-own bench-peers-opendc bench-lifetimes bench-failures bench-serve bench-distributed docs docs-validation clean setup browser

setup: $(STAMP)

setup-test: $(TEST_STAMP)

# densim and its dependencies, then the numba kernels compiled into their cache (densim warmup)
$(STAMP): pyproject.toml
	@bash scripts/bootstrap.sh "$(PYTHON)" "$(VENV)" core
	@touch $(STAMP)

# the optional extras (ortools, dask) and the test tools (pytest, playwright, ruff, import-linter)
$(TEST_STAMP): $(STAMP) pyproject.toml
	@bash scripts/bootstrap.sh "$(PYTHON)" "$(VENV)" test
	@touch $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/densim demo --out out/demo

browser: $(TEST_STAMP)
	@bash scripts/install-browser.sh

# Layers (import-linter contracts in pyproject.toml) and ruff; `make test` runs it first.
lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports --no-cache

test: $(TEST_STAMP) browser lint
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

# Rewrite the golden snapshots (tests/golden/snapshots) and print what moved; name cases with
# `make golden CASES="study-mail-server run-planetlab"`. Say in the commit which figures moved and why.
golden: $(TEST_STAMP)
	$(BIN)/python -m tests.golden.update $(CASES)

bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/ladder.py
	$(BIN)/python benchmarks/ladder.py --rungs 100000 --section 'memory={"model": "vsphere-like"}'
	$(BIN)/python benchmarks/ladder.py --rungs 100000 --section 'memory={"model": "vsphere-like"}' --overcommit 1.5
	$(BIN)/python benchmarks/ladder.py --rungs 100000 --section 'memory={"model": "vsphere-like"}' --overcommit 3

bench-placement: $(TEST_STAMP)
	$(BIN)/python benchmarks/placement_bench.py

bench-io: $(TEST_STAMP)
	$(BIN)/python benchmarks/io_bench.py

bench-plan: $(TEST_STAMP)
	$(BIN)/python benchmarks/plan_bench.py

bench-outofcore: $(TEST_STAMP)
	$(BIN)/python benchmarks/outofcore.py

bench-lifetimes: $(TEST_STAMP)
	$(BIN)/python benchmarks/lifetimes_bench.py

bench-failures: $(TEST_STAMP)
	$(BIN)/python benchmarks/failures_bench.py

bench-serve: $(TEST_STAMP) browser
	$(BIN)/python benchmarks/serve_bench.py

bench-distributed: $(TEST_STAMP)
	$(BIN)/python benchmarks/distributed_bench.py

bench-peers: $(TEST_STAMP)
	$(MAKE) -C benchmarks/peers run PYTHON=$(abspath $(BIN)/python)

# CloudSim Plus's own benchmarks (its PR #341 and docs/performance.md scenarios), CloudSim Plus built from source;
# PEER_SCALE=0.1 runs a tenth of the published size
bench-peers-own: $(TEST_STAMP)
	$(MAKE) -C benchmarks/peers own PYTHON=$(abspath $(BIN)/python) SCALE=$(or $(PEER_SCALE),1.0)

# OpenDC's CI benchmark workload (surf_week) and 1K_tasks, OpenDC built from source with Maven (JDK >= 21);
# OPENDC_WARM=0 runs the cold processes only
bench-peers-opendc: $(TEST_STAMP)
	$(MAKE) -C benchmarks/peers opendc PYTHON=$(abspath $(BIN)/python) WARM=$(or $(OPENDC_WARM),5)

docs: $(TEST_STAMP)
	$(BIN)/python -m densim.tools.docgen docs/reference

# the validation table and the every-headline table of study-roles.md (runs every study, about a minute)
docs-validation: $(TEST_STAMP)
	$(BIN)/python -m densim.tools.studies.validation --docs docs/background/validation.md \
		--roles-docs docs/background/study-roles.md

clean:
	rm -rf $(VENV) out .pytest_cache
