"""The diff's rules on small inputs: no catalog, no file system.

``tests/integration/test_diff.py`` runs the same rules through real metastores; here each
rule is one call on a partition or a table written out in a few lines.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ferry.config import ReplicationMode
from ferry.core.model import Column, Partition, StorageDescriptor, Table, TableType
from ferry.planning.diff import (
    Change,
    PartitionChange,
    PartitionDecision,
    data_change,
    decide_partition,
    decide_table,
    definition,
    deleted_at_source,
    point_at_replica_schemas,
    same_partition,
    table_data_changed,
)
from ferry.replicas.replica import (
    LAST_REPLICATED,
    PARTITION_FINGERPRINT,
    REPLICATION_EVENT,
    TABLE_FINGERPRINT,
)
from ferry.storage.avro import AVRO_SCHEMA_URL, SchemaCopy
from ferry.storage.fingerprint import Fingerprint

SOURCE = "s3://source/sales/orders"
ROOT = "s3://replica/sales/orders"
OLD_SNAPSHOT = f"{ROOT}/ferry-20261120t083000000z-00000001"
SNAPSHOT = f"{ROOT}/ferry-20261121t083000000z-00000002"
PRINTED = Fingerprint(files=2, bytes=300, digest="ab" * 32)
OTHER = Fingerprint(files=1, bytes=100, digest="cd" * 32)
PARQUET = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"

FULL, MIRROR, UPDATE = (
    ReplicationMode.FULL,
    ReplicationMode.METADATA_MIRROR,
    ReplicationMode.METADATA_UPDATE,
)


def table(location: str | None = SOURCE, partitioned: bool = True, **parameters: str) -> Table:
    return Table(
        database="sales",
        name="orders",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location, columns=(Column("id", "bigint"),)),
        partition_keys=(Column("dt", "string"),) if partitioned else (),
        parameters=parameters,
    )


def partition(day: str, location: str | None, serde: str = PARQUET, **parameters: str):
    return Partition(
        values=(day,),
        storage=StorageDescriptor(location, serde_library=serde),
        parameters=parameters,
    )


def decide(source, old, mode=FULL, printed=PRINTED):
    return decide_partition(
        source,
        old,
        {"owner": "sales"},
        printed,
        mode=mode,
        table=table(),
        snapshot=SNAPSHOT if mode is FULL else None,
        root=ROOT,
    )


# -- why a partition's data is copied -------------------------------------------------------


def test_a_partition_missing_on_the_replica_is_new():
    assert data_change(None, str(PRINTED), ROOT) is Change.NEW


def test_a_partition_whose_fingerprint_differs_has_changed_data():
    old = partition("1", f"{OLD_SNAPSHOT}/dt=1", **{PARTITION_FINGERPRINT: str(OTHER)})
    assert data_change(old, str(PRINTED), ROOT) is Change.DATA_CHANGED


def test_a_partition_outside_the_table_location_has_moved():
    old = partition("1", "s3://elsewhere/dt=1", **{PARTITION_FINGERPRINT: str(PRINTED)})
    assert data_change(old, str(PRINTED), ROOT) is Change.MOVED


def test_a_partition_with_the_same_fingerprint_below_the_table_location_stays():
    old = partition("1", f"{OLD_SNAPSHOT}/dt=1", **{PARTITION_FINGERPRINT: str(PRINTED)})
    assert data_change(old, str(PRINTED), ROOT) is None


# -- one partition, FULL ----------------------------------------------------------------------


def test_full_copies_a_new_partition_into_the_snapshot_at_its_path_below_the_table():
    decision = decide(partition("1", f"{SOURCE}/dt=1"), None)
    assert decision.copy_to == f"{SNAPSHOT}/dt=1"
    assert decision.replica.location == f"{SNAPSHOT}/dt=1"
    assert decision.replica.parameters == {"owner": "sales", PARTITION_FINGERPRINT: str(PRINTED)}
    assert decision.change == PartitionChange(("1",), Change.NEW, files=2, bytes=300)
    assert not decision.unchanged


def test_full_copies_a_partition_stored_outside_its_table_under_its_partition_name():
    decision = decide(partition("2026-11-20", "s3://archive/orders-2026-11-20"), None)
    assert decision.copy_to == f"{SNAPSHOT}/dt=2026-11-20"


def test_full_copies_changed_data_again_and_alters_the_partition_to_the_new_snapshot():
    old = partition("1", f"{OLD_SNAPSHOT}/dt=1", **{PARTITION_FINGERPRINT: str(OTHER)})
    decision = decide(partition("1", f"{SOURCE}/dt=1"), old)
    assert decision.change.change is Change.DATA_CHANGED
    assert decision.replica.location == decision.copy_to == f"{SNAPSHOT}/dt=1"


def test_full_leaves_a_partition_that_is_already_replicated_as_it_is():
    old = partition(
        "1",
        f"{OLD_SNAPSHOT}/dt=1",
        owner="sales",
        **{PARTITION_FINGERPRINT: str(PRINTED), REPLICATION_EVENT: "ferry-earlier"},
    )
    decision = decide(partition("1", f"{SOURCE}/dt=1"), old)
    assert decision.unchanged
    assert decision.replica is None and decision.change is None and decision.copy_to is None


def test_full_alters_in_place_a_partition_whose_metadata_alone_changed():
    old = partition(
        "1", f"{OLD_SNAPSHOT}/dt=1", serde="LazySimpleSerDe", owner="sales",
        **{PARTITION_FINGERPRINT: str(PRINTED)},
    )  # fmt: skip
    decision = decide(partition("1", f"{SOURCE}/dt=1"), old)
    assert decision.change == PartitionChange(("1",), Change.METADATA_CHANGED)
    assert decision.replica.location == f"{OLD_SNAPSHOT}/dt=1"  # no copy: it stays
    assert decision.replica.storage.serde_library == PARQUET
    assert decision.copy_to is None


# -- one partition, the metadata modes --------------------------------------------------------


def test_metadata_update_adds_no_partition_the_replica_never_had():
    decision = decide(partition("1", f"{SOURCE}/dt=1"), None, mode=UPDATE, printed=None)
    assert decision == PartitionDecision()  # nothing written, and not counted as unchanged


def test_metadata_update_keeps_the_replicated_location_and_fingerprint():
    old = partition(
        "1", f"{OLD_SNAPSHOT}/dt=1", serde="LazySimpleSerDe",
        **{PARTITION_FINGERPRINT: str(OTHER)},
    )  # fmt: skip
    decision = decide(partition("1", f"{SOURCE}/dt=1"), old, mode=UPDATE, printed=None)
    assert decision.change.change is Change.METADATA_CHANGED
    assert decision.replica.location == f"{OLD_SNAPSHOT}/dt=1"
    assert decision.replica.parameters[PARTITION_FINGERPRINT] == str(OTHER)
    assert decision.copy_to is None


def test_metadata_mirror_points_a_new_partition_at_the_source_data():
    decision = decide(partition("1", f"{SOURCE}/dt=1"), None, mode=MIRROR, printed=None)
    assert decision.change == PartitionChange(("1",), Change.NEW)
    assert decision.replica.location == f"{SOURCE}/dt=1"
    assert decision.copy_to is None


def test_metadata_mirror_leaves_a_mirrored_partition_that_reads_the_same():
    old = partition("1", f"{SOURCE}/dt=1/", owner="sales", **{LAST_REPLICATED: "earlier"})
    decision = decide(partition("1", f"{SOURCE}/dt=1"), old, mode=MIRROR, printed=None)
    assert decision.unchanged


# -- what counts as the same ------------------------------------------------------------------


def test_the_same_partition_ignores_bookkeeping_and_the_spelling_of_its_location():
    written = partition("1", "file:///data/dt=1", owner="sales")
    stored = partition(
        "1", "file:/data/dt=1", owner="sales",
        **{REPLICATION_EVENT: "e", "transient_lastDdlTime": "1", "numFiles": "3"},
    )  # fmt: skip
    assert same_partition(written, stored)
    assert not same_partition(written, replace(stored, parameters={"owner": "finance"}))


def test_a_tables_definition_leaves_out_its_location_and_when_it_was_written():
    before = table(location=f"{OLD_SNAPSHOT}", comment="orders", **{LAST_REPLICATED: "then"})
    after = table(location=f"{SNAPSHOT}", comment="orders", **{LAST_REPLICATED: "now"})
    assert definition(before) == definition(after)
    assert definition(before) != definition(table(comment="other"))


# -- the table --------------------------------------------------------------------------------


def decide_on_table(source, replica_before, printed=None, mode=FULL, copied=False, overwrite=False):
    return decide_table(
        source,
        replica_before,
        printed,
        mode=mode,
        overwrite=overwrite,
        snapshot=SNAPSHOT if mode is FULL else None,
        partitions_copied=copied,
        root=ROOT,
    )


def test_a_partitioned_replica_moves_to_the_snapshot_only_when_data_was_copied_below_it():
    before = table(location=OLD_SNAPSHOT)
    assert decide_on_table(table(), before).location == OLD_SNAPSHOT
    assert decide_on_table(table(), before, copied=True).location == SNAPSHOT
    assert decide_on_table(table(), None).location == SNAPSHOT
    assert decide_on_table(table(), before, overwrite=True).location == SNAPSHOT


def test_an_unpartitioned_table_with_the_same_data_keeps_its_location():
    before = table(OLD_SNAPSHOT, partitioned=False, **{TABLE_FINGERPRINT: str(PRINTED)})
    decision = decide_on_table(table(partitioned=False), before, PRINTED)
    assert (decision.location, decision.data_changed, decision.copied) == (
        OLD_SNAPSHOT,
        False,
        False,
    )
    assert decision.fingerprint == str(PRINTED)


def test_an_unpartitioned_table_whose_data_changed_is_copied_to_the_snapshot():
    before = table(OLD_SNAPSHOT, partitioned=False, **{TABLE_FINGERPRINT: str(OTHER)})
    decision = decide_on_table(table(partitioned=False), before, PRINTED)
    assert (decision.location, decision.data_changed, decision.copied) == (SNAPSHOT, True, True)
    assert decision.fingerprint == str(PRINTED)


def test_a_mirror_points_at_the_source_and_an_update_keeps_the_replica_location():
    before = table(location=OLD_SNAPSHOT, partitioned=False, **{TABLE_FINGERPRINT: str(OTHER)})
    assert decide_on_table(table(), None, mode=MIRROR).location == SOURCE
    update = decide_on_table(table(partitioned=False), before, mode=UPDATE)
    assert (update.location, update.data_changed, update.fingerprint) == (
        OLD_SNAPSHOT,
        False,
        str(OTHER),
    )


@pytest.mark.parametrize(
    ("replica_before", "printed", "changed"),
    [
        (None, str(PRINTED), True),
        (table(OLD_SNAPSHOT, False, **{TABLE_FINGERPRINT: str(PRINTED)}), str(PRINTED), False),
        (table(OLD_SNAPSHOT, False, **{TABLE_FINGERPRINT: str(PRINTED)}), None, True),
        (table("s3://elsewhere/t", False, **{TABLE_FINGERPRINT: str(PRINTED)}), str(PRINTED), True),
    ],
    ids=["no replica", "same data", "no fingerprint", "moved"],
)
def test_whether_an_unpartitioned_tables_data_changed(replica_before, printed, changed):
    assert table_data_changed(replica_before, False, printed, ROOT) is changed


# -- deletions and Avro ----------------------------------------------------------------------


def test_replica_partitions_gone_at_the_source_are_deleted_in_order():
    existing = {(day,): partition(day, f"{OLD_SNAPSHOT}/dt={day}") for day in ("3", "1", "2")}
    gone = deleted_at_source(existing, {("2",)})
    assert [p.values for p in gone] == [("1",), ("3",)]


def test_what_an_event_writes_points_at_its_own_copy_of_each_avro_schema_once():
    schema = "s3://schemas/orders.avsc"
    avro_table = table(**{AVRO_SCHEMA_URL: schema})
    added = partition("1", f"{SNAPSHOT}/dt=1", **{AVRO_SCHEMA_URL: schema})
    plain = partition("2", f"{SNAPSHOT}/dt=2")
    rewired, to_add, to_alter, copies = point_at_replica_schemas(
        avro_table, [added], [plain], base_url=None, event_id=SNAPSHOT.rsplit("/")[-1], root=ROOT
    )
    copy = f"{SNAPSHOT}/.schema/orders.avsc"
    assert rewired.parameters[AVRO_SCHEMA_URL] == copy
    assert to_add[0].parameters[AVRO_SCHEMA_URL] == copy
    assert to_alter == [plain]
    assert copies == (SchemaCopy(schema, copy),)
