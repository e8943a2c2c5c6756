"""Hive → Hive replication against two real metastores: data, metadata, snapshots, guards."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from ferry.commands.reader import read_rows
from ferry.core.model import StorageDescriptor, Table, TableType
from ferry.local.samples import order_rows, write_parquet
from ferry.replicas.replica import (
    CIRCUS_TRAIN_REPLICATION_EVENT,
    LAST_REPLICATED,
    REPLICATION_EVENT,
    REPLICATION_MODE,
    SOURCE_CATALOG,
    SOURCE_LOCATION,
    SOURCE_TABLE,
)
from ferry.storage import fs
from tests.helpers import (
    Replicator,
    assert_replica_holds_source,
    catalog_state,
    config_document,
    files_below,
    read_bytes,
)

pytestmark = pytest.mark.integration


def event_ids(prefix: str = "ferry-20261121t083000000z"):
    counter = itertools.count(1)
    return lambda: f"{prefix}-{next(counter):08x}"


@pytest.fixture
def target(tmp_path):
    """The replica's data root for this test."""
    return (tmp_path / "replica-data").as_uri()


def replicate(runtime, source, replica, replications, **config_extra):
    """Replicate with ``ferry replicate``'s driver (catalogs are opened from the config)."""
    document = config_document(runtime, replications, **config_extra)
    return Replicator(document, event_ids=event_ids()).run()


def full(sample, target, table="orders", replica_db=None, replica_table=None, **extra):
    return {
        "source-table": {
            "database-name": sample.database,
            "table-name": table,
            **extra.pop("source", {}),
        },
        "replica-table": {
            "database-name": replica_db or f"{sample.database}_dr",
            "table-name": replica_table or table,
            "table-location": f"{target}/{table}",
        },
        **extra,
    }


def test_partitioned_table_is_copied_into_a_snapshot_and_committed(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replica_db = f"{sample.database}_dr"
    [outcome] = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [
            full(
                sample,
                target,
                replica_table="orders_copy",
                **{"transform-options": {"table-properties": {"owner": "dr-team"}}},
            )
        ],
    )
    assert outcome.status == "SUCCEEDED", outcome.error
    event = outcome.event_id
    snapshot = f"{target}/orders/{event}"

    replica = replica_catalog.get_table(replica_db, "orders_copy")
    assert replica.table_type is TableType.EXTERNAL
    assert fs.relative_path(replica.location, snapshot) == ""
    assert replica.parameters[REPLICATION_EVENT] == event
    assert replica.parameters[REPLICATION_MODE] == "FULL"
    assert replica.parameters[SOURCE_TABLE] == f"{sample.database}.orders"
    assert replica.parameters[SOURCE_CATALOG] == "onprem"
    assert fs.relative_path(replica.parameters[SOURCE_LOCATION], sample.orders.location) == ""
    assert replica.parameters[LAST_REPLICATED] == "2026-11-21T08:30:00.000Z"
    assert replica.parameters["owner"] == "dr-team"
    assert replica.parameters["comment"] == "one partition per day"
    assert replica.storage.columns == sample.orders.storage.columns

    partitions = replica_catalog.list_partitions(replica)
    assert [p.values for p in partitions] == [(day,) for day in sample.days]
    for partition in partitions:
        assert fs.relative_path(partition.location, snapshot) == f"dt={partition.values[0]}"
        assert partition.parameters[REPLICATION_EVENT] == event
        source_file = f"{sample.orders.location}/dt={partition.values[0]}/part-00000.parquet"
        assert read_bytes(f"{partition.location}/part-00000.parquet") == read_bytes(source_file)
    assert outcome.files == 3 and outcome.partitions_added == 3
    assert outcome.bytes == sum(files_below(snapshot).values())
    assert read_rows(replica_catalog, replica).equals(read_rows(source_catalog, sample.orders))


