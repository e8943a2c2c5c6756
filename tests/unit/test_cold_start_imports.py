"""What a cold start does not import: the heavy packages stay out of the code paths that do
not use them (``bench/lambda_init.py`` and ``bench/fixed_cost.py`` measure what they cost).

Each check runs in a fresh interpreter, as a Lambda function's init or a ``ferry`` command
starts, and looks at ``sys.modules`` after the import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ferry.statemachine import ALL_FUNCTIONS

PAYLOAD_GROUPS = (
    "replication_payloads",
    "housekeeping_payloads",
    "feed_payloads",
    "check_payloads",
    "failover_payloads",
)

ROOT = Path(__file__).resolve().parents[2]


def imported_after(code: str) -> set[str]:
    """The top-level packages and modules in ``sys.modules`` after ``code`` runs in a fresh
    interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("module", "left_out"),
    [
        # Every function validates its payloads: the plan's model (pyiceberg, sqlglot) is read
        # only by the states that read a plan.
        ("ferry.statemachine", {"pyiceberg", "sqlglot"}),
        # The definitions import no payloads: a run or a function imports its own group's
        # (``ferry.statemachine.payloads_of``).
        ("ferry.statemachine", {f"ferry.statemachine.{group}" for group in PAYLOAD_GROUPS}),
        ("ferry.planning.runs", {"pyiceberg", "sqlglot"}),
        ("ferry.lifecycle.notify", {"pyiceberg", "sqlglot"}),
        # The plan's model names an Iceberg run's values (ferry.iceberg.iceberg_run), not
        # pyiceberg; Plan imports the Iceberg planner for an Iceberg table, the view SQL
        # rewriter's parser for a view with table-mappings.
        ("ferry.planning.replication_plan", {"pyiceberg", "sqlglot"}),
        ("ferry.planning.plan_document", {"pyiceberg", "sqlglot"}),
        ("ferry.planning.table_plan", {"pyiceberg", "sqlglot"}),
        ("ferry.planning.views", {"sqlglot"}),
        ("ferry.states.plan", {"pyiceberg", "sqlglot"}),
        # Commit, Abort, Summarize, Housekeeping and failback write or read Iceberg metadata
        # for an Iceberg table only.
        ("ferry.states.commit", {"pyiceberg", "sqlglot"}),
        ("ferry.lifecycle.aborting", {"pyiceberg", "sqlglot"}),
        ("ferry.lifecycle.retired_snapshots", {"pyiceberg", "sqlglot"}),
        ("ferry.failover.config_failback", {"pyiceberg", "sqlglot"}),
        # The S3 copy batch of a Hive table rewrites no Iceberg manifest.
        ("ferry.lifecycle.copy_work", {"pyiceberg"}),
        # A config without a partition filter renders no template; one without a role
        # imports none of botocore's credentials.
        ("ferry.config", {"jinja2", "botocore"}),
        # A run prints through rich when it prints for people (not with --json).
        ("ferry.commands.replicate", {"rich"}),
        # AWS clients make their session, and import boto3, when a client or the region is
        # first asked for.
        ("ferry.storage.aws", {"boto3", "botocore"}),
        ("ferry.states.context", {"boto3", "botocore.session"}),
        # A state context opens a catalog's adapter for a catalog of its kind, and measures
        # freshness (the periodic check) only when asked.
        ("ferry.states.context", {"ferry.catalog.glue", "ferry.freshness"}),
    ],
)
def test_a_module_leaves_out_what_its_callers_may_not_need(module, left_out):
    assert not left_out & imported_after(f"import {module}")


def test_a_config_without_a_partition_filter_loads_without_jinja2(tmp_path):
    config = tmp_path / "replication.yml"
    config.write_text(
        "source-catalog: {name: onprem, hive-metastore-uris: thrift://metastore:9083}\n"
        "replica-catalog: {name: dr, hive-metastore-uris: thrift://dr:9083}\n"
        "table-replications:\n"
        "  - source-table: {database-name: sales, table-name: orders}\n"
        "    replica-table: {database-name: sales_dr, table-location: file:///tmp/dr/orders}\n"
    )
    loaded = imported_after(f"from ferry.config import load_config\nload_config({str(config)!r})")
    assert "jinja2" not in loaded
    filtered = tmp_path / "filtered.yml"
    filtered.write_text(
        config.read_text().replace(
            "table-name: orders}",
            "table-name: orders, partition-filter: \"dt >= '{{ days_ago(2) }}'\"}",
        )
    )
    assert "jinja2" in imported_after(
        f"from ferry.config import load_config\nload_config({str(filtered)!r})"
    )


