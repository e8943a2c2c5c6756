"""An Iceberg table through the pipeline's steps, driven by ``ferry replicate``'s in-process
driver: Hive metastore to Hive metastore, the replica read with pyiceberg's ``HiveCatalog``.

The source's history is committed with pyiceberg's ``HiveCatalog`` on the source metastore,
as an engine commits.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from pyiceberg.catalog.hive import HiveCatalog

from ferry.commands.plan import run_plan
from ferry.core import faults
from ferry.iceberg.paths import canonical
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import (
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    TABLE_TYPE,
    metadata_location,
)
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from ferry.storage import fs
from tests.conftest import NOW
from tests.helpers import (
    Replicator,
    at,
    config_document,
    files_below,
    housekept,
    housekept_paths,
)
from tests.iceberg_tables import create_history_table, metadata_files_below, read_rows, rows

pytestmark = pytest.mark.integration


def event_ids(prefix: str):
    counter = itertools.count(1)
    return lambda: f"{prefix}-{next(counter):08x}"


@pytest.fixture
def iceberg_source(local_runtime, tmp_path, unique):
    """A history table committed by pyiceberg through the source metastore: the writer
    (pyiceberg's ``HiveCatalog``), the table's identifier, its milestones."""
    database = f"iceberg_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    milestones = create_history_table(writer, f"{database}.history")
    return writer, database, milestones


def move_source(source_catalog, database: str, new_metadata: str) -> None:
    """Point the source metastore's table at a new metadata file (an engine's commit)."""
    table = source_catalog.get_table(database, "history")
    parameters = {
        **table.parameters,
        PREVIOUS_METADATA_LOCATION: table.parameters[METADATA_LOCATION],
        METADATA_LOCATION: new_metadata,
    }
    source_catalog.alter_table(replace(table, parameters=parameters))


def replication(database: str, target: str, **source) -> dict:
    return {
        "source-table": {"database-name": database, "table-name": "history", **source},
        "replica-table": {"database-name": f"{database}_dr", "table-location": target},
    }


def test_an_iceberg_table_replicates_through_the_steps_hive_to_hive(
    local_runtime, replica_catalog, iceberg_source, tmp_path
):
    writer, database, milestones = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    replicator = Replicator(document, event_ids=event_ids("ferry-20261125t080000000z"))
    replica_hive = HiveCatalog("replica", uri=local_runtime.replica_uri)
    source_table = writer.load_table(f"{database}.history")

    (outcome,) = replicator.run()

    assert outcome.status == "SUCCEEDED", outcome
    registered = replica_catalog.get_table(f"{database}_dr", "history")
    assert registered.parameters[TABLE_TYPE] == "ICEBERG"
    assert fs.normalise(registered.location) == fs.normalise(target)
    first = metadata_location(registered)
    assert first.startswith(target + "/metadata/00000-")
    assert PREVIOUS_METADATA_LOCATION not in registered.parameters
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert read_rows(replica) == read_rows(source_table)
    earlier = milestones["position delete"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    # No snapshot folder: the replica's own files are at its table location, none names the
    # source.
    written = metadata_files_below(tmp_path / "replica" / "history")
    source_path = source_table.location().removeprefix("file://").removeprefix("file:")
    assert written and all(source_path.encode() not in p.read_bytes() for p in written)

    # A re-run with no source change copies and writes nothing.
    (again,) = replicator.run()

    assert again.status == "UNCHANGED", again
    assert metadata_files_below(tmp_path / "replica" / "history") == written
    assert metadata_location(replica_catalog.get_table(f"{database}_dr", "history")) == first

    # A new source version: its append arrives, the previous replica version is kept.
    source_table.append(rows([10, 11], ["eu", "us"]))

    (appended,) = replicator.run()

    assert appended.status == "SUCCEEDED", appended
    moved = replica_catalog.get_table(f"{database}_dr", "history")
    assert moved.parameters[PREVIOUS_METADATA_LOCATION] == first
    assert metadata_location(moved).startswith(target + "/metadata/00001-")
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert read_rows(replica) == read_rows(source_table)
    assert {r["id"] for r in read_rows(replica)} >= {10, 11}
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)


@pytest.mark.parametrize(
    "point",
    [
        # Commit, after writing the manifest lists and before the metadata.json.
        "commit.metadata",
        # Commit, after writing every metadata file, at the catalog's claim.
        "commit.claimed",
    ],
)
def test_a_failed_iceberg_commit_leaves_the_previous_version_and_a_rerun_converges(
    local_runtime, replica_catalog, iceberg_source, tmp_path, point
):
    writer, database, _ = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    replicator = Replicator(document, event_ids=event_ids("ferry-20261125t090000000z"))
    replica_hive = HiveCatalog("replica", uri=local_runtime.replica_uri)
    (first,) = replicator.run()
    assert first.status == "SUCCEEDED", first
    before = metadata_location(replica_catalog.get_table(f"{database}_dr", "history"))
    files_before = set(metadata_files_below(tmp_path / "replica" / "history"))
    source_table = writer.load_table(f"{database}.history")
    source_table.append(rows([20], ["ap"]))

    with faults.armed(faults.Fault(point, error="CatalogError")):
        (failed,) = replicator.run()

    assert failed.status == "FAILED", failed
    current = replica_catalog.get_table(f"{database}_dr", "history")
    assert metadata_location(current) == before
    # The failed run's metadata files (its manifests, the copier's; its lists and any
    # metadata.json, Commit's) are gone; the replica reads its previous version.
    assert set(metadata_files_below(tmp_path / "replica" / "history")) == files_before
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert 20 not in {r["id"] for r in read_rows(replica)}

    (rerun,) = replicator.run()

    assert rerun.status == "SUCCEEDED", rerun
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert read_rows(replica) == read_rows(source_table)


@pytest.mark.parametrize(
    ("extra", "source", "error"),
    [
        ({"replication-mode": "METADATA_MIRROR"}, {}, "replication-mode FULL only"),
        ({"replication-mode": "FULL_OVERWRITE"}, {}, "replication-mode FULL only"),
        ({}, {"partition-filter": "region = 'eu'"}, "partition-filter and partition-limit"),
    ],
)
def test_modes_that_make_no_sense_for_iceberg_are_refused_with_one_line(
    local_runtime, replica_catalog, iceberg_source, tmp_path, extra, source, error
):
    _, database, _ = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    entry = {**replication(database, target, **source), **extra}
    replicator = Replicator(config_document(local_runtime, [entry]))

    (outcome,) = replicator.run()

    assert outcome.status == "FAILED"
    assert outcome.error_type == "ReplicationModeError"
    assert error in outcome.error and "\n" not in outcome.error
    assert replica_catalog.get_table(f"{database}_dr", "history") is None


def test_housekeeping_and_the_vacuum_leave_every_file_of_an_iceberg_replica(
    local_runtime, iceberg_source, tmp_path
):
    """The replica has no snapshot folders: its files are below ``data/`` and ``metadata/``
    of its table location, which neither the ledger (nothing superseded: the location stays)
    nor the vacuum (no event-id folder) takes for a snapshot."""
    writer, database, milestones = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    replicator = Replicator(document, event_ids=event_ids("ferry-20261125t100000000z"), state=state)
    assert replicator.run()[0].status == "SUCCEEDED"
    source_table = writer.load_table(f"{database}.history")
    source_table.append(rows([40], ["eu"]))
    assert replicator.run()[0].status == "SUCCEEDED"
    replica_files = files_below(target)

    for request in ({"vacuum": True}, {"deleteOrphans": True}):
        execution = replicator.housekeeping(clock=at(NOW + timedelta(days=30)), **request)
        assert execution.status == "SUCCEEDED", (execution.error, execution.cause)

    assert files_below(target) == replica_files
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert read_rows(replica) == read_rows(source_table)
    earlier = milestones["second append"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)


def test_housekeeping_deletes_exactly_what_only_superseded_metadata_or_a_failed_run_left(
    local_runtime, replica_catalog, iceberg_source, tmp_path
):
    """Snapshots expired at the source leave files only the replica's superseded metadata
    referenced; a run failed at Commit leaves its copies. Past the grace period housekeeping
    deletes exactly those (a dry run first lists them and deletes nothing); a file Ferry did
    not write below the location stays; the replica reads at every snapshot it keeps."""
    writer, database, milestones = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    replicator = Replicator(document, event_ids=event_ids("ferry-20261125t110000000z"), state=state)
    assert replicator.run()[0].status == "SUCCEEDED"
    first = metadata_location(replica_catalog.get_table(f"{database}_dr", "history"))
    foreign = [tmp_path / "replica" / "history" / "data" / "theirs.parquet"]
    foreign.append(tmp_path / "replica" / "history" / "notes.txt")
    for path in foreign:
        path.write_bytes(b"not Ferry's")

    # The source expires two snapshots: their files leave the replica's metadata.
    source_table = writer.load_table(f"{database}.history")
    expired = [milestones["second append"], milestones["overwrite"]]
    source_table.maintenance.expire_snapshots().by_ids(expired).commit()
    assert replicator.run()[0].status == "SUCCEEDED"
    second = metadata_location(replica_catalog.get_table(f"{database}_dr", "history"))
    retired = CurrentReferences(first).paths - CurrentReferences(second).paths
    assert retired and all(p.startswith(canonical(target) + "/") for p in retired)

    # A run that fails at Commit leaves its copied data files.
    before_failure = {canonical(p) for p in files_below(target)}
    failed_table = writer.load_table(f"{database}.history")
    failed_table.append(rows([50, 51], ["eu", "us"]))
    with faults.armed(faults.Fault("commit.claimed", error="CatalogError")):
        assert replicator.run()[0].status == "FAILED"
    left = {canonical(p) for p in files_below(target)} - before_failure
    assert left and all("/data/" in p for p in left)
    expected = retired | left
    files = files_below(target)

    within = replicator.housekeeping(clock=at(NOW + timedelta(days=1)))
    dry = replicator.housekeeping(clock=at(NOW + timedelta(days=30)), dryRun=True)

    assert within.status == dry.status == "SUCCEEDED", (dry.error, dry.cause)
    assert within.output["housekeeping"]["deleted"] == 0
    (table,) = housekept(dry.output["housekeeping"])
    assert {canonical(p) for p in housekept_paths(table, "would delete")} == expected
    assert files_below(target) == files

    done = replicator.housekeeping(clock=at(NOW + timedelta(days=30)))

    assert done.status == "SUCCEEDED", (done.error, done.cause)
    (table,) = housekept(done.output["housekeeping"])
    assert {canonical(p) for p in housekept_paths(table, "deleted")} == expected
    assert {canonical(p) for p in files_below(target)} == {canonical(p) for p in files} - expected
    assert all(path.read_bytes() == b"not Ferry's" for path in foreign)
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert metadata_location(replica_catalog.get_table(f"{database}_dr", "history")) == second
    assert read_rows(replica) == read_rows(source_table)
    for snapshot in replica.metadata.snapshots:
        assert read_rows(replica, snapshot.snapshot_id) == read_rows(
            source_table, snapshot.snapshot_id
        )

    # Nothing left to delete; the failed append arrives with the next run.
    again = replicator.housekeeping(clock=at(NOW + timedelta(days=31)))
    assert again.output["housekeeping"]["deleted"] == 0
    assert replicator.run()[0].status == "SUCCEEDED"
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert read_rows(replica) == read_rows(failed_table)


def test_ferry_plan_says_which_snapshots_an_iceberg_replica_lacks(
    local_runtime, iceberg_source, tmp_path, capsys
):
    writer, database, _ = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    replicator = Replicator(document, event_ids=event_ids("ferry-20261125t120000000z"))
    assert replicator.run()[0].status == "SUCCEEDED"
    source_table = writer.load_table(f"{database}.history")
    for ids in ([60, 61], [62]):
        source_table.append(rows(ids, ["eu", "us"][: len(ids)]))
    new = [s for s in source_table.snapshots()][-2:]
    files = sum(int(s.summary["added-data-files"]) for s in new)
    size = sum(int(s.summary["added-files-size"]) for s in new)
    written = metadata_files_below(tmp_path / "replica" / "history")
    capsys.readouterr()

    assert run_plan(replicator.config_path, as_json=True) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert run_plan(replicator.config_path) == 0
    human = capsys.readouterr().out

    assert table["kind"] == "Iceberg table" and not table["unchanged"]
    assert (table["files"], table["bytes"]) == (files, size) == (3, size)
    iceberg = table["iceberg"]
    assert iceberg["snapshotIds"] == [s.snapshot_id for s in new]
    assert iceberg["snapshotsToAdd"] == 2
    # Each append: one new manifest and one manifest list; then the metadata.json.
    assert iceberg["metadataFiles"] == 5
    assert iceberg["manifestRewrites"] == 2  # the copier's part; Commit writes the rest
    ids = ", ".join(str(s.snapshot_id) for s in new)
    assert "would copy 3 files, " in human
    assert (
        f"Iceberg: the replica lacks 2 snapshots ({ids}); would write 5 metadata files "
        "(2 manifests rewritten by the copier)"
    ) in human
    assert metadata_files_below(tmp_path / "replica" / "history") == written  # wrote nothing

    # Up to date: unchanged.
    assert replicator.run()[0].status == "SUCCEEDED"
    capsys.readouterr()
    assert run_plan(replicator.config_path) == 0
    assert "unchanged: nothing to copy or alter" in capsys.readouterr().out


def test_a_reader_scanning_the_replica_during_replications_sees_one_source_version(
    local_runtime, iceberg_source, tmp_path
):
    """A pyiceberg reader loads and scans the replica again and again (a thread) while
    incremental replications commit: every scan succeeds and returns exactly the rows the
    source had at one of its versions, never a mix."""
    writer, database, _ = iceberg_source
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(local_runtime, [replication(database, target)])
    replicator = Replicator(document, event_ids=event_ids("ferry-20261125t130000000z"))
    assert replicator.run()[0].status == "SUCCEEDED"
    source_table = writer.load_table(f"{database}.history")
    versions = [rows_of(read_rows(source_table))]
    scans: list[tuple] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        replica = HiveCatalog("reader", uri=local_runtime.replica_uri)
        while not stop.is_set():
            try:
                scans.append(rows_of(read_rows(replica.load_table(f"{database}_dr.history"))))
            except BaseException as error:  # noqa: BLE001 - every failure is the finding
                failures.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for run in range(4):
            source_table.append(rows([100 + 2 * run, 101 + 2 * run], ["eu", "us"]))
            if run == 2:
                source_table.delete(f"id = {100 + 2 * run}")  # copy-on-write: a file replaced
            source_table = writer.load_table(f"{database}.history")
            versions.append(rows_of(read_rows(source_table)))
            assert replicator.run()[0].status == "SUCCEEDED"
        time.sleep(0.5)  # a few scans of the last version too
    finally:
        stop.set()
        reader.join(timeout=60)

    assert not failures, failures[:3]
    assert len(scans) >= 5
    assert all(scan in versions for scan in scans)
    assert len(set(scans)) >= 2  # the reader saw versions change under it
    assert scans[-1] == versions[-1]


def rows_of(table_rows: list[dict]) -> tuple:
    """A version's rows, comparable whatever order a scan returns them in."""
    return tuple(sorted(json.dumps(row, sort_keys=True, default=str) for row in table_rows))
