"""An Iceberg source's statistics files through ``ferry replicate`` (Hive → Hive): a Puffin
file and a partition statistics file arrive at the replica with the same bytes, named below
its location; a new snapshot's statistics, and statistics computed later for a snapshot the
replica has, copy only their own file; statistics removed at the source leave the replica's
metadata; housekeeping past the grace period deletes a statistics file only the replica's
earlier metadata named, and never one its current metadata names. The same across catalog
kinds and storage (Hive → Glue, Glue → Hive); a statistics file missing or truncated at the
source is one line naming it; statistics computed in DR go home with a failback.

Sources are committed through pyiceberg's catalog of their kind (``HiveCatalog`` on the
source metastore, ``GlueCatalog`` on the emulated Glue), their statistics files written as an
engine writes them (``tests/iceberg_statistics.py``); replicas are read through pyiceberg's
catalog of the replica's kind.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.table.puffin import PuffinFile

from ferry.iceberg.paths import canonical
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import metadata_location
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from ferry.storage import fs
from tests.conftest import NOW
from tests.helpers import Replicator, at, config_document, housekept, housekept_paths
from tests.iceberg_catalogs import glue_to_hive, hive_to_glue
from tests.iceberg_statistics import (
    add_partition_statistics,
    add_puffin_statistics,
    remove_partition_statistics,
)
from tests.iceberg_tables import SCHEMA, SPEC, read_rows, rows
from tests.integration.test_iceberg_failback import Sides
from tests.integration.test_iceberg_pipeline import event_ids, replication

pytestmark = pytest.mark.integration


def local(uri: str) -> Path:
    return Path(uri.removeprefix("file://").removeprefix("file:"))


def statistics_of(table) -> list:
    metadata = table.metadata
    return [*metadata.statistics, *metadata.partition_statistics]


def test_statistics_files_follow_the_source_and_housekeeping_keeps_the_ones_referenced(
    local_runtime, replica_catalog, tmp_path, unique
):
    database = f"stats_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    table = writer.create_table(f"{database}.history", schema=SCHEMA, partition_spec=SPEC)
    table.append(rows([1, 2, 3], ["eu", "us", "eu"]))
    first_puffin = add_puffin_statistics(table)
    add_partition_statistics(table)
    table = writer.load_table(f"{database}.history")
    target = tmp_path / "replica" / "history"
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    replicator = Replicator(
        config_document(local_runtime, [replication(database, target.as_uri())]),
        event_ids=event_ids("ferry-20261125t120000000z"),
        state=state,
    )
    replica_hive = HiveCatalog("replica", uri=local_runtime.replica_uri)

    def replicate() -> tuple[str, int]:
        (outcome,) = replicator.run()
        assert outcome.status != "FAILED", outcome.error
        return outcome.status, outcome.files

    assert replicate() == ("SUCCEEDED", 4)  # two data files, two statistics files

    replica = replica_hive.load_table(f"{database}_dr.history")
    assert [s.snapshot_id for s in replica.snapshots()] == [
        s.snapshot_id for s in table.snapshots()
    ]
    for theirs, ours in zip(statistics_of(table), statistics_of(replica), strict=True):
        assert ours.statistics_path.startswith(f"{target.as_uri()}/metadata/")
        assert (
            local(ours.statistics_path).read_bytes() == local(theirs.statistics_path).read_bytes()
        )
        assert ours.snapshot_id == theirs.snapshot_id
    (blob,) = PuffinFile(
        local(replica.metadata.statistics[0].statistics_path).read_bytes()
    ).footer.blobs
    assert blob.snapshot_id == first_puffin.snapshot_id
    old_puffin, old_partitions = (f.statistics_path for f in statistics_of(replica))
    stamp = local(old_puffin).stat().st_mtime_ns

    # A new snapshot with its statistics: its data file and its statistics file only.
    table.append(rows([4], ["ap"]))
    add_puffin_statistics(table, ndv=4)
    assert replicate() == ("SUCCEEDED", 2)
    # Partition statistics computed later for the snapshot the replica has: that file only.
    add_partition_statistics(writer.load_table(f"{database}.history"))
    assert replicate() == ("SUCCEEDED", 1)
    table = writer.load_table(f"{database}.history")
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert [
        (f.snapshot_id, local(f.statistics_path).read_bytes()) for f in statistics_of(replica)
    ] == [(f.snapshot_id, local(f.statistics_path).read_bytes()) for f in statistics_of(table)]
    assert local(old_puffin).stat().st_mtime_ns == stamp
    assert replicate() == ("UNCHANGED", 0)

    # The source removes the first snapshot's statistics: the replica's metadata follows.
    with table.update_statistics() as update:
        update.remove_statistics(first_puffin.snapshot_id)
    remove_partition_statistics(writer.load_table(f"{database}.history"), first_puffin.snapshot_id)
    assert replicate()[0] == "SUCCEEDED"
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert first_puffin.snapshot_id not in {f.snapshot_id for f in statistics_of(replica)}
    assert len(statistics_of(replica)) == 2

    # ... and sets the same Puffin file again: the replica names its copy again.
    with writer.load_table(f"{database}.history").update_statistics() as update:
        update.set_statistics(first_puffin)
    assert replicate()[0] == "SUCCEEDED"
    last = metadata_location(replica_catalog.get_table(f"{database}_dr", "history"))
    kept = CurrentReferences(last)
    assert old_puffin in kept and old_partitions not in kept

    within = replicator.housekeeping(clock=at(NOW + timedelta(days=1)))
    done = replicator.housekeeping(clock=at(NOW + timedelta(days=30)))

    assert within.output["housekeeping"]["deleted"] == 0
    assert done.status == "SUCCEEDED", (done.error, done.cause)
    (report,) = housekept(done.output["housekeeping"])
    assert {canonical(p) for p in housekept_paths(report, "deleted")} == {canonical(old_partitions)}
    assert not local(old_partitions).exists()
    assert local(old_puffin).read_bytes() == local(first_puffin.statistics_path).read_bytes()
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert all(local(f.statistics_path).exists() for f in statistics_of(replica))
    assert read_rows(replica) == read_rows(writer.load_table(f"{database}.history"))


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda path: path.unlink(), "that its metadata names is missing"),
        (lambda path: path.write_bytes(path.read_bytes()[:-1]), "bytes; its metadata says"),
    ],
    ids=["missing", "truncated"],
)
def test_a_statistics_file_missing_or_truncated_at_the_source_is_one_line_naming_it(
    local_runtime, replica_catalog, tmp_path, unique, damage, words
):
    database = f"stats_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    table = writer.create_table(f"{database}.history", schema=SCHEMA, partition_spec=SPEC)
    table.append(rows([1], ["eu"]))
    statistics = add_puffin_statistics(table)
    damage(local(statistics.statistics_path))
    target = tmp_path / "replica" / "history"
    replicator = Replicator(
        config_document(local_runtime, [replication(database, target.as_uri())])
    )

    (outcome,) = replicator.run()

    assert outcome.status == "FAILED", outcome
    assert outcome.error_type == "IcebergMetadataError"
    assert f"the statistics file {statistics.statistics_path}" in outcome.error
    assert words in outcome.error and "\n" not in outcome.error
    assert replica_catalog.get_table(f"{database}_dr", "history") is None
    assert not target.exists() or not any(target.rglob("*"))


@pytest.mark.parametrize(
    "build", [hive_to_glue, glue_to_hive], ids=["hive-to-glue", "glue-to-hive"]
)
def test_statistics_files_cross_catalog_kinds_and_storage(
    local_runtime, aws, s3_properties, tmp_path, unique, build
):
    """Local disk to S3 (Hive → Glue) and S3 to local disk (Glue → Hive)."""
    case = build(local_runtime, aws, s3_properties, tmp_path, unique)
    table = case.writer.load_table(case.source_identifier)
    add_puffin_statistics(table)
    add_partition_statistics(case.writer.load_table(case.source_identifier))
    table = case.writer.load_table(case.source_identifier)
    replicator = Replicator(case.document)

    (outcome,) = replicator.run()

    assert outcome.status == "SUCCEEDED", outcome.error
    replica = case.reader.load_table(case.replica_identifier)
    assert len(statistics_of(replica)) == 2
    for theirs, ours in zip(statistics_of(table), statistics_of(replica), strict=True):
        assert fs.normalise(ours.statistics_path).startswith(fs.normalise(case.target) + "/")
        assert fs.read_bytes(ours.statistics_path) == fs.read_bytes(theirs.statistics_path)
        assert ours.snapshot_id == theirs.snapshot_id == table.current_snapshot().snapshot_id
    (blob,) = PuffinFile(fs.read_bytes(replica.metadata.statistics[0].statistics_path)).footer.blobs
    assert blob.snapshot_id == table.current_snapshot().snapshot_id

    add_puffin_statistics(table, field_id=2, ndv=3)  # recomputed: a new file replaces it

    (outcome,) = replicator.run()

    assert (outcome.status, outcome.files) == ("SUCCEEDED", 1)
    table = case.writer.load_table(case.source_identifier)
    replica = case.reader.load_table(case.replica_identifier)
    assert [fs.read_bytes(f.statistics_path) for f in statistics_of(replica)] == [
        fs.read_bytes(f.statistics_path) for f in statistics_of(table)
    ]


def test_statistics_computed_in_dr_go_home_with_a_failback(
    local_runtime, source_catalog, replica_catalog, tmp_path, unique
):
    """After a failover, an engine in DR appends and computes the new snapshot's statistics
    on the promoted replica: the failback copies that Puffin file home with the snapshot,
    named below the source's location, and the forward replication has nothing to do."""
    sides = Sides(local_runtime, source_catalog, replica_catalog, tmp_path, unique, history=False)
    sides.replica().append(rows([4], ["eu"]))
    in_dr = add_puffin_statistics(sides.replica())

    result = sides.fail_back()

    assert result.written_home == (in_dr.snapshot_id,)
    assert result.files_copied == 2  # the append's data file and its statistics file
    source = sides.source()
    (home,) = source.metadata.statistics
    assert home.snapshot_id == in_dr.snapshot_id == source.current_snapshot().snapshot_id
    assert home.statistics_path.startswith(source.location().rstrip("/") + "/metadata/")
    assert local(home.statistics_path).read_bytes() == local(in_dr.statistics_path).read_bytes()
    (forward,) = sides.replicator.run()
    assert forward.status == "UNCHANGED", forward
