"""An Iceberg source that rewrites its history — a compaction, a rollback, the snapshots
left behind expired — replicated with ``ferry replicate``: the replica follows (same current
snapshot, same rows at every snapshot it keeps), and the files it no longer references are
deleted by housekeeping after the grace period, and nothing else.

The source is written with pyiceberg's ``HiveCatalog`` on the source metastore, as an engine
commits; the replica is read with ``HiveCatalog`` on the replica metastore.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyiceberg.catalog.hive import HiveCatalog

from ferry.iceberg.paths import canonical
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import metadata_location
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from tests.conftest import NOW
from tests.helpers import (
    Replicator,
    at,
    config_document,
    files_below,
    housekept,
    housekept_paths,
)
from tests.iceberg_catalogs import glue_to_hive
from tests.iceberg_tables import SCHEMA, SPEC, read_rows, rows
from tests.integration.test_iceberg_pipeline import event_ids, replication

pytestmark = pytest.mark.integration


def live_data_files(table) -> set[str]:
    return {task.file.file_path for task in table.scan().plan_files()}


def test_a_compaction_and_a_rollback_at_the_source_are_followed_and_dropped_files_retired(
    local_runtime, replica_catalog, tmp_path, unique
):
    database = f"history_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    table = writer.create_table(f"{database}.events", schema=SCHEMA, partition_spec=SPEC)
    for ids in ([1, 2], [3], [4, 5]):
        table.append(rows(ids, ["eu"] * len(ids)))
    table.append(rows([6], ["us"]))
    target = tmp_path / "replica" / "events"
    entry = replication(database, target.as_uri())
    entry["source-table"]["table-name"] = "events"
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    replicator = Replicator(
        config_document(local_runtime, [entry]),
        event_ids=event_ids("ferry-20261125t120000000z"),
        state=state,
    )
    assert replicator.run()[0].status == "SUCCEEDED"
    replica_hive = HiveCatalog("replica", uri=local_runtime.replica_uri)
    first = metadata_location(replica_catalog.get_table(f"{database}_dr", "events"))

    # A compaction: the three small files of eu become one, the rows stay.
    before_compaction = table.current_snapshot().snapshot_id
    eu = table.scan(row_filter="region = 'eu'").to_arrow()
    table.overwrite(eu, overwrite_filter="region = 'eu'")
    compacted = table.current_snapshot().snapshot_id
    assert len(live_data_files(table)) == 2
    # A bad append, rolled back: the table's current snapshot is the compaction again.
    table.append(rows([99], ["us"]))
    bad = table.current_snapshot().snapshot_id
    table.manage_snapshots().rollback_to_snapshot(compacted).commit()
    table = writer.load_table(f"{database}.events")
    assert table.current_snapshot().snapshot_id == compacted

    assert replicator.run()[0].status == "SUCCEEDED"

    replica = replica_hive.load_table(f"{database}_dr.events")
    assert replica.current_snapshot().snapshot_id == compacted
    assert read_rows(replica) == read_rows(table)
    assert 99 not in {r["id"] for r in read_rows(replica)}
    assert read_rows(replica, bad) == read_rows(table, bad)  # kept until the source expires it
    assert read_rows(replica, before_compaction) == read_rows(table, before_compaction)
    assert len(live_data_files(replica)) == 2

    # The source expires everything before the compaction and the rolled-back append.
    table.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in table.snapshots() if s.snapshot_id != compacted]
    ).commit()
    table = writer.load_table(f"{database}.events")
    assert [s.snapshot_id for s in table.snapshots()] == [compacted]

    assert replicator.run()[0].status == "SUCCEEDED"

    last = metadata_location(replica_catalog.get_table(f"{database}_dr", "events"))
    replica = replica_hive.load_table(f"{database}_dr.events")
    assert [s.snapshot_id for s in replica.snapshots()] == [compacted]
    assert read_rows(replica) == read_rows(table)
    # What only the dropped history referenced: the small eu files, the bad append's file,
    # their manifests and lists. Housekeeping deletes exactly that after the grace period.
    retired = CurrentReferences(first).paths - CurrentReferences(last).paths
    data_files = {canonical(str(p)) for p in (target / "data").rglob("*.parquet")}
    assert retired and all(p.startswith(canonical(target.as_uri()) + "/") for p in retired)
    files = {canonical(p) for p in files_below(target.as_uri())}
    kept = {canonical(p) for p in CurrentReferences(last).paths}

    within = replicator.housekeeping(clock=at(NOW + timedelta(days=1)))
    done = replicator.housekeeping(clock=at(NOW + timedelta(days=30)))

    assert within.output["housekeeping"]["deleted"] == 0
    assert done.status == "SUCCEEDED", (done.error, done.cause)
    (report,) = housekept(done.output["housekeeping"])
    deleted = {canonical(p) for p in housekept_paths(report, "deleted")}
    assert deleted and deleted <= files - kept
    assert {canonical(p) for p in files_below(target.as_uri())} == files - deleted
    assert data_files - kept and data_files - kept <= deleted  # the small files are gone
    replica = replica_hive.load_table(f"{database}_dr.events")
    assert read_rows(replica) == read_rows(table)
    left = {canonical(p) for p in files_below(target.as_uri())}
    assert {canonical(p) for p in live_data_files(replica)} <= left


def test_a_column_moved_at_a_glue_source_a_hive_replica_refuses_is_one_line_naming_its_setting(
    local_runtime, aws, s3_properties, tmp_path, unique
):
    """A Hive metastore compares a table's new columns with its old ones by position unless
    ``hive.metastore.disallow.incompatible.col.type.changes`` is false (which Iceberg's own
    HiveCatalog needs for the same change); Glue does not. A column moved at a Glue source
    fails the run with one line naming that setting, and the Hive replica stays readable at
    its previous version."""
    case = glue_to_hive(local_runtime, aws, s3_properties, tmp_path, unique)
    replicator = Replicator(case.document)
    assert replicator.run()[0].status == "SUCCEEDED"
    before = metadata_location(replica_catalog_table(case))
    expected = read_rows(case.reader.load_table(case.replica_identifier))
    table = case.writer.load_table(case.source_identifier)
    with table.update_schema() as update:
        update.move_first("amount")  # by position: id's bigint would become region's string

    (outcome,) = replicator.run()

    assert outcome.status == "FAILED", outcome
    assert outcome.error_type == "CatalogError"
    assert "hive.metastore.disallow.incompatible.col.type.changes" in outcome.error
    assert "\n" not in outcome.error
    assert metadata_location(replica_catalog_table(case)) == before
    assert read_rows(case.reader.load_table(case.replica_identifier)) == expected


def replica_catalog_table(case):
    return case.replica.get_table(case.replica_database, "history")
