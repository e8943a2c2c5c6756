"""The snapshot lifecycle against real metastores: the ledger, housekeeping, the vacuum and
the replica lock, through ``ferry replicate``'s driver (the state machine's definitions).

The ledger and the locks run on both adapters: DynamoDB in the emulator and the local
SQLite file. Time passes through the injected clock.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import timedelta

import boto3
import pytest

from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import DynamoDbStateStore, LedgerEntry, SqliteStateStore, replica_key
from ferry.replicas.ledger.dynamodb_table import create_state_table
from ferry.states import commit as commit_state
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


@pytest.fixture(params=["sqlite", "dynamodb"])
def state(request, tmp_path, local_runtime, unique) -> ReplicaState:
    if request.param == "sqlite":
        return ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    client = boto3.client("dynamodb", region_name="us-east-1")  # the emulator's
    create_state_table(client, f"ferry-state-{unique}")
    return ReplicaState(DynamoDbStateStore(client, f"ferry-state-{unique}"))


@pytest.fixture
def sqlite_state(tmp_path) -> ReplicaState:
    return ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))


@dataclass
class Orders:
    """The partitioned sample table, replicated FULL below ``root``."""

    document: dict
    root: str
    replica_db: str
    key: str
    days: tuple[str, ...]
    sample: object
    #: How many times the source's data was changed.
    generation: int = 0

    def change_source(self) -> None:
        """New data in every source partition: the next run copies them all again."""
        self.generation += 1
        rewrite_orders(self.sample, self.generation)

    def snapshot(self, event_id: str) -> str:
        return fs.normalise(f"{self.root}/{event_id}")

    def snapshot_paths(self, event_id: str) -> set[str]:
        """The snapshot folder and its partitions' folders: what its supersession ledgers."""
        folder = self.snapshot(event_id)
        return {folder} | {f"{folder}/dt={day}" for day in self.days}


@pytest.fixture
def orders(local_runtime, sample, tmp_path) -> Orders:
    root = fs.local_uri(tmp_path / "replica" / "orders")
    replica_db = f"{sample.database}_dr"
    entry = {
        "source-table": {"database-name": sample.database, "table-name": "orders"},
        "replica-table": {"database-name": replica_db, "table-location": root},
    }
    return Orders(
        document=config_document(local_runtime, [entry]),
        root=root,
        replica_db=replica_db,
        key=replica_key(local_runtime.replica_uri, f"{replica_db}.orders"),
        days=sample.days,
        sample=sample,
    )


def replicate(orders: Orders, state: ReplicaState, when=NOW, *, changed=False, **extra):
    """``ferry replicate``'s driver at ``when``; ``changed``: after new data at the source."""
    if changed:
        orders.change_source()
    replicator = Replicator(orders.document, clock=at(when), state=state, **extra)
    [outcome] = replicator.run()
    return outcome, replicator


def report_of(execution) -> dict:
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    result = execution.output["housekeeping"]
    return json.loads(fs.read_bytes(result["reportUri"])) | {"result": result}


def ledger_outcomes(report: dict) -> dict[str, tuple[str, str]]:
    [table] = report["tables"]
    return {o["path"]: (o["action"], o["reason"]) for o in table["ledger"]}


# -- the ledger -------------------------------------------------------------------------------


def test_each_commit_ledgers_the_snapshot_it_superseded_with_event_table_and_time(orders, state):
    first, _ = replicate(orders, state, NOW)
    assert first.status == "SUCCEEDED", first.error
    assert state.store.entries(orders.key) == []  # the first commit superseded nothing

    second, replicator = replicate(orders, state, NOW + HOUR, changed=True)
    assert second.status == "SUCCEEDED", second.error
    entries = state.store.entries(orders.key)
    assert {e.path for e in entries} == orders.snapshot_paths(first.event_id)
    assert {(e.event_id, e.replica_table, e.recorded_at) for e in entries} == {
        (second.event_id, f"{orders.replica_db}.orders", NOW + HOUR)
    }
    # Superseded is not deleted: readers that resolved it keep reading it.
    assert files_below(orders.snapshot(first.event_id))
    assert state.store.lease(orders.key) is None  # the lock was released

    # A commit retried after it succeeded records the same entries, nothing more.
    commit_state.run(
        replicator.context(at(NOW + 2 * HOUR)),
        {
            "planUri": f"{replicator.work_uri}/runs/{second.event_id}/plan.json",
            "eventId": second.event_id,
        },
    )
    assert {(e.path, e.event_id) for e in state.store.entries(orders.key)} == {
        (e.path, e.event_id) for e in entries
    }


# -- housekeeping -----------------------------------------------------------------------------


