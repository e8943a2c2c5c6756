"""Ferry deletes only folders it created, and nothing any table references: every deletion
path tried against real metastores with configs a person gets wrong.

Each test replicates, superseding snapshots, then runs housekeeping and the vacuum with
``deleteOrphans`` after every grace period, and checks byte by byte that nothing outside
the snapshot folders Ferry created (and no longer references) is gone.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import LedgerEntry, replica_key
from ferry.states import plan as plan_state
from ferry.storage import fs
from tests.conftest import NOW
from tests.helpers import (
    Replicator,
    assert_replica_holds_source,
    at,
    catalog_state,
    config_document,
    files_below,
    rewrite_orders,
)

pytestmark = pytest.mark.integration

HOUR, DAY = timedelta(hours=1), timedelta(days=1)


@pytest.fixture
def state(tmp_path) -> ReplicaState:
    from ferry.replicas.ledger import SqliteStateStore

    return ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))


def entry(source_db: str, replica_db: str, root: str | None, **more) -> dict:
    replica_table = {"database-name": replica_db}
    if root is not None:
        replica_table["table-location"] = root
    return {
        "source-table": {"database-name": source_db, "table-name": "orders"},
        "replica-table": replica_table,
        **more,
    }


def run(document: dict, state: ReplicaState, when):
    replicator = Replicator(document, clock=at(when), state=state)
    [outcome] = replicator.run()
    return outcome, replicator


def sweep(replicator: Replicator, start) -> list[dict]:
    """Housekeeping with the vacuum deleting orphans, then again after each grace period;
    each run's full report."""
    reports = []
    for days in (4, 8, 12):
        execution = replicator.housekeeping(clock=at(start + days * DAY), deleteOrphans=True)
        assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
        result = execution.output["housekeeping"]
        reports.append(json.loads(fs.read_bytes(result["reportUri"])) | {"result": result})
    return reports


def handed_over(reports: list[dict]) -> set[str]:
    """What the vacuum handed to the ledger (to be deleted after the grace period)."""
    return {
        orphan["path"]
        for report in reports
        for table in report["tables"]
        for orphan in table["orphanFolders"]
        if orphan["action"] == "ledgered"
    }


def everything(*locations: str) -> dict[str, dict[str, int]]:
    return {location: files_below(location) for location in locations}


# -- mirrors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_location", [True, False])
def test_a_mirror_owns_nothing_whatever_its_table_location_says(
    local_runtime, sample, source_catalog, replica_catalog, state, with_location, unique
):
    """Circus Train's own mirror configs carry a table-location: the source's."""
    orders = source_catalog.get_table(sample.database, "orders")
    replica_db = f"{sample.database}_mirror_{unique}"
    document = config_document(
        local_runtime,
        [
            entry(
                sample.database,
                replica_db,
                orders.location if with_location else None,
                **{"replication-mode": "METADATA_MIRROR"},
            )
        ],
    )
    first, replicator = run(document, state, NOW)
    assert first.status == "SUCCEEDED", first.error
    # The source re-points a partition at a new folder; its old folder stays the source's.
    [partition, *_] = source_catalog.list_partitions(orders)
    old_folder = partition.location
    moved = fs.normalise(f"{old_folder}_v2")
    for file in fs.list_files(old_folder):
        fs.write_bytes(f"{moved}/{file.uri.rsplit('/', 1)[1]}", fs.read_bytes(file.uri))
    source_catalog.alter_partitions(
        orders, [replace(partition, storage=partition.storage.with_location(moved))]
    )
    second, replicator = run(document, state, NOW + HOUR)
    assert second.status == "SUCCEEDED", second.error
    if with_location:
        assert any("is ignored" in notice for notice in second.notices), second.notices
    key = replica_key(local_runtime.replica_uri, f"{replica_db}.orders")
    assert state.store.entries(key) == []  # a mirror's commit ledgers nothing
    # As if an earlier Ferry had ledgered the source's folder: still never deleted.
    state.store.record([LedgerEntry(key, fs.normalise(old_folder), "ferry-x", "t", NOW)])
    source_files = everything(orders.location, old_folder)

    [report, *_] = sweep(replicator, NOW)
    [table] = report["tables"]
    assert table["deleted"] == 0 and "METADATA_MIRROR" in table["skipped"]
    assert (report["result"]["tableCount"], report["result"]["tablesSkipped"]) == (1, 1)
    assert everything(orders.location, old_folder) == source_files
    assert files_below(old_folder)


