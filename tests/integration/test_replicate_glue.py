"""Hive → Glue + S3 on the AWS emulator, with notifications read back by a consumer queue."""

from __future__ import annotations

import pytest

from ferry.commands.reader import read_rows
from ferry.local.samples import order_rows, write_parquet
from ferry.replicas.replica import REPLICATION_EVENT, SOURCE_TABLE
from ferry.storage import fs
from tests.helpers import Replicator, config_document, files_below, read_bytes
from tests.integration.test_replicate_hive import event_ids

pytestmark = pytest.mark.integration


def glue_replication(local_runtime, sample, bucket, topic, tables):
    replications = []
    for table in tables:
        entry = {
            "source-table": {"database-name": sample.database, "table-name": table},
            "replica-table": {"database-name": f"{sample.database}_dr"},
        }
        if table == "big_orders":
            entry["replication-mode"] = "METADATA_MIRROR"
            entry["table-mappings"] = {f"{sample.database}.orders": f"{sample.database}_dr.orders"}
        else:
            entry["replica-table"]["table-location"] = f"s3://{bucket}/warehouse/{table}"
        replications.append(entry)
    listener = {"sns-event-listener": {"topic": topic}} if topic else {}
    return config_document(
        local_runtime,
        replications,
        replica={"name": "aws", "glue": {"region": "us-east-1"}},
        **listener,
    )


def test_hive_to_glue_copies_to_s3_commits_to_glue_and_notifies(
    local_runtime, source_catalog, glue_catalog, aws, sample, bucket, consumer
):
    topic, messages = consumer
    config = glue_replication(
        local_runtime, sample, bucket, topic, ["orders", "customers", "big_orders"]
    )
    replicator = Replicator(config, event_ids=event_ids())
    outcomes = replicator.run()
    assert [o.status for o in outcomes] == ["SUCCEEDED"] * 3, [o.error for o in outcomes]
    orders_outcome = outcomes[0]
    replica_db = f"{sample.database}_dr"

    orders = glue_catalog.get_table(replica_db, "orders")
    snapshot = f"s3://{bucket}/warehouse/orders/{orders_outcome.event_id}"
    assert orders.location == snapshot
    assert orders.parameters[REPLICATION_EVENT] == orders_outcome.event_id
    assert orders.parameters[SOURCE_TABLE] == f"{sample.database}.orders"
    for partition in glue_catalog.list_partitions(orders):
        assert partition.location == f"{snapshot}/dt={partition.values[0]}"
        assert read_bytes(f"{partition.location}/part-00000.parquet") == read_bytes(
            f"{sample.orders.location}/dt={partition.values[0]}/part-00000.parquet"
        )
    assert read_rows(glue_catalog, orders).equals(read_rows(source_catalog, sample.orders))
    customers = glue_catalog.get_table(replica_db, "customers")
    assert read_rows(glue_catalog, customers).equals(read_rows(source_catalog, sample.customers))
    view = glue_catalog.get_table(replica_db, "big_orders")
    assert f"`{replica_db}`.`orders`" in view.view_expanded_text

    received = messages()
    assert [m["body"]["type"] for m in received] == ["START", "SUCCESS"] * 3
    success = received[1]["body"]
    assert success == {
        "protocolVersion": "1.2",
        "type": "SUCCESS",
        "startTime": "2026-11-21T08:30:00.000Z",
        "endTime": "2026-11-21T08:30:00.000Z",
        "eventId": orders_outcome.event_id,
        "sourceCatalog": "onprem",
        "replicaCatalog": "aws",
        "sourceTable": f"{sample.database}.orders",
        "replicaTable": f"{replica_db}.orders",
        "replicaTableLocation": snapshot,
        "replicaMetastoreUris": "glue:us-east-1",
        "partitionKeys": {"dt": "string"},
        "modifiedPartitions": [[day] for day in sample.days],
        "bytesReplicated": sum(files_below(snapshot).values()),
    }
    assert received[1]["attributes"]["type"]["Value"] == "SUCCESS"


def test_failure_is_notified_and_glue_is_left_unchanged(
    local_runtime, source_catalog, glue_catalog, aws, sample, consumer, unique
):
    topic, messages = consumer
    missing_bucket = f"no-such-bucket-{unique}"
    config = glue_replication(local_runtime, sample, missing_bucket, topic, ["orders"])
    replicator = Replicator(config, event_ids=event_ids())
    [outcome] = replicator.run()
    assert outcome.status == "FAILED" and outcome.error_type in (
        "TargetNotWritableError",
        "CopyError",
    )
    assert missing_bucket in outcome.error
    assert glue_catalog.get_database(f"{sample.database}_dr") is None
    received = [m["body"] for m in messages()]
    assert [m["type"] for m in received] == ["START", "FAILURE"]
    failure = received[1]
    assert failure["errorMessage"] == outcome.error
    assert failure["eventId"] == outcome.event_id
    # Circus Train's protocol: a FAILURE carries no partitions and no byte count.
    assert "modifiedPartitions" not in failure and "bytesReplicated" not in failure


def test_second_run_to_glue_updates_partitions_in_place(
    local_runtime, source_catalog, glue_catalog, sample, bucket
):
    config = glue_replication(local_runtime, sample, bucket, None, ["orders"])
    replicator = Replicator(config, event_ids=event_ids())
    [first] = replicator.run()
    # Every partition's data is rewritten in place at the source.
    for day in sample.days:
        write_parquet(
            f"{sample.orders.location}/dt={day}", "part-00000.parquet", order_rows(day)[:2]
        )
    [second] = replicator.run()
    assert (second.partitions_added, second.partitions_altered) == (0, 3)
    orders = glue_catalog.get_table(f"{sample.database}_dr", "orders")
    assert {
        fs.relative_path(p.location, orders.location) for p in glue_catalog.list_partitions(orders)
    } == {f"dt={day}" for day in sample.days}
    assert len(files_below(f"s3://{bucket}/warehouse/orders/{first.event_id}")) == 3
    assert read_rows(glue_catalog, orders).equals(read_rows(source_catalog, sample.orders))
