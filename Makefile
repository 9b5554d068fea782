# densim: two commands on a fresh clone.
#   make demo   # creates .venv, installs densim, runs the built-in demo, prints the report path
#   make test   # creates .venv, installs test tools and Chromium, checks the layers (lint), runs the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.densim-installed
PYTEST_ARGS ?=

.PHONY: lint golden demo test bench bench-placement bench-io bench-plan bench-outofcore bench-peers bench-lifetimes bench-failures bench-serve bench-distributed docs clean setup browser

setup: $(STAMP)

$(STAMP): pyproject.toml
	@bash scripts/bootstrap.sh "$(PYTHON)" "$(VENV)"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/densim demo --out out/demo

browser: $(STAMP)
	@bash scripts/install-browser.sh

# Layers (import-linter contracts in pyproject.toml) and ruff; `make test` runs it first.
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports --no-cache

test: $(STAMP) browser lint
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

# Rewrite the golden snapshots (tests/golden/snapshots) and print what moved; name cases with
# `make golden CASES="study-mail-server run-planetlab"`. Say in the commit which figures moved and why.
golden: $(STAMP)
	$(BIN)/python -m tests.golden.update $(CASES)

bench: $(STAMP)
	$(BIN)/python benchmarks/ladder.py
	$(BIN)/python benchmarks/ladder.py --rungs 100000 --section 'memory={"model": "vsphere-like"}'
	$(BIN)/python benchmarks/ladder.py --rungs 100000 --section 'memory={"model": "vsphere-like"}' --overcommit 1.5
	$(BIN)/python benchmarks/ladder.py --rungs 100000 --section 'memory={"model": "vsphere-like"}' --overcommit 3

bench-placement: $(STAMP)
	$(BIN)/python benchmarks/placement_bench.py

bench-io: $(STAMP)
	$(BIN)/python benchmarks/io_bench.py

bench-plan: $(STAMP)
	$(BIN)/python benchmarks/plan_bench.py

bench-outofcore: $(STAMP)
	$(BIN)/python benchmarks/outofcore.py

bench-lifetimes: $(STAMP)
	$(BIN)/python benchmarks/lifetimes_bench.py

bench-failures: $(STAMP)
	$(BIN)/python benchmarks/failures_bench.py

bench-serve: $(STAMP) browser
	$(BIN)/python benchmarks/serve_bench.py

bench-distributed: $(STAMP)
	$(BIN)/python benchmarks/distributed_bench.py

bench-peers: $(STAMP)
	$(MAKE) -C benchmarks/peers run PYTHON=$(abspath $(BIN)/python)

docs: $(STAMP)
	$(BIN)/python -m densim.tools.docgen docs/reference

clean:
	rm -rf $(VENV) out .pytest_cache
