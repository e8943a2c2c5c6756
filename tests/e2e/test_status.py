"""``ferry status`` as a person (or a script) runs it: one line per table, worst first, the
exit code scripts alert on, ``--json``, and one clear line for a mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ferry.core.model import Partition, StorageDescriptor
from ferry.local.samples import ORDER_COLUMNS, PARQUET, order_rows, write_parquet
from ferry.storage import fs
from tests.helpers import catalog_state, config_document

pytestmark = pytest.mark.e2e


def ferry(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def orders(local_runtime, sample, tmp_path, write_config):
    """A config replicating the sample's orders and customers, RPO one second."""

    def entry(name: str) -> dict:
        return {
            "source-table": {"database-name": sample.database, "table-name": name},
            "replica-table": {
                "database-name": f"{sample.database}_dr",
                "table-location": (tmp_path / "replica" / name).as_uri(),
            },
        }

    document = config_document(local_runtime, [entry("orders"), entry("customers")], rpo="PT1S")
    return write_config(document), tmp_path / "home"


def add_partition(catalog, sample, day: str) -> None:
    location = fs.join(sample.orders.location, f"dt={day}")
    write_parquet(location, "part-00000.parquet", order_rows(day))
    catalog.add_partitions(
        sample.orders,
        [Partition((day,), StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET))],
    )


def test_status_says_in_sync_then_behind_over_the_rpo_then_failing(orders, sample, source_catalog):
    config, home = orders
    done = ferry("replicate", str(config), "--home", str(home))
    assert done.returncode == 0, done.stderr

    status = ferry("status", str(config), "--home", str(home))
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert len(lines) == 3
    for line in lines[:2]:
        assert " in sync " in line and "(RPO 1s)" in line
        assert "replica holds source version hive:" in line and "last success 20" in line
    assert lines[2] == "2 tables: 2 in sync"

    time.sleep(1.1)  # the metastore keeps whole seconds
    add_partition(source_catalog, sample, "2030-01-01")
    time.sleep(2.5)  # older than the RPO
    status = ferry("status", str(config), "--home", str(home))
    assert status.returncode == 3, status.stdout + status.stderr
    first, second, summary = status.stdout.splitlines()
    assert first.startswith(f"{sample.database}.orders → {sample.database}_dr.orders  behind by ")
    assert "(RPO 1s: OVER)" in first
    assert " in sync " in second  # worst first
    assert summary == "2 tables: 1 over RPO, 1 behind, 1 in sync"

    as_json = ferry(
        "status", str(config), "--home", str(home), "--json", "--table", f"{sample.database}.orders"
    )
    assert as_json.returncode == 3
    [table] = json.loads(as_json.stdout)
    assert table["state"] == "behind" and table["overRpo"] is True
    assert table["behindSeconds"] >= 2 and table["rpoSeconds"] == 1
    assert table["changesLacking"] == 1 and table["priority"] == "normal"
    assert table["sourceVersion"] != table["replicaVersion"]
    assert set(table) >= {"sourceTable", "replicaTable", "lastSuccess", "failingSince", "lastError"}

    failed = ferry(
        "replicate", str(config), "--home", str(home), "--table", f"{sample.database}.orders",
        env={"FERRY_FAULTS": json.dumps([{"point": "plan.planned", "error": "CatalogError"}])},
    )  # fmt: skip
    assert failed.returncode == 1
    status = ferry("status", str(config), "--home", str(home))
    assert status.returncode == 3
    first = status.stdout.splitlines()[0]
    assert " failing since 20" in first
    assert "CatalogError: injected failure at plan.planned" in first
    assert "(RPO 1s: OVER)" in first and "last success 20" in first


def test_status_of_a_config_never_replicated_is_one_line_and_changes_nothing(
    orders, sample, source_catalog, replica_catalog, tmp_path, local_runtime, write_config
):
    config, home = orders

    never = ferry("status", str(config), "--home", str(home))
    assert never.returncode == 2
    [line] = never.stderr.splitlines()
    assert line.startswith("ferry: error: ") and "never replicated with --home" in line
    assert not home.exists(), "nothing is created"

    # A state store that exists, for a config none of whose tables was ever replicated.
    other = write_config(
        config_document(
            local_runtime,
            [{"source-table": {"database-name": sample.database, "table-name": "customers"},
              "replica-table": {"database-name": f"{sample.database}_elsewhere",
                                "table-location": (tmp_path / "elsewhere").as_uri()}}],
        ),
        "other.yml",
    )  # fmt: skip
    assert (
        ferry(
            "replicate", str(config), "--home", str(home), "--table", f"{sample.database}.customers"
        ).returncode
        == 0
    )
    state = (home / "state.sqlite3").read_bytes()
    before = catalog_state(replica_catalog, f"{sample.database}_dr", ["orders", "customers"])
    never = ferry("status", str(other), "--home", str(home))
    assert never.returncode == 2
    [line] = never.stderr.splitlines()
    assert "no table of it was ever replicated" in line
    assert (home / "state.sqlite3").read_bytes() == state

    missing = ferry("status", str(tmp_path / "nope.yml"), "--home", str(home))
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1
    assert "nope.yml" in missing.stderr

    unreachable = write_config(
        config_document(
            local_runtime,
            [{"source-table": {"database-name": sample.database, "table-name": "orders"},
              "replica-table": {"database-name": f"{sample.database}_dr",
                                "table-location": (tmp_path / "replica" / "orders").as_uri()}}],
            replica={"name": "dr", "hive-metastore-uris": "thrift://127.0.0.1:1"},
        ),
        "unreachable.yml",
    )  # fmt: skip
    down = ferry("status", str(unreachable), "--home", str(home))
    assert down.returncode == 1
    [line] = down.stderr.splitlines()
    assert line.startswith("ferry: error: cannot reach Hive metastore 'dr'")
    assert (home / "state.sqlite3").read_bytes() == state
    assert (
        catalog_state(replica_catalog, f"{sample.database}_dr", ["orders", "customers"]) == before
    )


