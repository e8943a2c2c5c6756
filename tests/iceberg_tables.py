"""Source Iceberg tables for the tests, written with pyiceberg, and ways to read replicas.

pyiceberg 0.12 deletes copy-on-write only (``Table.delete`` rewrites data files). A
merge-on-read position delete is written here by hand: a Parquet delete file, a delete
manifest (pyiceberg's v2 manifest writer told its content) and a snapshot committed
through the catalog's ``commit_table``. pyiceberg cannot read equality deletes (it raises),
so they are not among the source tables.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog import Catalog
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable, Table
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.statistics import BlobMetadata, StatisticsFile
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))


def rows(ids: list[int], regions: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "region": regions})


def create_history_table(catalog: Catalog, identifier: str) -> dict[str, int]:
    """A partitioned v2 table with a history of every kind of change; returns the names of
    its milestones → snapshot ids (the first one expired)."""
    table = catalog.create_table(identifier, schema=SCHEMA, partition_spec=SPEC)
    milestones: dict[str, int] = {}

    table.append(rows([1, 2, 3], ["eu", "us", "eu"]))
    milestones["first append"] = table.current_snapshot().snapshot_id
    table.append(rows([4, 5], ["ap", "us"]))
    milestones["second append"] = table.current_snapshot().snapshot_id
    table.overwrite(rows([6], ["us"]), overwrite_filter="region = 'us'")
    milestones["overwrite"] = table.current_snapshot().snapshot_id
    table.delete("id = 3")  # copy-on-write: the eu file is rewritten
    milestones["copy-on-write delete"] = table.current_snapshot().snapshot_id
    table = add_position_delete(table, region="ap", positions=[0])  # id 4 goes
    milestones["position delete"] = table.current_snapshot().snapshot_id
    with table.update_schema() as update:
        update.add_column("amount", DoubleType())
    table.append(
        pa.table({"id": pa.array([7, 8], pa.int64()), "region": ["eu", "ap"], "amount": [1.5, 2.5]})
    )
    milestones["schema change"] = table.current_snapshot().snapshot_id
    with table.update_spec() as update:
        update.add_identity("id")  # bucket and truncate need pyiceberg-core (Rust)
    table.append(pa.table({"id": pa.array([9], pa.int64()), "region": ["us"], "amount": [9.0]}))
    milestones["spec change"] = table.current_snapshot().snapshot_id
    add_statistics(table)
    table = catalog.load_table(identifier)
    table.maintenance.expire_snapshots().by_id(milestones["first append"]).commit()
    return milestones


def add_position_delete(table: Table, region: str, positions: list[int]) -> Table:
    """Commit a merge-on-read position delete of ``positions`` in the (one) live data file
    of partition ``region``; returns the table as committed."""
    parent = table.current_snapshot()
    assert parent is not None
    targets = [
        task.file
        for task in table.scan(row_filter=f"region = '{region}'").plan_files()
        if task.file.partition[0] == region
    ]
    assert len(targets) == 1, targets
    target = targets[0]
    io = table.io
    delete_path = f"{table.location()}/data/region={region}/delete-{uuid.uuid4()}.parquet"
    deletes = pa.table(
        {
            "file_path": pa.array([target.file_path] * len(positions), pa.string()),
            "pos": pa.array(positions, pa.int64()),
        },
        schema=pa.schema(
            [
                pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
            ]
        ),
    )
    with io.new_output(delete_path).create() as stream:
        pq.write_table(deletes, stream)
    path_bound = target.file_path.encode()
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=delete_path,
        file_format=FileFormat.PARQUET,
        partition=target.partition,
        record_count=len(positions),
        file_size_in_bytes=len(io.new_input(delete_path)),
        lower_bounds={2147483546: path_bound},
        upper_bounds={2147483546: path_bound},
    )
    delete_file.spec_id = target.spec_id
    metadata = table.metadata
    snapshot_id = uuid.uuid4().int & ((1 << 63) - 1)
    sequence_number = metadata.last_sequence_number + 1
    manifest_path = f"{table.location()}/metadata/{uuid.uuid4()}-m0.avro"
    writer = _DeleteManifestWriter(
        metadata.specs()[target.spec_id],
        metadata.schema(),
        io.new_output(manifest_path),
        snapshot_id,
        "deflate",
    )
    with writer:
        writer.add_entry(
            ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=delete_file
            )
        )
    manifest_list = f"{table.location()}/metadata/snap-{snapshot_id}-0-{uuid.uuid4()}.avro"
    with write_manifest_list(
        2, io.new_output(manifest_list), snapshot_id, parent.snapshot_id, sequence_number, "deflate"
    ) as lst:
        lst.add_manifests([*parent.manifests(io), writer.to_manifest_file()])
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence_number,
        timestamp_ms=int(time.time() * 1000),
        manifest_list=manifest_list,
        summary=Summary(
            Operation.DELETE,
            **{"added-delete-files": "1", "added-position-deletes": str(len(positions))},
        ),
        schema_id=metadata.current_schema_id,
    )
    table.catalog.commit_table(
        table,
        (AssertRefSnapshotId(snapshot_id=parent.snapshot_id, ref="main"),),
        (
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snapshot_id),
        ),
    )
    return table.catalog.load_table(table.name())


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg 0.12's v2 writer declares every manifest a data manifest."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def add_statistics(table: Table) -> str:
    """Give the current snapshot a statistics file (its bytes are never interpreted here)."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    path = f"{table.location()}/metadata/{snapshot.snapshot_id}-{uuid.uuid4()}.stats"
    with table.io.new_output(path).create() as stream:
        stream.write(b"PFA1 statistics stand-in")
    statistics = StatisticsFile(
        snapshot_id=snapshot.snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(table.io.new_input(path)),
        file_footer_size_in_bytes=0,
        blob_metadata=[
            BlobMetadata(
                type="apache-datasketches-theta-v1",
                **{
                    "snapshot-id": snapshot.snapshot_id,
                    "sequence-number": snapshot.sequence_number,
                    "fields": [1],
                },
            )
        ],
    )
    with table.update_statistics() as update:
        update.set_statistics(statistics)
    return path


def read_rows(table: Table, snapshot_id: int | None = None) -> list[dict]:
    """The table's rows (at a snapshot), as sorted dictionaries: comparable across tables."""
    result = table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    return sorted(result, key=lambda row: row["id"])


def static_table(metadata_location: str, io: FileIO) -> StaticTable:
    return StaticTable.from_metadata(metadata_location, properties=dict(io.properties))


def metadata_files_below(root: Path) -> list[Path]:
    """Every Iceberg metadata file under a local folder: metadata.json, manifest lists,
    manifests."""
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".avro"))


def local_spellings(location: str) -> tuple[str, ...]:
    """The spellings of a local location a file could name it by."""
    path = location.removeprefix("file://")
    return (f"file://{path}", f"file:{path}", path)
