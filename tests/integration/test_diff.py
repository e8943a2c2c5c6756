"""Incremental replication on real metastores: the diff, the four modes, the strategies.

Each run compares the source with the replica: a partition is copied when it is new or its
data fingerprint changed, altered in place when only its metadata changed, dropped when the
source dropped it (``PROPAGATE_DELETES``), and left alone otherwise.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from ferry.core.model import Column
from ferry.local.samples import order_rows, write_parquet
from ferry.replicas.replica import PARTITION_FINGERPRINT, REPLICATION_EVENT, TABLE_FINGERPRINT
from ferry.states import plan as plan_state
from ferry.states.context import StateContext
from ferry.storage import fs
from tests.helpers import (
    Replicator,
    assert_replica_holds_source,
    catalog_state,
    config_document,
    files_below,
    record_listings,
)

pytestmark = pytest.mark.integration


def event_ids():
    counter = itertools.count(1)
    return lambda: f"ferry-20261121t083000000z-{next(counter):08x}"


@pytest.fixture
def target(tmp_path):
    return fs.local_uri(tmp_path / "replica")


def entry(sample, target, table="orders", **extra):
    return {
        "source-table": {"database-name": sample.database, "table-name": table},
        "replica-table": {
            "database-name": f"{sample.database}_dr",
            "table-location": f"{target}/{table}",
        },
        **extra,
    }


def plan_of(replicator: Replicator, table: str) -> dict:
    """What ``ferry plan`` shows for one table of the replicator's config."""
    return plan_state.preview(
        StateContext("file:///nowhere"), str(replicator.config_path), table, probe=False
    )