def test_status_of_an_environment_that_does_not_deploy_the_config_is_one_line(orders):
    config, home = orders
    done = ferry("status", str(config), "--environment", "dev")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "not deployed in environment dev" in line
    unknown = ferry("status", str(config), "--environment", "nowhere")
    assert unknown.returncode == 2
    assert "no settings for environment 'nowhere'" in unknown.stderr
    # A config the environment deploys, in an account (the emulator's) with no such stack.
    deployed = Path(__file__).resolve().parents[2] / "infra" / "replications" / "sales-dr.yml"
    absent = ferry("status", str(deployed), "--environment", "dev")
    assert absent.returncode == 2, absent.stdout + absent.stderr
    [line] = absent.stderr.splitlines()
    assert line == "ferry: error: --environment dev: not deployed (no stack Ferry-dev in eu-west-1)"


def test_status_reads_the_state_of_the_deployed_local_pipeline(
    local_runtime, pipeline, run, arm, sample, bucket, write_config, source_catalog
):
    """Hive → Glue through the local runtime's state machine, then ``ferry status
    --environment local``: the deployed functions recorded each outcome in the stack's
    state table (their roles may), and Commit recorded the source version on the replica."""
    document = config_document(
        local_runtime,
        [{"source-table": {"database-name": sample.database, "table-name": "orders"},
          "replica-table": {"database-name": f"{sample.database}_dr",
                            "table-location": f"s3://{bucket}/warehouse/orders"}}],
        replica={"name": "aws", "glue": {"region": "us-east-1"}},
        rpo="PT1H",
    )  # fmt: skip
    outcome = run(document, "deployed.yml")
    assert outcome.status == "SUCCEEDED", outcome
    config = write_config(document, "deployed.yml")
    home = str(local_runtime.state_dir)
    status = ferry("status", str(config), "--environment", "local", "--home", home, "--json")
    assert status.returncode == 0, status.stderr
    [table] = json.loads(status.stdout)
    assert (table["state"], table["behindSeconds"], table["overRpo"]) == ("in sync", 0, False)
    assert table["lastSuccessEvent"] and table["replicaVersion"].startswith("hive:")

    time.sleep(1.1)
    add_partition(source_catalog, sample, "2030-01-03")
    arm({"point": "plan.planned", "error": "CatalogError"})
    failed = run(document, "deployed.yml")
    assert failed.status != "SUCCEEDED"
    status = ferry("status", str(config), "--environment", "local", "--home", home)
    assert status.returncode == 1, status.stdout + status.stderr
    first = status.stdout.splitlines()[0]
    assert " failing since 20" in first and "injected failure at plan.planned" in first
    local = ferry("status", str(config), "--home", str(local_runtime.state_dir / "elsewhere"))
    assert local.returncode == 2, "the pipeline's state is not ferry replicate's"


def test_status_reads_the_dynamodb_state_table_ferry_replicate_used(orders, sample, unique):
    import boto3

    from ferry.replicas.ledger.dynamodb_table import create_state_table

    config, home = orders
    table = f"ferry-state-{unique}"
    create_state_table(boto3.client("dynamodb", region_name="us-east-1"), table)
    done = ferry("replicate", str(config), "--home", str(home), "--state-table", table)
    assert done.returncode == 0, done.stderr
    status = ferry("status", str(config), "--state-table", table, "--json")
    assert status.returncode == 0, status.stderr
    tables = json.loads(status.stdout)
    assert [t["state"] for t in tables] == ["in sync", "in sync"]
    assert all(t["lastSuccessEvent"] for t in tables)
    # The local file was not the state: nothing there.
    assert ferry("status", str(config), "--home", str(home)).returncode == 2
