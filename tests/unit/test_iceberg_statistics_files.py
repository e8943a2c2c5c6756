"""An Iceberg table's statistics files — Puffin files (``statistics``) and partition statistics
files (``partition-statistics``) — replicated with the rest of its metadata
(``ferry.iceberg.snapshot_plan``, ``next_metadata``, ``table_replication``): copied byte for
byte below the replica's location, named there by the replica's metadata, copied once, and
dropped from the replica when the source removes them (returned as retired, never deleted
by the run).

The source is a pyiceberg table in a SQLite catalog on local folders; its statistics files
are written as an engine writes them (``tests/iceberg_statistics.py``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table.puffin import PuffinFile
from pyiceberg.table.statistics import BlobMetadata, PartitionStatisticsFile, StatisticsFile

from ferry.iceberg.next_metadata import next_metadata
from ferry.iceberg.paths import PathMover
from ferry.iceberg.snapshot_plan import plan_replication
from ferry.iceberg.table_replication import replicate_iceberg_table
from tests.iceberg_statistics import (
    add_partition_statistics,
    add_puffin_statistics,
    remove_partition_statistics,
)
from tests.iceberg_tables import SCHEMA, SPEC, rows, static_table
from tests.unit.test_next_metadata import REPLICA, SOURCE
from tests.unit.test_next_metadata import table as metadata_at


@pytest.fixture
def source(tmp_path):
    folder = tmp_path / "source"
    folder.mkdir()
    catalog = SqlCatalog("source", uri=f"sqlite:///{folder}/catalog.db", warehouse=folder.as_uri())
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", schema=SCHEMA, partition_spec=SPEC)
    table.append(rows([1, 2, 3], ["eu", "us", "eu"]))
    add_puffin_statistics(table)
    add_partition_statistics(table)
    return catalog.load_table("db.events")


def local(uri: str) -> Path:
    return Path(uri.removeprefix("file://").removeprefix("file:"))


def statistics_paths(metadata) -> list[str]:
    return [f.statistics_path for f in [*metadata.statistics, *metadata.partition_statistics]]


def test_statistics_and_partition_statistics_paths_move_and_nothing_else_of_them_changes():
    source = metadata_at(SOURCE)
    puffin = f"{SOURCE}/metadata/1-a.stats"
    partitions = f"{SOURCE}/metadata/partition-stats-1-b.parquet"
    source = source.model_copy(
        update={
            "statistics": [source_statistics(puffin)],
            "partition_statistics": [
                PartitionStatisticsFile(
                    snapshot_id=1, statistics_path=partitions, file_size_in_bytes=70
                )
            ],
        }
    )
    mover = PathMover.for_table(source.location, source.properties, REPLICA)

    metadata = next_metadata(source, mover, {}, None, None)

    assert statistics_paths(metadata) == [
        f"{REPLICA}/metadata/1-a.stats",
        f"{REPLICA}/metadata/partition-stats-1-b.parquet",
    ]
    moved_back = [f.model_copy(update={"statistics_path": puffin}) for f in metadata.statistics]
    assert moved_back == source.statistics  # snapshot id, sizes, footer, blob metadata kept
    assert metadata.partition_statistics[0].snapshot_id == 1
    assert metadata.partition_statistics[0].file_size_in_bytes == 70


def source_statistics(path: str) -> StatisticsFile:
    blob = BlobMetadata(
        type="apache-datasketches-theta-v1",
        **{"snapshot-id": 1, "sequence-number": 1, "fields": [1], "properties": {"ndv": "3"}},
    )
    return StatisticsFile(
        snapshot_id=1,
        statistics_path=path,
        file_size_in_bytes=120,
        file_footer_size_in_bytes=80,
        blob_metadata=[blob],
    )


def test_statistics_files_are_copied_with_their_bytes_and_named_below_the_replica(source, tmp_path):
    replica_root = tmp_path / "replica" / "events"

    result = replicate_iceberg_table(
        source.io, source.metadata_location, replica_root.as_uri(), source.io
    )

    replica = static_table(result.metadata_location, source.io).metadata
    assert replica.statistics and replica.partition_statistics
    for theirs, ours in zip(
        [*source.metadata.statistics, *source.metadata.partition_statistics],
        [*replica.statistics, *replica.partition_statistics],
        strict=True,
    ):
        assert ours.statistics_path.startswith(f"{replica_root.as_uri()}/metadata/")
        assert (
            local(ours.statistics_path).read_bytes() == local(theirs.statistics_path).read_bytes()
        )
        assert ours.snapshot_id == theirs.snapshot_id == source.current_snapshot().snapshot_id
        assert ours.file_size_in_bytes == theirs.file_size_in_bytes
    assert replica.statistics == [
        f.model_copy(update={"statistics_path": replica.statistics[0].statistics_path})
        for f in source.metadata.statistics
    ]
    # The copy is a Puffin file an engine reads: its blob names the snapshot, not a path.
    (blob,) = PuffinFile(local(replica.statistics[0].statistics_path).read_bytes()).footer.blobs
    assert blob.snapshot_id == source.current_snapshot().snapshot_id
    assert blob.properties == {"ndv": "3"}
    counts = pq.read_table(local(replica.partition_statistics[0].statistics_path))
    assert sorted(counts.column("data_record_count").to_pylist()) == [1, 2]
    copied = {c.target for c in result.copied}
    assert set(statistics_paths(replica)) <= copied


def test_a_new_snapshots_statistics_copy_only_the_new_file_and_removed_ones_leave_the_replica(
    source, tmp_path
):
    replica_root = tmp_path / "replica" / "events"
    first = replicate_iceberg_table(
        source.io, source.metadata_location, replica_root.as_uri(), source.io
    )
    earlier = static_table(first.metadata_location, source.io).metadata
    old_puffin, old_partitions = statistics_paths(earlier)
    stamp = local(old_puffin).stat().st_mtime_ns

    source.append(rows([4], ["ap"]))
    new = add_puffin_statistics(source, ndv=4)
    plan = plan_replication(
        source.io,
        source.metadata_location,
        replica_root.as_uri(),
        source.io,
        first.metadata_location,
    )
    statistics_copies = [c for c in plan.copies if c.source.endswith(".stats")]
    assert [c.source for c in statistics_copies] == [new.statistics_path]
    assert [c.kind for c in statistics_copies] == ["statistics file"]  # as errors name it
    assert len(plan.copies) == 2  # the append's data file and its statistics file

    second = replicate_iceberg_table(
        source.io,
        source.metadata_location,
        replica_root.as_uri(),
        source.io,
        first.metadata_location,
    )

    replica = static_table(second.metadata_location, source.io).metadata
    assert [f.snapshot_id for f in replica.statistics] == [
        f.snapshot_id for f in source.metadata.statistics
    ]
    assert local(old_puffin).stat().st_mtime_ns == stamp  # not copied again
    assert second.retired == ()

    # The source removes the first snapshot's statistics and partition statistics.
    first_snapshot = earlier.statistics[0].snapshot_id
    with source.update_statistics() as update:
        update.remove_statistics(first_snapshot)
    remove_partition_statistics(source, first_snapshot)
    source = source.catalog.load_table("db.events")
    third = replicate_iceberg_table(
        source.io,
        source.metadata_location,
        replica_root.as_uri(),
        source.io,
        second.metadata_location,
    )

    replica = static_table(third.metadata_location, source.io).metadata
    assert [f.snapshot_id for f in replica.statistics] == [new.snapshot_id]
    assert replica.partition_statistics == []
    assert third.copied == () and third.new_snapshot_ids == ()
    assert set(third.retired) == {old_puffin, old_partitions}
    assert local(old_puffin).exists() and local(old_partitions).exists()  # housekeeping's