#: Every function of the state machines: none imports pyiceberg or sqlglot at its init (the
#: states that read a plan import them for an Iceberg table or a view's SQL when they meet one).
ALL_FUNCTION_MODULES = tuple(
    handler.rsplit(".", 1)[0] for handler in sorted(ALL_FUNCTIONS.values())
)


@pytest.mark.parametrize("module", ALL_FUNCTION_MODULES)
def test_a_function_starts_without_pyiceberg_and_sqlglot(module):
    # Every state context opens the replica's state (ferry.lifecycle.replica_state); a run's
    # records, which name the plan's model, are apart (ferry.lifecycle.snapshot_records);
    # the plan's model holds an Iceberg run as plain values (ferry.iceberg.iceberg_run).
    assert not {"pyiceberg", "sqlglot"} & imported_after(f"import {module}")


def test_the_functions_checked_are_the_deployed_ones():
    assert len(ALL_FUNCTION_MODULES) == len(ALL_FUNCTIONS) >= 18
    assert all(module.startswith("lambdas.") for module in ALL_FUNCTION_MODULES)


def test_the_in_process_driver_imports_only_the_replication_payloads():
    loaded = imported_after("import ferry.commands.in_process")
    assert "ferry.statemachine.replication_payloads" in loaded
    assert not {f"ferry.statemachine.{group}" for group in PAYLOAD_GROUPS[1:]} & loaded


HIVE_ONLY = (
    "source-catalog: {name: onprem, hive-metastore-uris: thrift://metastore:9083}\n"
    "replica-catalog: {name: dr, hive-metastore-uris: thrift://dr:9083}\n"
    "table-replications:\n"
    "  - source-table: {database-name: sales, table-name: orders}\n"
    "    replica-table: {database-name: sales_dr, table-location: file:///tmp/dr/orders}\n"
)

#: What a run does with the AWS clients before its first state: the regions checked, the
#: replica's key in the locks and its description for consumers.
CHECKED = """
import os
from pathlib import Path
os.environ["AWS_DEFAULT_REGION"] = "eu-west-1"
from ferry.commands import check_regions
from ferry.config import load_config
from ferry.states.context import StateContext
from ferry.storage.aws import AwsClients
config = load_config(Path({path!r}))
aws = AwsClients()
check_regions(config, Path({path!r}), aws)
context = StateContext("file:///nowhere", aws)
print(context.replica_key(config, config.table_replications[0]))
print(context.describe(config.replica_catalog))
"""


def test_a_config_of_hive_metastores_alone_makes_no_aws_session(tmp_path):
    config = tmp_path / "replication.yml"
    config.write_text(HIVE_ONLY)
    assert not {"boto3", "botocore.session"} & imported_after(CHECKED.format(path=str(config)))
    glue = tmp_path / "glue.yml"
    glue.write_text(HIVE_ONLY.replace("hive-metastore-uris: thrift://dr:9083", "glue: {}"))
    # A Glue catalog without a region of its own takes the SDK's default: the session's.
    assert "botocore.session" in imported_after(CHECKED.format(path=str(glue)))


#: A command whose config is refused (exit 2) after its models were built; then whether
#: pydantic looked for plugins among the installed distributions.
REFUSED = """
from ferry.commands.cli import main
from pydantic.plugin import _loader
assert main(["replicate", {path!r}, "--home", {home!r}]) == 2
print("scanned" if _loader._plugins is not None else "not scanned")
"""


def test_a_command_does_not_look_for_pydantic_plugins(tmp_path):
    config = tmp_path / "replication.yml"
    config.write_text(HIVE_ONLY.replace("table-name: orders", "table-name: orders, colour: red"))
    code = REFUSED.format(path=str(config), home=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert "colour" in done.stderr  # refused, by the config's models
    assert done.stdout.strip() == "not scanned"
