"""Iceberg tables whose properties put files outside their location: ``write.data.path``
(and the object-storage layout's hashed folders below it) and ``write.metadata.path``.

The source is written with pyiceberg's ``HiveCatalog`` on the source metastore; ``ferry
replicate`` gives the replica everything below its own location (those folders becoming its
``data/`` and ``metadata/``) and the replica is read with ``HiveCatalog`` on the replica
metastore.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.hive import HiveCatalog

from ferry.iceberg.recognise import metadata_location
from tests.helpers import Replicator, config_document
from tests.iceberg_statistics import add_puffin_statistics
from tests.iceberg_tables import SCHEMA, SPEC, add_position_delete, read_rows, rows
from tests.integration.test_iceberg_pipeline import replication

pytestmark = pytest.mark.integration


def test_folders_outside_the_location_are_replicated_below_the_replicas_own(
    local_runtime, replica_catalog, tmp_path, unique
):
    location, data, meta = (tmp_path / name for name in ("table", "lake-data", "lake-meta"))
    database = f"layout_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri)
    writer.create_namespace(database)
    table = writer.create_table(
        f"{database}.history",
        schema=SCHEMA,
        partition_spec=SPEC,
        location=location.as_uri(),
        properties={
            "write.data.path": data.as_uri(),
            "write.metadata.path": meta.as_uri(),
            "write.object-storage.enabled": "true",
        },
    )
    table.append(rows([1, 2, 3], ["eu", "us", "eu"]))
    first = table.current_snapshot().snapshot_id
    table.append(rows([4, 5], ["ap", "us"]))
    table = add_position_delete(table, "ap", [0])
    statistics = add_puffin_statistics(table)  # in the metadata folder, as engines write it
    assert statistics.statistics_path.startswith(meta.as_uri() + "/")
    source_files = {p for p in tmp_path.rglob("*") if p.is_file()}
    # pyiceberg wrote data and metadata to the two folders; the hand-written delete, to the
    # location's data/ and metadata/.
    for folder in (data, meta, location):
        assert any(folder in p.parents for p in source_files), folder
    target = tmp_path / "replica" / "history"
    replicator = Replicator(
        config_document(local_runtime, [replication(database, target.as_uri())])
    )

    (outcome,) = replicator.run()

    assert outcome.status == "SUCCEEDED", outcome
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert read_rows(replica) == read_rows(table)
    assert read_rows(replica, first) == read_rows(table, first)
    registered = metadata_location(replica_catalog.get_table(f"{database}_dr", "history"))
    assert registered.startswith(target.as_uri() + "/metadata/")
    assert replica.properties["write.data.path"] == target.as_uri() + "/data"
    assert replica.properties["write.metadata.path"] == target.as_uri() + "/metadata"
    (copy,) = replica.metadata.statistics
    assert copy.statistics_path.startswith(target.as_uri() + "/metadata/")
    assert Path(copy.statistics_path.removeprefix("file:").removeprefix("//")).read_bytes() == (
        Path(statistics.statistics_path.removeprefix("file:").removeprefix("//")).read_bytes()
    )
    # Every data file has its copy below the replica's data/, in the same hashed folders.
    copied = {p.relative_to(target / "data") for p in (target / "data").rglob("*.parquet")}
    originals = {p.relative_to(data) for p in data.rglob("*.parquet")}
    assert originals <= copied
    # No replica file names a source folder.
    for path in (p for p in target.rglob("*") if p.is_file()):
        text = path.read_bytes()
        for source in (location, data, meta):
            assert str(source).encode() not in text, f"{path} names {source}"
    assert {p for p in tmp_path.rglob("*") if p.is_file() and target not in p.parents} == (
        source_files
    )

    (again,) = replicator.run()

    assert again.status == "UNCHANGED", again


def test_a_file_outside_every_folder_of_the_source_is_refused_naming_it(
    local_runtime, replica_catalog, tmp_path, unique
):
    database = f"layout_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri)
    writer.create_namespace(database)
    table = writer.create_table(
        f"{database}.history", schema=SCHEMA, location=(tmp_path / "table").as_uri()
    )
    table.append(rows([1], ["eu"]))
    # Data written while the data path was elsewhere, then the property dropped.
    with table.transaction() as transaction:
        transaction.set_properties({"write.data.path": (tmp_path / "old-data").as_uri()})
    table = writer.load_table(f"{database}.history")
    table.append(rows([2], ["us"]))
    with table.transaction() as transaction:
        transaction.remove_properties("write.data.path")
    target = tmp_path / "replica" / "history"
    replicator = Replicator(
        config_document(local_runtime, [replication(database, target.as_uri())])
    )

    (outcome,) = replicator.run()

    assert outcome.status == "FAILED", outcome
    assert outcome.error_type == "IcebergMetadataError"
    assert str(tmp_path / "old-data") in outcome.error and "\n" not in outcome.error
    assert replica_catalog.get_table(f"{database}_dr", "history") is None
    assert not Path(target).exists() or not any(Path(target).rglob("*.json"))