def test_the_diff_finds_new_changed_and_deleted_partitions_and_nothing_else(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replicator = Replicator(
        config_document(
            local_runtime,
            [entry(sample, target, **{"replication-strategy": "PROPAGATE_DELETES"})],
        ),
        event_ids=event_ids(),
    )
    [first] = replicator.run()
    assert first.status == "SUCCEEDED"
    gone, rewritten, relabelled = sample.days
    orders = sample.orders
    partitions = {p.values: p for p in source_catalog.list_partitions(orders)}
    # A new partition lands, one is rewritten in place, one gets new metadata, one is dropped.
    new_day = "2026-11-22"
    write_parquet(f"{orders.location}/dt={new_day}", "part-00000.parquet", order_rows(new_day))
    source_catalog.add_partitions(
        orders,
        [
            replace(
                partitions[(gone,)],
                values=(new_day,),
                storage=partitions[(gone,)].storage.with_location(
                    f"{orders.location}/dt={new_day}"
                ),
            )
        ],
    )
    write_parquet(
        f"{orders.location}/dt={rewritten}", "part-00000.parquet", order_rows(rewritten)[:2]
    )
    source_catalog.alter_partitions(
        orders, [replace(partitions[(relabelled,)], parameters={"quality": "checked"})]
    )
    source_catalog.drop_partitions(orders, [(gone,)])

    plan = plan_of(replicator, f"{sample.database}.orders")
    assert {(tuple(c["values"]), c["change"]) for c in plan["changes"]} == {
        ((new_day,), "new"),
        ((rewritten,), "data changed"),
        ((relabelled,), "metadata changed"),
        ((gone,), "deleted at the source"),
    }
    assert plan["files"] == 2 and plan["partitionsUnchanged"] == 0

    [second] = replicator.run()
    assert second.status == "SUCCEEDED", second.error
    assert (second.partitions_added, second.partitions_altered, second.files) == (1, 2, 2)
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    by_day = {p.values[0]: p for p in replica_catalog.list_partitions(replica)}
    assert set(by_day) == {rewritten, relabelled, new_day}
    assert f"/{second.event_id}/" in by_day[new_day].location
    assert f"/{second.event_id}/" in by_day[rewritten].location
    # Only its metadata changed: still the first snapshot, not copied again.
    assert f"/{first.event_id}/" in by_day[relabelled].location
    assert by_day[relabelled].parameters["quality"] == "checked"
    assert files_below(f"{target}/orders/{second.event_id}").keys() == {
        f"{target}/orders/{second.event_id}/dt={day}/part-00000.parquet"
        for day in (rewritten, new_day)
    }
    assert_replica_holds_source(
        replica_catalog, f"{sample.database}_dr", "orders", source_catalog, orders
    )


def test_a_plan_of_the_whole_table_lists_each_file_once(local_runtime, sample, target, monkeypatch):
    replicator = Replicator(config_document(local_runtime, [entry(sample, target)]))
    listed = record_listings(monkeypatch)
    plan = plan_of(replicator, f"{sample.database}.orders")
    # One walk of the table's folder gave the fingerprints and the files to copy.
    assert listed == [sample.orders.location]
    assert plan["files"] == len(files_below(sample.orders.location)) == 3


def test_a_run_with_nothing_changed_copies_nothing_and_alters_nothing(
    local_runtime, replica_catalog, sample, target
):
    replicator = Replicator(
        config_document(local_runtime, [entry(sample, target), entry(sample, target, "customers")]),
        event_ids=event_ids(),
    )
    assert [o.status for o in replicator.run()] == ["SUCCEEDED", "SUCCEEDED"]
    before = catalog_state(replica_catalog, f"{sample.database}_dr", ["orders", "customers"])
    copied = files_below(target)
    outcomes = replicator.run()
    assert [(o.status, o.files, o.bytes) for o in outcomes] == [("UNCHANGED", 0, 0)] * 2
    for outcome in outcomes:
        assert outcome.states == ("Plan", "Choose copier", "Nothing to do", "Notify success")
    assert (
        catalog_state(replica_catalog, f"{sample.database}_dr", ["orders", "customers"]) == before
    )
    assert files_below(target) == copied
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert all(
        PARTITION_FINGERPRINT in p.parameters for p in replica_catalog.list_partitions(replica)
    )
    customers = replica_catalog.get_table(f"{sample.database}_dr", "customers")
    assert customers.parameters[TABLE_FINGERPRINT].startswith("v1:1:")


def test_table_metadata_is_refreshed_when_no_partition_changed(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replicator = Replicator(config_document(local_runtime, [entry(sample, target)]))
    [first] = replicator.run()
    source_catalog.alter_table(
        replace(sample.orders, parameters={**sample.orders.parameters, "owner-team": "sales"})
    )
    [second] = replicator.run()
    assert second.status == "SUCCEEDED" and second.files == 0 and second.partitions == 0
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica.parameters["owner-team"] == "sales"
    # No data was copied: the table keeps a location that exists.
    assert replica.location.endswith(first.event_id) and files_below(replica.location)


def test_upsert_never_deletes(local_runtime, source_catalog, replica_catalog, sample, target):
    replicator = Replicator(config_document(local_runtime, [entry(sample, target)]))
    replicator.run()
    source_catalog.drop_partitions(sample.orders, [(sample.days[0],)])
    [outcome] = replicator.run()
    assert outcome.status == "UNCHANGED"
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert len(replica_catalog.list_partitions(replica)) == 3


def test_propagate_deletes_drops_the_replica_of_a_dropped_source_table(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    replicator = Replicator(
        config_document(
            local_runtime,
            [entry(sample, target, "customers", **{"replication-strategy": "PROPAGATE_DELETES"})],
        )
    )
    [first] = replicator.run()
    source_catalog.drop_table(sample.database, "customers")
    plan = plan_of(replicator, f"{sample.database}.customers")
    assert plan["dropTable"] is True
    [outcome] = replicator.run()
    assert outcome.status == "SUCCEEDED", outcome.error
    assert replica_catalog.get_table(f"{sample.database}_dr", "customers") is None
    # The data stays for housekeeping to retire, never deleted straight away.
    assert files_below(f"{target}/customers/{first.event_id}")


def test_metadata_update_refreshes_metadata_and_keeps_the_replicated_locations(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    full = Replicator(config_document(local_runtime, [entry(sample, target)]))
    [first] = full.run()
    before = {
        p.values: p.location
        for p in replica_catalog.list_partitions(
            replica_catalog.get_table(f"{sample.database}_dr", "orders")
        )
    }
    day = sample.days[1]
    [partition] = [p for p in source_catalog.list_partitions(sample.orders) if p.values == (day,)]
    source_catalog.alter_partitions(
        sample.orders, [replace(partition, parameters={"quality": "checked"})]
    )
    update = Replicator(
        config_document(
            local_runtime, [entry(sample, target, **{"replication-mode": "METADATA_UPDATE"})]
        )
    )
    [outcome] = update.run()
    assert outcome.status == "SUCCEEDED" and outcome.files == 0, outcome.error
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    after = {p.values: p for p in replica_catalog.list_partitions(replica)}
    assert {values: p.location for values, p in after.items()} == before
    assert after[(day,)].parameters["quality"] == "checked"
    assert replica.location.endswith(first.event_id)


def test_metadata_update_of_a_table_never_replicated_is_a_named_error(
    local_runtime, replica_catalog, sample, target
):
    [outcome] = Replicator(
        config_document(
            local_runtime, [entry(sample, target, **{"replication-mode": "METADATA_UPDATE"})]
        )
    ).run()
    assert outcome.status == "FAILED" and outcome.error_type == "ReplicationModeError"
    assert replica_catalog.get_database(f"{sample.database}_dr") is None


def test_full_overwrite_replaces_a_replica_whose_schema_hive_cannot_alter(
    local_runtime, source_catalog, replica_catalog, sample, target
):
    [first] = Replicator(config_document(local_runtime, [entry(sample, target)])).run()
    # An incompatible column change (double → int), which Hive refuses to alter: at the
    # source, the table is dropped (its data stays) and created again with the new schema.
    partitions = source_catalog.list_partitions(sample.orders)
    columns = tuple(
        Column(c.name, "int") if c.name == "amount" else c for c in sample.orders.storage.columns
    )
    changed = replace(sample.orders, storage=replace(sample.orders.storage, columns=columns))
    source_catalog.drop_table(sample.database, "orders")
    source_catalog.create_table(changed)
    source_catalog.add_partitions(
        changed, [replace(p, storage=replace(p.storage, columns=columns)) for p in partitions]
    )
    [refused] = Replicator(config_document(local_runtime, [entry(sample, target)])).run()
    assert refused.status == "FAILED" and refused.error_type == "CatalogError"
    [outcome] = Replicator(
        config_document(
            local_runtime, [entry(sample, target, **{"replication-mode": "FULL_OVERWRITE"})]
        )
    ).run()
    assert outcome.status == "SUCCEEDED", outcome.error
    assert outcome.partitions_added == 3
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert [c.type for c in replica.storage.columns if c.name == "amount"] == ["int"]
    assert replica.parameters[REPLICATION_EVENT] == outcome.event_id
    # The first snapshot is untouched: readers that resolved it keep reading it.
    assert files_below(f"{target}/orders/{first.event_id}")


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("METADATA_MIRROR", "METADATA_UPDATE"),
        ("METADATA_MIRROR", "FULL_OVERWRITE"),
        ("FULL", "METADATA_MIRROR"),
    ],
)
def test_switching_between_mirror_and_copies_is_a_named_error(
    local_runtime, replica_catalog, sample, target, first, then
):
    def run(mode):
        return Replicator(
            config_document(local_runtime, [entry(sample, target, **{"replication-mode": mode})])
        ).run()

    assert run(first)[0].status == "SUCCEEDED"
    before = catalog_state(replica_catalog, f"{sample.database}_dr", ["orders"])
    [outcome] = run(then)
    assert outcome.status == "FAILED" and outcome.error_type == "ReplicationModeError"
    assert catalog_state(replica_catalog, f"{sample.database}_dr", ["orders"]) == before


def test_an_avro_replica_points_at_its_own_copy_of_the_schema(
    local_runtime, source_catalog, replica_catalog, sample, target, tmp_path
):
    schema = tmp_path / "schemas" / "orders.avsc"
    schema.parent.mkdir()
    schema.write_text('{"type": "record", "name": "orders", "fields": []}')
    source_catalog.alter_table(
        replace(
            sample.orders,
            parameters={**sample.orders.parameters, "avro.schema.url": fs.local_uri(schema)},
        )
    )
    replicator = Replicator(config_document(local_runtime, [entry(sample, target)]))
    [outcome] = replicator.run()
    assert outcome.status == "SUCCEEDED", outcome.error
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    copy = replica.parameters["avro.schema.url"]
    assert copy == f"{target}/orders/{outcome.event_id}/.schema/orders.avsc"
    assert fs.read_bytes(copy) == schema.read_bytes()
    # Nothing changed: the next run is a no-op, the schema URL naming an event is no change.
    [again] = replicator.run()
    assert again.status == "UNCHANGED"


def test_an_avro_schema_url_that_names_no_file_fails_the_table_with_a_named_error(
    local_runtime, source_catalog, replica_catalog, sample, target, tmp_path
):
    folder = fs.local_uri(tmp_path / "schemas") + "/"
    source_catalog.alter_table(
        replace(sample.orders, parameters={**sample.orders.parameters, "avro.schema.url": folder})
    )
    [outcome] = Replicator(config_document(local_runtime, [entry(sample, target)])).run()
    assert (outcome.status, outcome.error_type) == ("FAILED", "SourceMetadataError")
    assert f"{folder!r} names no schema file" in outcome.error
    assert replica_catalog.get_table(f"{sample.database}_dr", "orders") is None
