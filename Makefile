# Ferry's interface: people and CI run the same targets.
#   make demo   set everything up, then replicate sample tables on the local runtime
#   make test   set everything up, then run the whole suite (unit, integration, e2e), and the
#               Spark copy job's tests once more on the PySpark of the EMR release it runs on

SHELL := /bin/bash
# The CDK's jsii runtime prints a banner on every start about Node 20's support window.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# The suite, the Lambda functions (python3.12) and the Spark job (emr-spark-8.0.0's Python 3.12)
# run on one Python: the first 3.12 found on the PATH or among pyenv's versions.
PYTHON_VERSION := 3.12
PYTHON ?= $(shell for p in python$(PYTHON_VERSION) $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$(PYTHON_VERSION).*/bin/python$(PYTHON_VERSION) /usr/bin/python$(PYTHON_VERSION); do \
  $$p -c 'import venv' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
PIP_VERSION := 26.3
# The stamp changes whenever the pinned dependencies do, so `make` reinstalls exactly then.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
# The Spark copy job runs on EMR Serverless, on the Spark of the release infra/bundling.py picks:
# a second virtualenv has that PySpark with the same pinned dependencies, for the job's tests.
EMR_SPARK_VERSION := $(shell sed -n 's/^EMR_SPARK_VERSION = "\(.*\)"$$/\1/p' infra/bundling.py)
EMR_VENV := .venv-emr
EMR_STAMP := $(EMR_VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)-pyspark-$(EMR_SPARK_VERSION)

# The local runtime's IAM policy simulator (Node.js), pinned by its package-lock.json.
SIMULATOR := ferry/local/iam
SIMULATOR_STAMP := $(SIMULATOR)/node_modules/.installed-$(shell cat $(SIMULATOR)/package-lock.json | sha1sum | cut -c1-12)

.PHONY: setup java demo test test-fast test-emr-spark lint bench synth down clean

setup: $(STAMP) java $(SIMULATOR_STAMP)

$(SIMULATOR_STAMP): $(SIMULATOR)/package.json $(SIMULATOR)/package-lock.json
	@command -v npm >/dev/null || { echo "ferry: Node.js with npm is required (the CDK and the local runtime's IAM simulator)"; exit 1; }
	cd $(SIMULATOR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(STAMP): pyproject.toml constraints.txt
	@test -n "$(PYTHON)" || { echo "ferry: Python $(PYTHON_VERSION) is required (not on the PATH nor among pyenv's versions; set PYTHON=...)"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' || { echo "ferry: Python $(PYTHON_VERSION) is required, $(PYTHON) is $$($(PYTHON) --version)"; exit 1; }
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check pip==$(PIP_VERSION)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# Everything but PySpark exactly as in .venv; PySpark as on EMR (Spark 4.0 runs on Java 17+,
# which the java target checks).
$(EMR_STAMP): $(STAMP)
	@test -n "$(EMR_SPARK_VERSION)" || { echo "ferry: no EMR_SPARK_VERSION in infra/bundling.py"; exit 1; }
	@$(EMR_VENV)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null || { rm -rf $(EMR_VENV) && $(PYTHON) -m venv $(EMR_VENV); }
	$(EMR_VENV)/bin/python -m pip install --quiet --disable-pip-version-check pip==$(PIP_VERSION)
	@grep -v '^pyspark==' constraints.txt > $(EMR_VENV)/constraints.txt
	$(EMR_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  -c $(EMR_VENV)/constraints.txt -e . pyspark==$(EMR_SPARK_VERSION) pytest pytest-timeout
	@rm -f $(EMR_VENV)/.installed-*
	@touch $@

java: $(STAMP)
	@$(BIN)/python -c 'import sys; from ferry.local.metastore import java_problem; \
	  problem = java_problem(); sys.exit(problem and "ferry: " + problem)'

demo: setup
	$(BIN)/ferry demo

test: setup
	$(BIN)/pytest
	@$(MAKE) --no-print-directory test-emr-spark

# The Spark copy job's tests on the PySpark of the EMR release (the main suite runs them on ours).
test-emr-spark: $(EMR_STAMP) java
	@$(EMR_VENV)/bin/python -c 'import sys, pyspark; v = pyspark.__version__; \
	  sys.exit(f"ferry: $(EMR_VENV) has PySpark {v}, not $(EMR_SPARK_VERSION)") \
	  if v != "$(EMR_SPARK_VERSION)" else print(f"ferry: the Spark copy job on PySpark {v}")'
	$(EMR_VENV)/bin/pytest tests/unit/test_copy_files_job.py

# Only the tests that need no metastore, emulator or Spark.
test-fast: setup
	$(BIN)/pytest tests/unit -m "not spark"

# Ruff, then the import contracts of pyproject.toml's [tool.importlinter]: no import cycle in
# ferry/ (function-local imports count), and the S3 stack's layers point down only.
lint: setup
	$(BIN)/ruff check ferry infra lambdas emr_jobs bench tests
	$(BIN)/lint-imports --no-cache

# Copy throughput of each copier against the best of cp -r, the AWS CLI, s5cmd and rclone
# (where installed), with requests per object counted at the emulator; trigger to replica
# visible through the local state machine; planning a million files against a bare
# listing; the diff against one call per partition; an Iceberg table of many snapshots
# against copying its files alone; ferry status of 1,000 tables against reading both
# catalogs' tables; a no-op run of one table against reading both catalogs for it, and each
# Lambda function's init time against importing boto3: ratios in one run.
bench: setup
	$(BIN)/python bench/copy_throughput.py
	$(BIN)/python bench/trigger_latency.py
	$(BIN)/python bench/catalog_lag.py
	$(BIN)/python bench/plan_scale.py
	$(BIN)/python bench/diff_scale.py
	$(BIN)/python bench/iceberg_scale.py
	$(BIN)/python bench/priority_lag.py
	$(BIN)/python bench/failover_scale.py
	$(BIN)/python bench/status_scale.py
	$(BIN)/python bench/fixed_cost.py
	$(BIN)/python bench/lambda_init.py
	$(BIN)/python bench/partition_scale.py
	$(BIN)/python bench/command_copy.py
	$(BIN)/python bench/iceberg_command.py

# The CloudFormation template of each environment, into cdk.out/ (no AWS account, no Docker):
# the Lambda bundle and the Spark job's environment are built from platform wheels on the way,
# once per change of dependencies or code (cached in .bundles/).
synth: setup
	$(BIN)/python -m infra.app

down:
	@test -x $(BIN)/ferry && $(BIN)/ferry local down || true

clean: down
	rm -rf $(VENV) $(EMR_VENV) .bundles .ferry .pytest_cache .ruff_cache *.egg-info $(SIMULATOR)/node_modules