# -- a table-location that changed ----------------------------------------------------------


@pytest.fixture
def neighbours(local_runtime, sample, tmp_path, replica_catalog, state, unique):
    """A replica of orders below ``<parent>/orders``, two snapshots of it (the first
    superseded), and beside it in ``<parent>``: another table's data and another replica's
    live snapshot (event-named, as Ferry names them)."""
    parent = fs.local_uri(tmp_path / "warehouse")
    root = f"{parent}/orders"
    replica_db = f"{sample.database}_dr"
    document = config_document(local_runtime, [entry(sample.database, replica_db, root)])
    a, _ = run(document, state, NOW)
    rewrite_orders(sample, 1)
    b, _ = run(document, state, NOW + HOUR)
    assert (a.status, b.status) == ("SUCCEEDED", "SUCCEEDED"), (a.error, b.error)
    foreign = f"{parent}/foreign_db.db/customers"
    fs.write_bytes(f"{foreign}/part-00000.parquet", b"another table's data")
    # Another replica, of customers, lives in the parent too (another database).
    other_db = f"{sample.database}_other_{unique}"
    other_root = f"{parent}/customers"
    other = config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": sample.database, "table-name": "customers"},
                "replica-table": {"database-name": other_db, "table-location": other_root},
            }
        ],
    )
    c, _ = run(other, state, NOW + 2 * HOUR)
    assert c.status == "SUCCEEDED", c.error
    other_snapshot = fs.normalise(replica_catalog.get_table(other_db, "customers").location)
    return {
        "document": document,
        "parent": parent,
        "root": root,
        "replica_db": replica_db,
        "a": fs.normalise(f"{root}/{a.event_id}"),
        "b": fs.normalise(f"{root}/{b.event_id}"),
        "foreign": foreign,
        "other_snapshot": other_snapshot,
        "other_db": other_db,
    }


@pytest.mark.parametrize("moved_to", ["parent", "sibling", "source"])
def test_a_table_location_moved_deletes_nothing_ferry_did_not_create_there(
    neighbours, moved_to, sample, state, local_runtime, source_catalog, replica_catalog
):
    n = neighbours
    orders = source_catalog.get_table(sample.database, "orders")
    new_root = {
        "parent": n["parent"],
        "sibling": n["other_snapshot"].rsplit("/", 1)[0],  # the other replica's location
        "source": orders.location,
    }[moved_to]
    document = copy.deepcopy(n["document"])
    document["table-replications"][0]["replica-table"]["table-location"] = new_root
    kept = everything(n["foreign"], n["other_snapshot"], orders.location, n["b"])
    other_before = catalog_state(replica_catalog, n["other_db"], ["customers"])

    moved, replicator = run(document, state, NOW + 3 * HOUR)
    if moved_to == "source":
        # Snapshots would be written into the source: refused, nothing changed.
        assert moved.status == "FAILED" and moved.error_type == "ReplicaLocationError"
    else:
        # Below a parent the replica's data already lies within the new location: it stays.
        expected = "UNCHANGED" if moved_to == "parent" else "SUCCEEDED"
        assert moved.status == expected, moved.error
        assert any("table-location changed from" in notice for notice in moved.notices)
    reports = sweep(replicator, NOW + 3 * HOUR)

    # What Ferry created below the old location and no longer references is gone...
    assert files_below(n["a"]) == {}
    if moved_to == "sibling":
        # ...and b too, superseded by the run below the new location.
        assert files_below(n["b"]) == {}
        kept.pop(n["b"])
    # ...and nothing else.
    assert everything(*kept) == kept
    assert catalog_state(replica_catalog, n["other_db"], ["customers"]) == other_before
    assert_replica_holds_source(
        replica_catalog, n["replica_db"], "orders", source_catalog, sample.orders
    )
    # The vacuum never handed anything but Ferry's own snapshots of this table to the ledger.
    for path in handed_over(reports):
        assert fs.relative_path(path, n["foreign"]) is None
        assert fs.relative_path(path, n["other_snapshot"]) is None
        assert fs.relative_path(path, orders.location) is None


