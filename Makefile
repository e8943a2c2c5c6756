# Ferry's interface: people and CI run the same targets.
#   make demo   set everything up, then replicate sample tables on the local runtime
#   make test   set everything up, then run the whole suite (unit, integration, e2e)

SHELL := /bin/bash
# The CDK's jsii runtime prints a banner on every start about Node 20's support window.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP_VERSION := 26.3
# The stamp changes whenever the pinned dependencies do, so `make` reinstalls exactly then.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)

.PHONY: setup java demo test test-fast lint bench synth down clean

setup: $(STAMP) java

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "ferry: Python 3.11 is required ($(PYTHON) not found; set PYTHON=...)"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "ferry: Python 3.11 is required, $(PYTHON) is $$($(PYTHON) --version)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check pip==$(PIP_VERSION)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

java: $(STAMP)
	@$(BIN)/python -c 'import sys; from ferry.local.metastore import java_problem; \
	  problem = java_problem(); sys.exit(problem and "ferry: " + problem)'

demo: setup
	$(BIN)/ferry demo

test: setup
	$(BIN)/pytest

# Only the tests that need no metastore, emulator or Spark.
test-fast: setup
	$(BIN)/pytest tests/unit -m "not spark"

lint: setup
	$(BIN)/ruff check ferry infra lambdas emr_jobs bench tests

# Copy throughput of each copier against cp -r / aws s3 cp; planning a million files
# against a bare listing; the diff against one call per partition: ratios in one run.
bench: setup
	$(BIN)/python bench/copy_throughput.py
	$(BIN)/python bench/plan_scale.py
	$(BIN)/python bench/diff_scale.py

# The CloudFormation template of each environment, into cdk.out/ (no AWS account needed).
synth: setup
	$(BIN)/python -m infra.app

down:
	@test -x $(BIN)/ferry && $(BIN)/ferry local down || true

clean: down
	rm -rf $(VENV) .ferry .pytest_cache .ruff_cache *.egg-info