def test_unpartitioned_table_location_becomes_the_snapshot(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [outcome] = replicate(
        local_runtime, source_catalog, replica_catalog, [full(sample, target, "customers")]
    )
    assert outcome.status == "SUCCEEDED", outcome.error
    replica = replica_catalog.get_table(f"{sample.database}_dr", "customers")
    assert fs.relative_path(replica.location, f"{target}/customers/{outcome.event_id}") == ""
    assert read_bytes(f"{replica.location}/part-00000.parquet") == read_bytes(
        f"{sample.customers.location}/part-00000.parquet"
    )
    assert read_rows(replica_catalog, replica).equals(read_rows(source_catalog, sample.customers))


def test_view_is_mirrored_with_its_sql_rewritten_through_table_mappings(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replica_db = f"{sample.database}_dr"
    outcomes = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [
            full(sample, target, "orders", replica_table="orders_copy"),
            {
                "source-table": {"database-name": sample.database, "table-name": "big_orders"},
                "replica-table": {"database-name": replica_db},
                "replication-mode": "METADATA_MIRROR",
                "table-mappings": {f"{sample.database}.orders": f"{replica_db}.orders_copy"},
            },
        ],
    )
    assert [o.status for o in outcomes] == ["SUCCEEDED", "SUCCEEDED"]
    view = replica_catalog.get_table(replica_db, "big_orders")
    assert view.table_type is TableType.VIEW
    assert view.location is None
    assert view.parameters[REPLICATION_MODE] == "METADATA_MIRROR"
    assert f"`{replica_db}`.`orders_copy` AS `orders`" in view.view_expanded_text
    assert f"`{sample.database}`" not in view.view_expanded_text
    assert f"`{replica_db}`.`orders_copy`" in view.view_original_text


def test_metadata_mirror_points_the_replica_at_the_source_data(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [outcome] = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {"database-name": f"{sample.database}_dr"},
                "replication-mode": "METADATA_MIRROR",
            }
        ],
    )
    assert outcome.status == "SUCCEEDED" and outcome.files == 0
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica.table_type is TableType.EXTERNAL  # never owns the source's data
    assert fs.relative_path(replica.location, sample.orders.location) == ""
    source_locations = {p.values: p.location for p in source_catalog.list_partitions(sample.orders)}
    assert {
        p.values: p.location for p in replica_catalog.list_partitions(replica)
    } == source_locations


def test_partition_filter_with_a_date_helper_selects_recent_partitions(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [outcome] = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [full(sample, target, source={"partition-filter": "dt >= '{{ days_ago(1) }}'"})],
    )
    assert outcome.partition_filter == "dt >= '2026-11-20'"
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert [p.values for p in replica_catalog.list_partitions(replica)] == [
        ("2026-11-20",),
        ("2026-11-21",),
    ]
    assert sorted(files_below(f"{target}/orders/{outcome.event_id}")) == [
        f"{target}/orders/{outcome.event_id}/dt=2026-11-20/part-00000.parquet",
        f"{target}/orders/{outcome.event_id}/dt=2026-11-21/part-00000.parquet",
    ]


def test_partition_limit_takes_the_first_partitions_in_order(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [outcome] = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [full(sample, target, source={"partition-limit": 2})],
    )
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert [p.values for p in replica_catalog.list_partitions(replica)] == [
        (d,) for d in sample.days[:2]
    ]
    assert outcome.files == 2


def test_filter_matching_nothing_still_updates_table_metadata(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [outcome] = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [full(sample, target, source={"partition-filter": "dt > '2999-01-01'"})],
    )
    assert outcome.status == "SUCCEEDED" and outcome.partitions == 0
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica.parameters[REPLICATION_EVENT] == outcome.event_id
    assert replica_catalog.list_partitions(replica) == []