def test_housekeeping_deletes_only_expired_unreferenced_snapshots_below_the_table_location(
    orders, sqlite_state, tmp_path, replica_catalog, source_catalog, sample
):
    state = sqlite_state
    a, _ = replicate(orders, state, NOW)
    b, _ = replicate(orders, state, NOW, changed=True)  # supersedes a at NOW
    # c supersedes b three days later.
    c, replicator = replicate(orders, state, NOW + 3 * DAY, changed=True)
    assert {a.status, b.status, c.status} == {"SUCCEEDED"}
    # Two entries no housekeeping may act on: a location outside the table location, and one
    # the replica references (as if it had been ledgered by mistake); both long expired.
    outside = fs.local_uri(tmp_path / "elsewhere" / "old")
    fs.write_bytes(f"{outside}/part-00000.parquet", b"not Ferry's")
    referenced = f"{orders.snapshot(c.event_id)}/dt={orders.days[0]}"
    state.store.record(
        [
            LedgerEntry(orders.key, fs.normalise(outside), "ferry-x", "x.y", NOW - 10 * DAY),
            LedgerEntry(orders.key, referenced, "ferry-x", "x.y", NOW - 10 * DAY),
        ]
    )
    entries_before = state.store.entries(orders.key)
    files_before = files_below(orders.root)

    dry = report_of(replicator.housekeeping(clock=at(NOW + 4 * DAY), dryRun=True))
    would = {path for path, (action, _) in ledger_outcomes(dry).items() if action == "would delete"}
    assert would == orders.snapshot_paths(a.event_id)
    assert dry["result"]["deleted"] == 4 and dry["result"]["tableCount"] == 1
    assert files_below(orders.root) == files_before
    assert state.store.entries(orders.key) == entries_before

    report = report_of(replicator.housekeeping(clock=at(NOW + 4 * DAY)))
    outcomes = ledger_outcomes(report)
    assert {p for p, (action, _) in outcomes.items() if action == "deleted"} == would
    assert files_below(orders.snapshot(a.event_id)) == {}
    # b's grace period (P3D from NOW + 3 days) runs until NOW + 6 days.
    for path in orders.snapshot_paths(b.event_id):
        action, reason = outcomes[path]
        assert action == "kept" and "grace period until" in reason, reason
    assert files_below(orders.snapshot(b.event_id))
    assert outcomes[referenced][0] == "kept"
    assert "the replica references" in outcomes[referenced][1]
    assert outcomes[fs.normalise(outside)][0] == "kept"
    assert "not in a snapshot folder Ferry created" in outcomes[fs.normalise(outside)][1]
    assert files_below(outside)
    assert {e.path for e in state.store.entries(orders.key)} == (
        orders.snapshot_paths(b.event_id) | {referenced, fs.normalise(outside)}
    )
    assert_replica_holds_source(
        replica_catalog, orders.replica_db, "orders", source_catalog, sample.orders
    )

    # Three more days: b's turn. Run again: what was deleted stays deleted (idempotent).
    later = report_of(replicator.housekeeping(clock=at(NOW + 7 * DAY)))
    deleted = {p for p, (action, _) in ledger_outcomes(later).items() if action == "deleted"}
    assert deleted == orders.snapshot_paths(b.event_id)
    assert files_below(orders.snapshot(c.event_id))
    assert_replica_holds_source(
        replica_catalog, orders.replica_db, "orders", source_catalog, sample.orders
    )


@pytest.mark.parametrize(("strategy", "action"), [("HOUSEKEEPING", "deleted"), ("NONE", "kept")])
def test_the_configs_grace_period_and_orphaned_data_strategy_decide(
    orders, sqlite_state, strategy, action
):
    orders.document["housekeeping"] = {"expired-path-duration": "PT1H"}
    orders.document["table-replications"][0]["orphaned-data-strategy"] = strategy
    a, _ = replicate(orders, sqlite_state, NOW)
    b, replicator = replicate(orders, sqlite_state, NOW, changed=True)
    assert (a.status, b.status) == ("SUCCEEDED", "SUCCEEDED")
    report = report_of(replicator.housekeeping(clock=at(NOW + 2 * HOUR)))
    [table] = report["tables"]
    assert (table["gracePeriod"], table["strategy"]) == ("PT1H", strategy)
    outcomes = ledger_outcomes(report)
    assert {outcomes[path][0] for path in orders.snapshot_paths(a.event_id)} == {action}
    assert bool(files_below(orders.snapshot(a.event_id))) == (action == "kept")