def test_the_vacuum_after_a_move_retires_a_killed_runs_snapshot_below_the_old_location(
    neighbours, state, sample, local_runtime, replica_catalog, source_catalog
):
    n = neighbours
    # A run that planned a copy (and so recorded its snapshot folder), then died mid-copy.
    rewrite_orders(sample, 2)
    replicator = Replicator(n["document"], clock=at(NOW + 3 * HOUR), state=state)
    event_id = "ferry-20261121t113000000z-0dead0ff"
    plan_state.run(
        replicator.context(),
        {
            "configUri": str(replicator.config_path),
            "eventId": event_id,
            "sourceTable": f"{sample.database}.orders",
            "startTime": (NOW + 3 * HOUR).isoformat(),
        },
    )
    killed = fs.normalise(f"{n['root']}/{event_id}")
    fs.write_bytes(f"{killed}/dt={sample.days[0]}/part-00000.parquet", b"half a copy")
    # The config then moves the table to a new folder.
    document = copy.deepcopy(n["document"])
    document["table-replications"][0]["replica-table"]["table-location"] = f"{n['parent']}/v2"
    moved, replicator = run(document, state, NOW + 5 * HOUR)
    assert moved.status == "SUCCEEDED", moved.error

    reports = sweep(replicator, NOW + 5 * HOUR)
    assert handed_over(reports) == {killed}
    assert files_below(killed) == {}
    assert files_below(n["foreign"]) and files_below(n["other_snapshot"])
    assert_replica_holds_source(
        replica_catalog, n["replica_db"], "orders", source_catalog, sample.orders
    )


# -- PROPAGATE_DELETES ------------------------------------------------------------------------


def test_propagate_deletes_drops_a_replica_only_when_its_own_source_catalog_says_so(
    local_runtime, sample, state, replica_catalog, source_catalog, tmp_path
):
    from ferry.core.model import Database

    root = fs.local_uri(tmp_path / "replica" / "orders")
    replica_db = f"{sample.database}_dr"
    document = config_document(
        local_runtime,
        [entry(sample.database, replica_db, root, **{"replication-strategy": "PROPAGATE_DELETES"})],
    )
    first, _ = run(document, state, NOW)
    assert first.status == "SUCCEEDED", first.error
    before = catalog_state(replica_catalog, replica_db, ["orders"])

    # The source catalog's URI points at the wrong metastore, which never held the database.
    wrong = copy.deepcopy(document)
    wrong["source-catalog"]["hive-metastore-uris"] = local_runtime.replica_uri
    refused, _ = run(wrong, state, NOW + HOUR)
    assert refused.status == "FAILED" and refused.error_type == "SourceTableNotFoundError"
    assert f"nor its database {sample.database}" in refused.error
    assert catalog_state(replica_catalog, replica_db, ["orders"]) == before

    # A wrong metastore that has a database of that name, without the table.
    replica_catalog.create_database(Database(name=sample.database))
    try:
        refused, _ = run(wrong, state, NOW + 2 * HOUR)
    finally:
        replica_catalog.drop_database(sample.database)
    assert refused.status == "FAILED" and refused.error_type == "SourceTableNotFoundError"
    assert "was replicated from catalog" in refused.error
    assert local_runtime.source_uri in refused.error
    assert catalog_state(replica_catalog, replica_db, ["orders"]) == before

    # The source itself drops the table: the replica goes.
    source_catalog.drop_table(sample.database, "orders")
    dropped, _ = run(document, state, NOW + 3 * HOUR)
    assert dropped.status == "SUCCEEDED", dropped.error
    assert replica_catalog.get_table(replica_db, "orders") is None
