"""The replica's next metadata.json (``ferry.iceberg.next_metadata``): paths moved, the
replica's own metadata log, and a name that a step run again for the same event repeats."""

from __future__ import annotations

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from ferry.iceberg.next_metadata import (
    PREVIOUS_VERSIONS_MAX,
    next_metadata,
    next_metadata_path,
    same_table,
)
from ferry.iceberg.paths import PathMover

SOURCE = "s3://source-bucket/warehouse/t"
REPLICA = "s3://replica-bucket/replicas/t"


def table(location, **properties):
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    return new_table_metadata(
        schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, location, properties
    )


def test_every_path_moves_to_the_replica_and_a_path_property_outside_the_table_is_kept():
    source = table(SOURCE, **{"write.data.path": f"{SOURCE}/data", "owner": "etl"})
    mover = PathMover.for_table(source.location, source.properties, REPLICA)

    metadata = next_metadata(source, mover, {}, None, None)

    assert metadata.location == REPLICA
    assert metadata.properties == {"write.data.path": f"{REPLICA}/data", "owner": "etl"}
    assert metadata.metadata_log == []
    assert metadata.table_uuid == source.table_uuid


def test_the_metadata_log_is_the_replicas_own_history_trimmed_to_previous_versions_max():
    source = table(SOURCE, **{PREVIOUS_VERSIONS_MAX: "2"})
    mover = PathMover.for_table(source.location, source.properties, REPLICA)
    files = [f"{REPLICA}/metadata/0000{n}-a.metadata.json" for n in range(3)]
    replica = next_metadata(source, mover, {}, None, None)
    for location in files:
        replica = next_metadata(source, mover, {}, replica, location)

    assert [entry.metadata_file for entry in replica.metadata_log] == files[1:]
    assert same_table(replica, next_metadata(source, mover, {}, None, None))


def test_the_next_name_continues_the_replicas_numbering_and_repeats_for_the_same_run():
    mover = PathMover.for_table(SOURCE, {}, REPLICA)

    first = next_metadata_path(mover, "run-1", None)
    after_seven = next_metadata_path(mover, "run-1", f"{REPLICA}/metadata/00007-b.metadata.json")

    assert first.startswith(f"{REPLICA}/metadata/00000-") and first.endswith(".metadata.json")
    assert after_seven.startswith(f"{REPLICA}/metadata/00008-")
    assert next_metadata_path(mover, "run-1", None) == first
    assert next_metadata_path(mover, "run-2", None) != first
