"""An Iceberg replica found up to date from the catalog entries alone
(``ferry.planning.iceberg_noop``), and every case where that must not be decided so: the
source moved, another writer committed to the replica, someone altered the replica's entry,
the config changed what the entry carries. Real metastores; the source's commits are
pyiceberg's ``HiveCatalog``'s, as an engine commits.

``tests/integration/test_noop_run_imports.py`` holds that the up-to-date run, as a person
runs it, imports no pyiceberg (it reads no metadata).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from pyiceberg.catalog.hive import HiveCatalog

from ferry.iceberg.recognise import (
    COMMITTED_METADATA_LOCATION,
    REGISTRATION,
    SOURCE_METADATA_LOCATION,
    metadata_location,
)
from ferry.storage import fs
from tests.helpers import Replicator, config_document
from tests.iceberg_tables import create_history_table, read_rows, rows

pytestmark = pytest.mark.integration


@pytest.fixture
def scene(local_runtime, tmp_path, unique):
    """A history table in the source metastore, replicated once to the replica metastore:
    the writer, the database, the replicator, the replica's target."""
    database = f"iceberg_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    create_history_table(writer, f"{database}.history")
    target = (tmp_path / "replica" / "history").as_uri()
    counter = itertools.count(1)
    replicator = Replicator(
        _document(local_runtime, database, target),
        event_ids=lambda: f"ferry-20261127t100000000z-{next(counter):08x}",
    )
    (first,) = replicator.run()
    assert first.status == "SUCCEEDED", first
    return writer, database, replicator, target


def _document(runtime, database: str, target: str, **replica) -> dict:
    return config_document(
        runtime,
        [
            {
                "source-table": {"database-name": database, "table-name": "history"},
                "replica-table": {
                    "database-name": f"{database}_dr",
                    "table-location": target,
                    **replica,
                },
            }
        ],
    )


def test_a_replica_committed_by_ferry_records_what_the_next_run_compares(
    scene, source_catalog, replica_catalog
):
    writer, database, replicator, _ = scene
    source = source_catalog.get_table(database, "history")
    replica = replica_catalog.get_table(f"{database}_dr", "history")

    (again,) = replicator.run()

    assert again.status == "UNCHANGED", again
    assert replica.parameters[SOURCE_METADATA_LOCATION] == metadata_location(source)
    assert replica.parameters[COMMITTED_METADATA_LOCATION] == metadata_location(replica)
    assert len(replica.parameters[REGISTRATION]) == 64
    assert replica_catalog.get_table(f"{database}_dr", "history") == replica


def test_a_source_that_moved_is_replicated_and_the_replica_is_complete(
    scene, source_catalog, replica_catalog, local_runtime
):
    writer, database, replicator, target = scene
    source_table = writer.load_table(f"{database}.history")
    source_table.append(rows([20, 21, 22], ["eu", "us", "eu"]))
    moved = metadata_location(source_catalog.get_table(database, "history"))

    (appended,) = replicator.run()

    assert appended.status == "SUCCEEDED", appended
    assert appended.files >= 1
    registered = replica_catalog.get_table(f"{database}_dr", "history")
    assert registered.parameters[SOURCE_METADATA_LOCATION] == moved
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    source_table = writer.load_table(f"{database}.history")
    assert replica.metadata.current_snapshot_id == source_table.metadata.current_snapshot_id
    assert read_rows(replica) == read_rows(source_table)
    # Every file the new snapshot added is at the replica, with the source's bytes.
    snapshot = source_table.metadata.current_snapshot()
    added = [
        task.file.file_path
        for task in source_table.scan(snapshot_id=snapshot.snapshot_id).plan_files()
        if task.file.file_path.rsplit("/", 1)[-1]
        not in {
            t.file.file_path.rsplit("/", 1)[-1]
            for t in source_table.scan(snapshot_id=snapshot.parent_snapshot_id).plan_files()
        }
    ]
    assert added
    replica_files = {
        t.file.file_path.rsplit("/", 1)[-1]: t.file.file_path for t in replica.scan().plan_files()
    }
    for path in added:
        copy = replica_files[path.rsplit("/", 1)[-1]]
        assert fs.normalise(copy).startswith(fs.normalise(target))
        assert fs.read_bytes(copy) == fs.read_bytes(path)

    (again,) = replicator.run()

    assert again.status == "UNCHANGED", again


def test_a_replica_another_writer_committed_to_is_refused_and_left_as_it_is(
    scene, replica_catalog, local_runtime
):
    _, database, replicator, _ = scene
    other = HiveCatalog("other", uri=local_runtime.replica_uri).load_table(f"{database}_dr.history")
    other.append(rows([90], ["eu"]))
    theirs = replica_catalog.get_table(f"{database}_dr", "history")

    (refused,) = replicator.run()

    assert refused.status == "FAILED", refused
    assert refused.error_type == "ReplicaGuardError"
    assert "committed to by another writer" in refused.error
    assert replica_catalog.get_table(f"{database}_dr", "history") == theirs


def test_a_replica_entry_altered_by_hand_is_registered_again(scene, replica_catalog):
    _, database, replicator, _ = scene
    registered = replica_catalog.get_table(f"{database}_dr", "history")
    columns = registered.storage.columns
    commented = (replace(columns[0], comment="written by hand"), *columns[1:])
    altered = replace(registered, storage=replace(registered.storage, columns=commented))
    replica_catalog.alter_table(altered)

    (repaired,) = replicator.run()

    assert repaired.status == "SUCCEEDED", (repaired.error_type, repaired.error)
    restored = replica_catalog.get_table(f"{database}_dr", "history")
    assert restored.storage.columns == columns
    assert metadata_location(restored) == metadata_location(registered)

    (again,) = replicator.run()

    assert again.status == "UNCHANGED", again


def test_a_config_that_changes_the_entry_is_registered_again(scene, replica_catalog, local_runtime):
    _, database, replicator, target = scene
    document = _document(local_runtime, database, target)
    document["table-replications"][0]["transform-options"] = {
        "table-properties": {"owner.team": "sales"}
    }
    changed = Replicator(document, event_ids=lambda: "ferry-20261127t110000000z-00000001")

    (outcome,) = changed.run()

    assert outcome.status == "SUCCEEDED", outcome
    registered = replica_catalog.get_table(f"{database}_dr", "history")
    assert registered.parameters["owner.team"] == "sales"


def test_a_replica_from_before_the_records_is_planned_from_its_metadata(
    scene, source_catalog, replica_catalog
):
    writer, database, replicator, _ = scene
    registered = replica_catalog.get_table(f"{database}_dr", "history")
    parameters = {
        k: v
        for k, v in registered.parameters.items()
        if k not in (SOURCE_METADATA_LOCATION, REGISTRATION)
    }
    replica_catalog.alter_table(replace(registered, parameters=parameters))

    (again,) = replicator.run()

    assert again.status == "UNCHANGED", again  # found so from the metadata
    unrecorded = replica_catalog.get_table(f"{database}_dr", "history")
    assert SOURCE_METADATA_LOCATION not in unrecorded.parameters  # not written for that alone

    writer.load_table(f"{database}.history").append(rows([30], ["us"]))
    (appended,) = replicator.run()

    assert appended.status == "SUCCEEDED", appended
    recorded = replica_catalog.get_table(f"{database}_dr", "history")
    source = source_catalog.get_table(database, "history")
    assert recorded.parameters[SOURCE_METADATA_LOCATION] == metadata_location(source)
    assert len(recorded.parameters[REGISTRATION]) == 64
