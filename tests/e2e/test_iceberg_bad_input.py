"""Iceberg tables Ferry refuses, through the deployed state machine (its Lambdas run by the
emulator): the table fails with Ferry's error name and one line naming the table and the
file, Plan is not retried (the definition's ``Retry`` takes no such error), and neither
catalog nor either side's files changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.hive import HiveCatalog

from tests.helpers import catalog_state, config_document, files_below
from tests.iceberg_tables import SCHEMA, SPEC, read_rows, rows
from tests.integration.test_iceberg_pipeline import replication

pytestmark = pytest.mark.e2e


def test_broken_metadata_and_another_writers_commit_through_the_state_machine(
    run, local_runtime, source_catalog, replica_catalog, tmp_path, unique
):
    database = f"icebad_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    source = writer.create_table(f"{database}.history", schema=SCHEMA, partition_spec=SPEC)
    source.append(rows([1, 2, 3], ["eu", "us", "eu"]))
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    first = run(document, f"first-{unique}.yml")
    assert first.status == "SUCCEEDED", first.failed_states

    def state():
        return (
            catalog_state(source_catalog, database, ["history"]),
            catalog_state(replica_catalog, f"{database}_dr", ["history"]),
            files_below(source.location()),
            files_below(target),
        )

    # A manifest list the source's new version names is gone.
    source.append(rows([4, 5], ["ap", "us"]))
    manifest_list = writer.load_table(f"{database}.history").current_snapshot().manifest_list
    Path(manifest_list.removeprefix("file:")).unlink()
    before = state()

    broken = run(document, f"broken-{unique}.yml")

    assert broken.status == "FAILED"
    (result,) = broken.results
    assert result["error"] == "IcebergMetadataError", result
    assert result["failedState"] == "Plan", result
    assert result["cause"].startswith(
        f"source Iceberg table {database}.history: its manifest list {manifest_list} cannot be "
        "read: no such file"
    ), result["cause"]
    assert "\n" not in result["cause"]
    assert broken.child_entered.count("Plan") == 1, broken.child_entered
    assert state() == before

    # Another writer appends to the replica: refused, nothing of theirs touched.
    theirs = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    theirs.append(rows([100], ["eu"]))
    their_rows = read_rows(theirs)
    # (The guard comes before the source's metadata is read: refused all the same.)
    before = state()

    refused = run(document, f"refused-{unique}.yml")

    assert refused.status == "FAILED"
    (result,) = refused.results
    assert result["error"] == "ReplicaGuardError", result
    assert f"replica {database}_dr.history was committed to by another writer" in result["cause"]
    assert refused.child_entered.count("Plan") == 1, refused.child_entered
    assert state() == before
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert read_rows(replica) == their_rows
