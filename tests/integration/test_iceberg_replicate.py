"""Iceberg tables replicated between two local folders, read back with pyiceberg.

The source tables are written by pyiceberg into a SQLite catalog (``tests/iceberg_tables.py``):
appends, an overwrite, a copy-on-write delete, a merge-on-read position delete, a schema
change, a partition spec change, statistics and an expired snapshot. The replica is
registered in a catalog of its own and read as any Iceberg client reads it.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from ferry.iceberg.reading import read_manifest, read_manifest_list
from ferry.iceberg.table_replication import replicate_iceberg_table
from tests.iceberg_tables import (
    SCHEMA,
    SPEC,
    create_history_table,
    metadata_files_below,
    read_rows,
    rows,
    static_table,
)


@pytest.fixture
def source(tmp_path):
    folder = tmp_path / "source"
    folder.mkdir()
    catalog = SqlCatalog("source", uri=f"sqlite:///{folder}/catalog.db", warehouse=folder.as_uri())
    catalog.create_namespace("db")
    milestones = create_history_table(catalog, "db.history")
    return catalog, catalog.load_table("db.history"), milestones


@pytest.fixture
def replica_catalog(tmp_path):
    folder = tmp_path / "replica-catalog"
    folder.mkdir()
    catalog = SqlCatalog("replica", uri=f"sqlite:///{folder}/catalog.db", warehouse=folder.as_uri())
    catalog.create_namespace("db")
    return catalog


def files_below(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def source_path(table) -> str:
    return table.location().removeprefix("file://")


def assert_names_no_source(replica_root: Path, source_location: str) -> None:
    """Every metadata.json, manifest list, manifest and position delete file of the replica."""
    names = source_location.removeprefix("file://").encode()
    checked = metadata_files_below(replica_root)
    assert any(p.name.endswith(".metadata.json") for p in checked)
    for path in checked:
        assert names not in path.read_bytes(), f"{path} names the source"
    for path in replica_root.rglob("delete-*.parquet"):
        for value in pq.read_table(path).column("file_path").to_pylist():
            assert value.startswith(replica_root.as_uri()), value


def test_a_replica_reads_like_the_source_at_the_current_and_every_earlier_snapshot(
    source, replica_catalog, tmp_path
):
    catalog, table, milestones = source
    before = files_below(Path(source_path(table)))
    replica_root = tmp_path / "replica" / "history"

    result = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io
    )

    replica = replica_catalog.register_table("db.history", result.metadata_location)
    assert read_rows(replica) == read_rows(table)
    assert [r["id"] for r in read_rows(replica)] == [1, 6, 7, 8, 9]
    for name, snapshot_id in milestones.items():
        if name == "first append":  # expired at the source before the replication
            assert replica.metadata.snapshot_by_id(snapshot_id) is None
            continue
        assert read_rows(replica, snapshot_id) == read_rows(table, snapshot_id), name
    # The position delete removes id 4 only if its rewritten file names the replica's file.
    assert 4 not in [r["id"] for r in read_rows(replica, milestones["position delete"])]
    assert 4 in [r["id"] for r in read_rows(replica, milestones["copy-on-write delete"])]

    source_metadata, replica_metadata = table.metadata, replica.metadata
    assert replica_metadata.location == replica_root.as_uri()
    assert [s.snapshot_id for s in replica_metadata.snapshots] == [
        s.snapshot_id for s in source_metadata.snapshots
    ]
    assert [s.sequence_number for s in replica_metadata.snapshots] == [
        s.sequence_number for s in source_metadata.snapshots
    ]
    assert replica_metadata.schemas == source_metadata.schemas
    assert replica_metadata.partition_specs == source_metadata.partition_specs
    assert replica_metadata.sort_orders == source_metadata.sort_orders
    assert replica_metadata.refs == source_metadata.refs
    assert replica_metadata.snapshot_log == source_metadata.snapshot_log
    assert replica_metadata.table_uuid == source_metadata.table_uuid
    assert [
        Path(f.statistics_path.removeprefix("file://")).read_bytes()
        for f in replica_metadata.statistics
    ] == [
        Path(f.statistics_path.removeprefix("file://")).read_bytes()
        for f in source_metadata.statistics
    ]
    assert all(
        f.statistics_path.startswith(replica_root.as_uri()) for f in replica_metadata.statistics
    )
    assert result.rewritten_deletes and len(result.new_snapshot_ids) == len(
        source_metadata.snapshots
    )

    assert_names_no_source(replica_root, table.location())
    for snapshot in replica_metadata.snapshots:  # and through pyiceberg's own readers
        for manifest in read_manifest_list(replica.io, snapshot.manifest_list).records:
            assert manifest.manifest_path.startswith(f"{replica_root.as_uri()}/metadata/")
            for entry in read_manifest(replica.io, manifest.manifest_path).records:
                assert entry.data_file.file_path.startswith(replica_root.as_uri())
    assert files_below(Path(source_path(table))) == before  # the source is only read


def test_a_rerun_copies_nothing_and_a_new_snapshot_copies_only_its_own_files(source, tmp_path):
    catalog, table, _ = source
    replica_root = tmp_path / "replica" / "history"
    first = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io
    )
    written = files_below(replica_root)

    again = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io, first.metadata_location
    )
    assert not again.changed and again.metadata_location == first.metadata_location
    assert again.copied == () and again.metadata_files == ()
    assert files_below(replica_root) == written

    table.append(
        rows([10, 11], ["eu", "eu"]).append_column("amount", pa.array([None, None], pa.float64()))
    )
    table = catalog.load_table("db.history")
    added = {
        entry.data_file.file_path
        for manifest in table.current_snapshot().manifests(table.io)
        if manifest.added_snapshot_id == table.current_snapshot().snapshot_id
        for entry in manifest.fetch_manifest_entry(table.io)
    }

    incremental = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io, first.metadata_location
    )

    assert incremental.new_snapshot_ids == (table.current_snapshot().snapshot_id,)
    assert {c.source for c in incremental.copied} == added
    assert len(incremental.metadata_files) == 3  # one manifest, one manifest list, metadata.json
    assert set(files_below(replica_root)) - set(written) == {
        str(Path(p.removeprefix(replica_root.as_uri() + "/")))
        for p in [*incremental.metadata_files, *(c.target for c in incremental.copied)]
    }
    replica = static_table(incremental.metadata_location, table.io)
    assert read_rows(replica) == read_rows(table)
    assert replica.metadata.metadata_log[-1].metadata_file == first.metadata_location
    previous = static_table(first.metadata_location, table.io)  # a reader still on it
    assert [r["id"] for r in read_rows(previous)] == [1, 6, 7, 8, 9]
    assert_names_no_source(replica_root, table.location())


def test_source_history_rewritten_is_followed_and_dropped_files_go_to_housekeeping(
    source, tmp_path
):
    catalog, table, milestones = source
    replica_root = tmp_path / "replica" / "history"
    first = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io
    )
    previous = static_table(first.metadata_location, table.io)
    expired = milestones["second append"]
    retired_list = previous.metadata.snapshot_by_id(expired).manifest_list

    table.maintenance.expire_snapshots().by_id(expired).commit()
    with catalog.load_table("db.history").update_schema() as update:  # no new snapshot
        update.rename_column("amount", "price")
    table = catalog.load_table("db.history")

    result = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io, first.metadata_location
    )

    replica = static_table(result.metadata_location, table.io)
    assert replica.metadata.snapshot_by_id(expired) is None
    assert result.new_snapshot_ids == () and result.copied == ()
    assert replica.schema() == table.schema()
    assert read_rows(replica) == read_rows(table)
    assert retired_list in result.retired
    assert all(Path(p.removeprefix("file://")).exists() for p in result.retired)  # not deleted here
    assert not any(p.startswith(table.location()) for p in result.retired)


def test_a_format_version_1_table_is_replicated_with_version_1_files(tmp_path):
    catalog = SqlCatalog(
        "v1", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=(tmp_path / "source").as_uri()
    )
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.v1", schema=SCHEMA, partition_spec=SPEC, properties={"format-version": "1"}
    )
    table.append(rows([1, 2], ["eu", "us"]))
    first = table.current_snapshot().snapshot_id
    table.append(rows([3], ["eu"]))
    table.delete("id = 1")
    table = catalog.load_table("db.v1")
    replica_root = tmp_path / "replica" / "v1"

    result = replicate_iceberg_table(
        table.io, table.metadata_location, replica_root.as_uri(), table.io
    )

    replica = static_table(result.metadata_location, table.io)
    assert replica.metadata.format_version == 1
    assert (
        read_rows(replica)
        == read_rows(table)
        == [{"id": 2, "region": "us"}, {"id": 3, "region": "eu"}]
    )
    assert read_rows(replica, first) == read_rows(table, first)
    assert_names_no_source(replica_root, table.location())