def test_second_run_writes_a_new_snapshot_and_leaves_the_first_intact(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    config = config_document(local_runtime, [full(sample, target)])
    replicator = Replicator(config, event_ids=event_ids())
    [first] = replicator.run()
    first_files = {uri: read_bytes(uri) for uri in files_below(f"{target}/orders/{first.event_id}")}
    # Every partition's data is rewritten in place at the source.
    for day in sample.days:
        write_parquet(
            f"{sample.orders.location}/dt={day}", "part-00000.parquet", order_rows(day)[:2]
        )
    [second] = replicator.run()

    assert second.status == "SUCCEEDED" and first.event_id != second.event_id
    assert (second.partitions_added, second.partitions_altered) == (0, 3)
    assert {
        uri: read_bytes(uri) for uri in files_below(f"{target}/orders/{first.event_id}")
    } == first_files
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica.parameters[REPLICATION_EVENT] == second.event_id
    for partition in replica_catalog.list_partitions(replica):
        assert (
            fs.relative_path(partition.location, f"{target}/orders/{second.event_id}") is not None
        )
        assert partition.parameters[REPLICATION_EVENT] == second.event_id


def _foreign_table(database: str, name: str, location: str, parameters: dict[str, str]) -> Table:
    return Table(
        database=database,
        name=name,
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=location, columns=(), serde_library="x"),
        parameters=parameters,
    )


def test_guard_refuses_a_replica_table_ferry_does_not_own(
    local_runtime, source_catalog, replica_catalog, sample, target, tmp_path
):
    from ferry.core.model import Database

    replica_db = f"{sample.database}_dr"
    replica_catalog.create_database(Database(replica_db))
    replica_catalog.create_table(
        _foreign_table(replica_db, "orders", (tmp_path / "theirs").as_uri(), {"owner": "someone"})
    )
    before = catalog_state(replica_catalog, replica_db, ["orders"])

    [outcome] = replicate(local_runtime, source_catalog, replica_catalog, [full(sample, target)])

    assert outcome.status == "FAILED"
    assert outcome.error_type == "ReplicaGuardError"
    assert f"{replica_db}.orders" in outcome.error and "not a replica" in outcome.error
    assert catalog_state(replica_catalog, replica_db, ["orders"]) == before
    assert files_below(target) == {}


def test_a_circus_train_replica_is_adopted(
    local_runtime, source_catalog, replica_catalog, sample, target, tmp_path
):
    from ferry.core.model import Database

    replica_db = f"{sample.database}_dr"
    replica_catalog.create_database(Database(replica_db))
    replica_catalog.create_table(
        replace(
            _foreign_table(replica_db, "customers", (tmp_path / "ct").as_uri(), {}),
            parameters={
                CIRCUS_TRAIN_REPLICATION_EVENT: "ctp-20200101t000000.000z-abcd",
                "EXTERNAL": "TRUE",
            },
        )
    )
    [outcome] = replicate(
        local_runtime, source_catalog, replica_catalog, [full(sample, target, "customers")]
    )
    assert outcome.status == "SUCCEEDED", outcome.error
    replica = replica_catalog.get_table(replica_db, "customers")
    assert replica.parameters[REPLICATION_EVENT] == outcome.event_id
    assert fs.relative_path(replica.location, f"{target}/customers/{outcome.event_id}") == ""


def test_switching_a_full_replica_to_metadata_mirror_is_refused(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replica_db = f"{sample.database}_dr"
    replicate(local_runtime, source_catalog, replica_catalog, [full(sample, target, "customers")])
    before = catalog_state(replica_catalog, replica_db, ["customers"])
    [outcome] = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [
            {
                "source-table": {"database-name": sample.database, "table-name": "customers"},
                "replica-table": {"database-name": replica_db},
                "replication-mode": "METADATA_MIRROR",
            }
        ],
    )
    assert outcome.error_type == "ReplicationModeError" and "FULL" in outcome.error
    assert catalog_state(replica_catalog, replica_db, ["customers"]) == before


