"""An Iceberg replica with history under faults at every step (``ferry replicate``'s driver,
Hive → Hive): the replica stays readable at its previous snapshot (or its new one, for a
fault after Commit), a re-run converges and a further one writes nothing, and housekeeping
past the grace period leaves exactly the files the replica's current metadata references.

One source table is shared by the module: registered in the source metastore at a version
N (before a position delete), and moved by each test to its current version N+1 (the
position delete, a schema change, a spec change, statistics, an expired snapshot), so that
the run rewrites delete files, manifests and manifest lists.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import timedelta

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable, Table

from ferry.core import faults
from ferry.iceberg.paths import canonical
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import metadata_location
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from ferry.storage import fs
from tests.conftest import NOW
from tests.helpers import Replicator, at, config_document, files_below
from tests.iceberg_tables import create_history_table, read_rows
from tests.integration.test_iceberg_pipeline import move_source

pytestmark = pytest.mark.integration

_tables = itertools.count(1)


@dataclass(frozen=True)
class HistorySource:
    """The shared source: its SQLite writer, its database in the source metastore, and the
    metadata files of its two versions."""

    database: str
    before: str  # version N: up to the copy-on-write delete
    after: str  # version N+1: the source's current metadata
    milestones: dict[str, int]

    def table(self, location: str) -> Table:
        return StaticTable.from_metadata(location)


def create_history_source(local_runtime, folder) -> HistorySource:
    """The history table written in ``folder``, registered in the source metastore at N."""
    writer = SqlCatalog("writer", uri=f"sqlite:///{folder}/catalog.db", warehouse=folder.as_uri())
    writer.create_namespace("db")
    milestones = create_history_table(writer, "db.history")
    table = writer.load_table("db.history")
    before = next(
        entry.metadata_file
        for entry in reversed(table.metadata.metadata_log)
        if StaticTable.from_metadata(entry.metadata_file).metadata.current_snapshot_id
        == milestones["copy-on-write delete"]
    )
    database = f"iceberg_faults_{folder.name.replace('-', '_')}".lower()
    source = HiveCatalog("source", uri=local_runtime.source_uri)
    source.create_namespace(database)
    source.register_table(f"{database}.history", before)
    return HistorySource(database, before, table.metadata_location, milestones)


@pytest.fixture(scope="module")
def history_source(local_runtime, tmp_path_factory) -> HistorySource:
    return create_history_source(local_runtime, tmp_path_factory.mktemp("iceberg-source"))


@pytest.fixture
def history(history_source, source_catalog, local_runtime, tmp_path):
    """A replica at version N of the shared source (the source put back there first), with
    its state store; the source then moved to N+1."""
    source = history_source
    move_source(source_catalog, source.database, source.before)
    replica_database = f"{source.database}_dr{next(_tables)}"
    target = (tmp_path / "replica" / "history").as_uri()
    entry = {
        "source-table": {"database-name": source.database, "table-name": "history"},
        "replica-table": {"database-name": replica_database, "table-location": target},
    }
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    counter = itertools.count(1)
    replicator = Replicator(
        config_document(local_runtime, [entry]),
        event_ids=lambda: f"ferry-20261121t083000000z-{next(counter):08x}",
        state=state,
    )
    (first,) = replicator.run()
    assert first.status == "SUCCEEDED", first
    move_source(source_catalog, source.database, source.after)
    return Replica(
        replicator, target, replica_database, HiveCatalog("replica", uri=local_runtime.replica_uri)
    )


@dataclass
class Replica:
    """A replica as the tests read it: its location, and pyiceberg's replica catalog."""

    replicator: Replicator | None
    target: str
    database: str
    catalog: Catalog

    def load(self) -> Table:
        return self.catalog.load_table(f"{self.database}.history")


def assert_complete(replica: Replica) -> None:
    """Every file the replica's current metadata references is there."""
    current = CurrentReferences(replica.load().metadata_location).paths
    present = {canonical(path) for path in files_below(replica.target)}
    assert current - present == set()


def assert_reads_as(replica: Replica, source: Table) -> None:
    """The replica reads the source's rows now and at every snapshot it keeps."""
    table = replica.load()
    assert table.metadata.current_snapshot_id == source.metadata.current_snapshot_id
    assert read_rows(table) == read_rows(source)
    for snapshot in table.metadata.snapshots:
        assert read_rows(table, snapshot.snapshot_id) == read_rows(source, snapshot.snapshot_id)


@pytest.mark.parametrize(
    ("fault", "committed"),
    [
        # Plan, its commit staged and its intent ledgered, before its plan document.
        (faults.Fault("plan.planned", error="CatalogError"), False),
        # The copy, after its first file.
        (faults.Fault("copy.file", error="TargetNotWritableError", skip=1, times=99), False),
        # Commit, after the manifest lists and before the metadata.json.
        (faults.Fault("commit.metadata", error="CatalogError"), False),
        (faults.Fault("commit.claimed", error="CatalogError"), False),
        # After Commit: the replica is at N+1.
        (faults.Fault("notify.success", times=99), True),
    ],
    ids=lambda value: value.point if isinstance(value, faults.Fault) else None,
)
def test_a_fault_at_any_step_leaves_a_readable_replica_and_a_rerun_converges(
    history, history_source, replica_catalog, fault, committed
):
    replica, source = history, history_source
    before = replica.load().metadata_location
    n, n_plus_1 = source.table(source.before), source.table(source.after)

    with faults.armed(fault):
        (failed,) = replica.replicator.run()

    assert failed.status == "FAILED", failed
    registered = metadata_location(replica_catalog.get_table(replica.database, "history"))
    if committed:
        assert registered != before
        assert_reads_as(replica, n_plus_1)
    else:
        assert registered == before
        assert_reads_as(replica, n)
    assert_complete(replica)

    (rerun,) = replica.replicator.run()

    assert rerun.status == ("UNCHANGED" if committed else "SUCCEEDED"), rerun
    assert_reads_as(replica, n_plus_1)
    assert_complete(replica)
    files = files_below(replica.target)
    (again,) = replica.replicator.run()
    assert again.status == "UNCHANGED", again
    assert files_below(replica.target) == files

    # Past the grace period, housekeeping leaves exactly what the current metadata needs:
    # what the failed run left, and what only the superseded version referenced, go.
    done = replica.replicator.housekeeping(clock=at(NOW + timedelta(days=30)))

    assert done.status == "SUCCEEDED", (done.error, done.cause)
    current = CurrentReferences(replica.load().metadata_location).paths
    assert {canonical(path) for path in files_below(replica.target)} == current
    assert_reads_as(replica, n_plus_1)
    assert all(fs.exists(path) for path in current)
