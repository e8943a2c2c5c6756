"""The replica guards: whose replica a table is, and where a replica may be written."""

import pytest

from ferry.config import TableReplication
from ferry.core.errors import ReplicaGuardError, ReplicaLocationError
from ferry.core.model import Column, Partition, StorageDescriptor, Table, TableType
from ferry.replicas.replica import (
    CIRCUS_TRAIN_REPLICATION_EVENT,
    CIRCUS_TRAIN_SOURCE_TABLE,
    REPLICATION_EVENT,
    REPLICATION_MODE,
    SOURCE_TABLE,
    check_replica_guard,
    check_replica_location,
)


def replication(location: str | None = "s3://dr/sales_dr/orders", mode: str = "FULL"):
    return TableReplication.model_validate(
        {
            "source-table": {"database-name": "sales", "table-name": "orders"},
            "replica-table": {"database-name": "sales_dr", "table-location": location},
            "replication-mode": mode,
        }
    )


def table(location: str | None, parameters=None, partitioned: bool = False) -> Table:
    return Table(
        "sales",
        "orders",
        TableType.EXTERNAL,
        StorageDescriptor(location),
        (Column("dt", "string"),) if partitioned else (),
        parameters or {},
    )


# -- whose replica ----------------------------------------------------------------------------


def test_a_replica_of_another_source_table_is_not_overwritten():
    replica = table("s3://dr/x", {REPLICATION_EVENT: "ferry-1", SOURCE_TABLE: "sales.customers"})
    with pytest.raises(ReplicaGuardError) as raised:
        check_replica_guard(replica, replication())
    assert str(raised.value) == (
        "replica table sales.orders is the replica of sales.customers, not of sales.orders; "
        "Ferry will not overwrite it"
    )


def test_a_circus_train_replica_of_another_source_table_is_not_adopted():
    replica = table(
        "s3://dr/x",
        {CIRCUS_TRAIN_REPLICATION_EVENT: "ctp-1", CIRCUS_TRAIN_SOURCE_TABLE: "crm.orders"},
    )
    with pytest.raises(
        ReplicaGuardError, match="is the replica of crm.orders, not of sales.orders"
    ):
        check_replica_guard(replica, replication())


@pytest.mark.parametrize("recorded", ["sales.orders", "SALES.Orders", None])
def test_its_own_replica_is_accepted_whatever_the_case(recorded):
    parameters = {REPLICATION_EVENT: "ferry-1", REPLICATION_MODE: "FULL"}
    if recorded:
        parameters[SOURCE_TABLE] = recorded
    check_replica_guard(table("s3://dr/x", parameters), replication())


# -- where a replica may be written -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        (
            "s3://lake/sales/orders",
            "s3://lake/sales/orders",
            "replica-table.table-location s3://lake/sales/orders is the location of source table "
            "sales.orders (s3://lake/sales/orders); Ferry would write its snapshots into the source",
        ),
        (
            "s3a://lake/sales/orders/",
            "s3://lake/sales/orders/replica",
            "replica-table.table-location s3://lake/sales/orders/replica is inside the location of source table "
            "sales.orders (s3a://lake/sales/orders/); Ferry would write its snapshots into the source",
        ),
        (
            "file:/data/warehouse/sales.db/orders",
            "file:///data/warehouse/sales.db/orders/dr",
            "is inside the location of source table sales.orders (file:/data/warehouse/sales.db/orders)",
        ),
        (
            "s3://lake/dr/sales/orders",
            "s3://lake/dr",
            "the location of source table sales.orders (s3://lake/dr/sales/orders) is inside "
            "replica-table.table-location s3://lake/dr; each run would copy the replica's "
            "earlier snapshots",
        ),
    ],
    ids=["same", "inside-s3a-vs-s3", "inside-file-one-slash", "source-inside-replica"],
)
def test_a_replica_location_overlapping_the_source_is_refused(source, target, message):
    with pytest.raises(ReplicaLocationError) as raised:
        check_replica_location(table(source), replication(target))
    assert message in str(raised.value)


def test_a_source_partition_inside_the_replica_location_is_refused():
    partitions = [
        Partition(("2026-11-20",), StorageDescriptor("s3://lake/sales/orders/dt=2026-11-20")),
        Partition(("2026-11-21",), StorageDescriptor("s3://dr/sales_dr/orders/ferry-1/dt=x")),
    ]
    with pytest.raises(ReplicaLocationError) as raised:
        check_replica_location(
            table("s3://lake/sales/orders", partitioned=True), replication(), partitions
        )
    assert str(raised.value) == (
        "the location of partition dt=2026-11-21 of sales.orders "
        "(s3://dr/sales_dr/orders/ferry-1/dt=x) is inside replica-table.table-location "
        "s3://dr/sales_dr/orders; each run would copy the replica's earlier snapshots"
    )


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("s3://lake/sales/orders", "s3://lake/sales/orders_dr"),  # a sibling sharing a prefix
        ("s3://lake/sales/orders", "s3://dr/sales/orders"),  # another bucket, same path
        ("file:///data/sales/orders", "s3://data/sales/orders"),  # another file system
        (None, "s3://dr/sales/orders"),  # a view has no location
    ],
)
def test_separate_locations_are_accepted(source, target):
    check_replica_location(table(source), replication(target))


def test_metadata_mirror_writes_nothing_so_is_not_checked():
    check_replica_location(
        table("s3://lake/sales/orders"), replication("s3://lake/sales/orders", "METADATA_MIRROR")
    )
