"""Statistics files of source Iceberg tables for the tests: a Puffin file and a partition
statistics file, written as an engine writes them and set in the table's metadata.

pyiceberg 0.12 reads Puffin files (``pyiceberg.table.puffin.PuffinFile``) and writes none, so
the Puffin file is written here by the specification: ``PFA1``, the blobs, then the footer
(``PFA1``, the footer payload as JSON, its length as a 4-byte little-endian integer, 4 bytes
of flags, ``PFA1``). Its blob is a theta sketch's place with the ``ndv`` property engines
read; the payload's bytes are opaque to everything here (and to Ferry, which copies the file
byte for byte). A partition statistics file is a Parquet file of one row per partition, by the
specification's schema. pyiceberg sets statistics with ``update_statistics`` and has the
partition statistics updates without an API for them: they are committed through the
catalog's ``commit_table``, as ``tests.iceberg_tables.add_position_delete`` commits a snapshot.
"""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import Table
from pyiceberg.table.statistics import BlobMetadata, PartitionStatisticsFile, StatisticsFile
from pyiceberg.table.update import RemovePartitionStatisticsUpdate, SetPartitionStatisticsUpdate

MAGIC = b"PFA1"
THETA = "apache-datasketches-theta-v1"


def puffin_bytes(blobs: list[tuple[dict, bytes]], properties: dict[str, str]) -> tuple[bytes, int]:
    """A Puffin file of ``blobs`` (each its footer metadata without offset and length, and
    its payload), and the size of its footer."""
    body = bytearray(MAGIC)
    described = []
    for metadata, payload in blobs:
        described.append({**metadata, "offset": len(body), "length": len(payload)})
        body += payload
    payload = json.dumps({"blobs": described, "properties": properties}).encode()
    footer = MAGIC + payload + len(payload).to_bytes(4, "little") + bytes(4) + MAGIC
    return bytes(body + footer), len(footer)


def metadata_folder(table: Table) -> str:
    """Where an engine writes the table's statistics files: its metadata folder."""
    return table.properties.get("write.metadata.path", f"{table.location()}/metadata").rstrip("/")


def add_puffin_statistics(table: Table, field_id: int = 1, ndv: int = 3) -> StatisticsFile:
    """Write a Puffin statistics file for the table's current snapshot (one theta blob of
    column ``field_id``) under its ``metadata/`` and set it in the table's metadata."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    blob = {
        "type": THETA,
        "fields": [field_id],
        "snapshot-id": snapshot.snapshot_id,
        "sequence-number": snapshot.sequence_number,
        "properties": {"ndv": str(ndv)},
    }
    data, footer_size = puffin_bytes(
        [(blob, f"theta sketch of {ndv}".encode())], {"created-by": "ferry tests"}
    )
    path = f"{metadata_folder(table)}/{snapshot.snapshot_id}-{uuid.uuid4()}.stats"
    with table.io.new_output(path).create() as stream:
        stream.write(data)
    statistics = StatisticsFile(
        snapshot_id=snapshot.snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(data),
        file_footer_size_in_bytes=footer_size,
        blob_metadata=[
            BlobMetadata(
                type=THETA,
                **{
                    "snapshot-id": snapshot.snapshot_id,
                    "sequence-number": snapshot.sequence_number,
                    "fields": [field_id],
                    "properties": {"ndv": str(ndv)},
                },
            )
        ],
    )
    with table.update_statistics() as update:
        update.set_statistics(statistics)
    return statistics


def add_partition_statistics(table: Table) -> PartitionStatisticsFile:
    """Write a partition statistics file (Parquet) for the table's current snapshot, one row
    per partition of its live data files, and set it in the table's metadata."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    counts: dict[tuple, list[int]] = {}
    for task in table.scan().plan_files():
        totals = counts.setdefault((task.file.spec_id, task.file.partition[0]), [0, 0, 0])
        totals[0] += task.file.record_count
        totals[1] += 1
        totals[2] += task.file.file_size_in_bytes
    statistics = pa.table(
        {
            "partition": pa.array([{"region": key[1]} for key in counts]),
            "spec_id": pa.array([key[0] for key in counts], pa.int32()),
            "data_record_count": pa.array([c[0] for c in counts.values()], pa.int64()),
            "data_file_count": pa.array([c[1] for c in counts.values()], pa.int32()),
            "total_data_file_size_in_bytes": pa.array([c[2] for c in counts.values()], pa.int64()),
        }
    )
    path = f"{metadata_folder(table)}/partition-stats-{snapshot.snapshot_id}-{uuid.uuid4()}.parquet"
    with table.io.new_output(path).create() as stream:
        pq.write_table(statistics, stream)
    partition_statistics = PartitionStatisticsFile(
        snapshot_id=snapshot.snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(table.io.new_input(path)),
    )
    update = SetPartitionStatisticsUpdate(partition_statistics=partition_statistics)
    table.catalog.commit_table(table, (), (update,))
    return partition_statistics


def remove_partition_statistics(table: Table, snapshot_id: int) -> None:
    """Remove the partition statistics of ``snapshot_id`` from the table's metadata."""
    update = RemovePartitionStatisticsUpdate(snapshot_id=snapshot_id)
    table.catalog.commit_table(table, (), (update,))