def test_full_replication_of_a_view_is_refused(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [outcome] = replicate(
        local_runtime, source_catalog, replica_catalog, [full(sample, target, "big_orders")]
    )
    assert outcome.error_type == "ReplicationModeError" and "METADATA_MIRROR" in outcome.error
    assert replica_catalog.get_database(f"{sample.database}_dr") is None


def test_missing_source_table_fails_alone_and_changes_nothing(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replica_db = f"{sample.database}_dr"
    outcomes = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [full(sample, target, "no_such_table"), full(sample, target, "customers")],
    )
    assert [o.status for o in outcomes] == ["FAILED", "SUCCEEDED"]
    assert outcomes[0].error_type == "SourceTableNotFoundError"
    assert f"{sample.database}.no_such_table" in outcomes[0].error
    assert replica_catalog.get_table(replica_db, "no_such_table") is None
    assert not any("no_such_table" in uri for uri in files_below(target))


def test_unwritable_target_fails_before_any_metadata_is_written(
    local_runtime, source_catalog, replica_catalog, sample, tmp_path
):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    replica_db = f"{sample.database}_dr"
    [outcome] = replicate(
        local_runtime, source_catalog, replica_catalog, [full(sample, blocker.as_uri())]
    )
    assert outcome.status == "FAILED"
    assert outcome.error_type == "TargetNotWritableError"
    assert blocker.as_uri() in outcome.error
    assert replica_catalog.get_database(replica_db) is None
    assert blocker.read_text() == "not a folder"


def test_failed_copy_removes_the_partial_snapshot(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    # One source file vanishes after planning: the copy fails part-way.
    doomed = f"{sample.orders.location}/dt={sample.days[-1]}/part-00000.parquet"

    class VanishingSource:
        def state_entered(self, table, state):
            if state == "Inline copy":
                fs.delete_tree(doomed)

    config = config_document(local_runtime, [full(sample, target)])
    replicator = Replicator(config, event_ids=event_ids(), observer=VanishingSource())
    [outcome] = replicator.run()
    assert outcome.error_type == "CopyError" and fs.resolve(doomed)[1] in outcome.error
    assert files_below(target) == {}
    assert replica_catalog.get_database(f"{sample.database}_dr") is None


def test_a_table_name_pattern_replicates_each_matched_table_under_its_own_name(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    """A pattern selects 2 of the database's 3 tables (the view is excluded); both replicate."""
    replica_db = f"{sample.database}_dr"
    root = f"{target}/{sample.database}"
    outcomes = replicate(
        local_runtime,
        source_catalog,
        replica_catalog,
        [
            {
                "source-table": {
                    "database-name": sample.database,
                    "table-name-pattern": ".*",
                    "exclude": ["big_.*"],
                },
                "replica-table": {"database-name": replica_db, "table-location": root},
                "transform-options": {"table-properties": {"owner": "dr-team"}},
            }
        ],
    )
    assert [(o.source_table, o.replica_table, o.status) for o in outcomes] == [
        (f"{sample.database}.customers", f"{replica_db}.customers", "SUCCEEDED"),
        (f"{sample.database}.orders", f"{replica_db}.orders", "SUCCEEDED"),
    ]
    for outcome, source_table in zip(outcomes, (sample.customers, sample.orders), strict=True):
        name = source_table.name
        replica = replica_catalog.get_table(replica_db, name)
        # Each table's snapshots go below <table-location>/<table>.
        assert fs.relative_path(replica.location, f"{root}/{name}/{outcome.event_id}") == ""
        assert replica.parameters[SOURCE_TABLE] == f"{sample.database}.{name}"
        assert replica.parameters["owner"] == "dr-team"
        assert_replica_holds_source(replica_catalog, replica_db, name, source_catalog, source_table)
    assert replica_catalog.get_table(replica_db, "big_orders") is None
    assert {uri.removeprefix(root + "/").split("/")[0] for uri in files_below(root)} == {
        "customers",
        "orders",
    }