def test_the_vacuum_finds_folders_nothing_knows_and_deletes_them_only_when_asked(
    orders, sqlite_state, replica_catalog, source_catalog, sample
):
    state = sqlite_state
    a, _ = replicate(orders, state, NOW)
    b, replicator = replicate(orders, state, NOW + HOUR, changed=True)
    # What runs killed part-way through their copies left behind.
    killed = fs.normalise(f"{orders.root}/ferry-20261101t000000000z-deadbeef")
    running = fs.normalise(f"{orders.root}/ferry-20261121t090000000z-0badcafe")
    for folder in (killed, running):
        fs.write_bytes(f"{folder}/dt={orders.days[0]}/part-00000.parquet", b"half a copy")
    later = NOW + 4 * DAY

    listed = report_of(replicator.housekeeping(clock=at(later), dryRun=True, vacuum=True))
    [table] = listed["tables"]
    # The replica's snapshot (the catalog's) and a's (the ledger's) are known.
    assert {o["path"]: o["action"] for o in table["orphanFolders"]} == {
        killed: "found",
        running: "found",
    }
    assert listed["result"]["orphans"] == 2
    assert files_below(killed) and files_below(running)

    listed = report_of(replicator.housekeeping(clock=at(later), vacuum=True))
    assert {o["action"] for o in listed["tables"][0]["orphanFolders"]} == {"found"}
    assert files_below(killed) and files_below(running)

    # Asked to delete: handed to the ledger, except the folder of a run holding the lock.
    state.store.acquire(orders.key, running.rsplit("/", 1)[1], later, HOUR)
    asked = report_of(replicator.housekeeping(clock=at(later), deleteOrphans=True))
    orphans = {o["path"]: o for o in asked["tables"][0]["orphanFolders"]}
    assert orphans[killed]["action"] == "ledgered"
    assert orphans[running]["action"] == "kept"
    assert "holding the lock" in orphans[running]["reason"]
    assert files_below(killed) and files_below(running)
    [handed] = [e for e in state.store.entries(orders.key) if e.path == killed]
    assert (handed.event_id, handed.recorded_at) == ("vacuum", later)

    # A grace period later, housekeeping deletes it like any superseded snapshot.
    done = report_of(replicator.housekeeping(clock=at(later + 3 * DAY)))
    assert ledger_outcomes(done)[killed][0] == "deleted"
    assert files_below(killed) == {} and files_below(running)
    assert files_below(orders.snapshot(b.event_id))
    assert_replica_holds_source(
        replica_catalog, orders.replica_db, "orders", source_catalog, sample.orders
    )


# -- the lock ---------------------------------------------------------------------------------


def test_two_concurrent_runs_on_one_table_one_replicates_the_other_fails_and_changes_nothing(
    orders, state, replica_catalog, source_catalog, sample
):
    copying, second_done = threading.Event(), threading.Event()

    class HoldTheCopy:
        """The first run waits at its copy until the second has run."""

        def state_entered(self, table, name):
            if name == "Inline copy":
                copying.set()
                assert second_done.wait(120)

    results = {}
    first = threading.Thread(
        target=lambda: results.update(
            first=replicate(orders, state, NOW, observer=HoldTheCopy())[0]
        )
    )
    first.start()
    try:
        assert copying.wait(120), "the first run reached its copy"
        lease = state.store.lease(orders.key)
        before = catalog_state(replica_catalog, orders.replica_db, ["orders"])
        files = files_below(orders.root)
        second, replicator = replicate(orders, state, NOW)
        # The second run changed nothing: no replica, no files, the first run's lock.
        assert catalog_state(replica_catalog, orders.replica_db, ["orders"]) == before
        assert files_below(orders.root) == files
        assert state.store.lease(orders.key) == lease
    finally:
        second_done.set()
        first.join(120)
    assert second.status == "FAILED" and second.error_type == "ReplicaLockedError"
    assert lease.holder in second.error and "expires at" in second.error
    assert second.states == ("Plan", "Abort before plan")
    assert files_below(f"{replicator.work_uri}/runs/{second.event_id}") == {}
    first_outcome = results["first"]
    assert first_outcome.status == "SUCCEEDED", first_outcome.error
    assert first_outcome.event_id == lease.holder
    assert_replica_holds_source(
        replica_catalog, orders.replica_db, "orders", source_catalog, sample.orders
    )
    assert state.store.lease(orders.key) is None


def test_a_live_lease_blocks_and_stays_and_an_expired_one_is_taken_over(
    orders, state, replica_catalog, source_catalog, sample
):
    crashed = "ferry-20261121t080000000z-0000dead"
    state.store.acquire(orders.key, crashed, NOW - HOUR / 2, HOUR)  # expires NOW + 30 min

    blocked, _ = replicate(orders, state, NOW)
    assert (blocked.status, blocked.error_type) == ("FAILED", "ReplicaLockedError")
    assert crashed in blocked.error
    assert replica_catalog.get_database(orders.replica_db) is None
    # Abort released nothing: the lock is another run's.
    assert state.store.lease(orders.key).holder == crashed

    taken, _ = replicate(orders, state, NOW + HOUR)
    assert taken.status == "SUCCEEDED", taken.error
    assert_replica_holds_source(
        replica_catalog, orders.replica_db, "orders", source_catalog, sample.orders
    )
    assert state.store.lease(orders.key) is None
