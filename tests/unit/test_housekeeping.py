"""Housekeeping's decisions on local folders: what it deletes, what it keeps and why, and the
settings it reads from the config."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ferry.catalog.locations import ReferencedLocations
from ferry.config import Housekeeping, OrphanedDataStrategy, parse_config
from ferry.core.errors import ConfigError
from ferry.lifecycle.housekeeping_report import Request
from ferry.lifecycle.replica_state import ReplicaState
from ferry.lifecycle.retired_snapshots import housekeep_ledger
from ferry.replicas.ledger import LedgerEntry, SqliteStateStore
from ferry.replicas.ownership import Ownership
from ferry.storage import fs

NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)
DAY = timedelta(days=1)
KEY = "thrift://dr:9083/sales_dr.orders"
# Snapshot folders are named by event ids: A before B before C.
A = "ferry-20261110t080000000z-0000000a"
B = "ferry-20261115t080000000z-0000000b"
C = "ferry-20261120t080000000z-0000000c"


@pytest.fixture
def root(tmp_path):
    return fs.local_uri(tmp_path / "orders")


@pytest.fixture
def state(tmp_path):
    return ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))


def folder(root: str, *parts: str) -> str:
    """A snapshot folder with a file in it; its normalised URI."""
    path = fs.normalise(fs.join(root, *parts))
    fs.write_bytes(f"{path}/part-00000.parquet", b"rows")
    return path


def ledgered(state, *paths: str, at: datetime) -> list[LedgerEntry]:
    entries = [LedgerEntry(KEY, p, B, "sales_dr.orders", at) for p in paths]
    state.store.record(entries)
    return state.store.entries(KEY)


def decide(state, root, live, policy=None, **request):
    owner = Ownership(replica=live, root=root)
    outcomes = housekeep_ledger(
        state.store.entries(KEY), owner, policy or Housekeeping(), NOW,
        Request(**request), state, KEY,
    )  # fmt: skip
    return {o.path: (o.action.value, o.reason) for o in outcomes}


def test_an_expired_ancestor_waits_while_a_location_below_it_is_in_its_grace_period(state, root):
    old = folder(root, A)
    part = folder(root, A, "dt=1")
    state.store.record([LedgerEntry(KEY, old, B, "t", NOW - 5 * DAY)])
    state.store.record([LedgerEntry(KEY, part, C, "t", NOW - DAY)])
    live = ReferencedLocations.of(fs.join(root, C), [fs.join(root, C, "dt=1")], True)
    outcomes = decide(state, root, live)
    assert outcomes[part][0] == "kept" and "grace period until" in outcomes[part][1]
    assert outcomes[old] == ("kept", f"{part} below it is still in its grace period")
    assert fs.list_files(old)


def test_a_dropped_partition_below_the_tables_own_location_is_deleted(state, root):
    kept_partition = folder(root, C, "dt=1")
    dropped = folder(root, C, "dt=2")
    ledgered(state, dropped, at=NOW - 4 * DAY)
    live = ReferencedLocations.of(fs.join(root, C), [kept_partition], True)
    assert decide(state, root, live)[dropped][0] == "deleted"
    assert fs.list_files(dropped) == [] and fs.list_files(kept_partition)
    assert state.store.entries(KEY) == []


def test_a_path_inside_an_unpartitioned_tables_data_is_referenced(state, root):
    table = folder(root, C)
    inside = folder(root, C, "nested")
    ledgered(state, inside, at=NOW - 4 * DAY)
    outcomes = decide(state, root, ReferencedLocations.of(table, [], False))
    assert outcomes[inside] == ("kept", f"the replica references {table}")
    assert fs.list_files(inside)


def test_orphaned_data_strategy_none_keeps_everything(state, root):
    old = folder(root, A)
    ledgered(state, old, at=NOW - 30 * DAY)
    policy = Housekeeping(orphaned_data_strategy=OrphanedDataStrategy.NONE)
    assert decide(state, root, ReferencedLocations.of(None, [], False), policy)[old][0] == "kept"
    assert fs.list_files(old)


def test_a_dry_run_deletes_nothing_and_keeps_the_ledger(state, root):
    old = folder(root, A)
    entries = ledgered(state, old, at=NOW - 4 * DAY)
    outcomes = decide(state, root, ReferencedLocations.of(None, [], False), dry_run=True)
    assert outcomes[old][0] == "would delete"
    assert fs.list_files(old) and state.store.entries(KEY) == entries


def test_a_location_already_gone_leaves_the_ledger(state, root):
    gone = fs.normalise(fs.join(root, A))
    ledgered(state, gone, at=NOW - 4 * DAY)
    assert decide(state, root, ReferencedLocations.of(None, [], False))[gone][0] == "deleted"
    assert state.store.entries(KEY) == []


# -- the settings -----------------------------------------------------------------------------


def config(table=None, **extra):
    return parse_config(
        {
            "source-catalog": {"name": "a", "hive-metastore-uris": "thrift://a:9083"},
            "replica-catalog": {"name": "b", "hive-metastore-uris": "thrift://b:9083"},
            "table-replications": [
                {
                    "source-table": {"database-name": "s", "table-name": "t"},
                    "replica-table": {"table-location": "s3://dr/t"},
                    **(table or {}),
                }
            ],
            **extra,
        }
    )


def test_circus_trains_defaults_without_settings():
    document = config()
    policy = document.housekeeping_for(document.table_replications[0])
    assert policy == Housekeeping(OrphanedDataStrategy.HOUSEKEEPING, timedelta(days=3))
    assert policy.enabled


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            config(
                {"orphaned-data-strategy": "NONE"},
                housekeeping={"expired-path-duration": "PT12H"},
            ),
            Housekeeping(OrphanedDataStrategy.NONE, timedelta(hours=12)),
        ),
        (
            config(housekeeping={"expired-path-duration": "P1D"}),
            Housekeeping(OrphanedDataStrategy.HOUSEKEEPING, timedelta(days=1)),
        ),
        (  # a table's own strategy wins over the top-level one
            config(
                {"orphaned-data-strategy": "HOUSEKEEPING"}, **{"orphaned-data-strategy": "NONE"}
            ),
            Housekeeping(OrphanedDataStrategy.HOUSEKEEPING, timedelta(days=3)),
        ),
    ],
    ids=["top-level", "duration", "per-table"],
)
def test_each_table_gets_its_settings_from_the_config(document, expected):
    assert document.housekeeping_for(document.table_replications[0]) == expected


def test_a_duration_with_no_fixed_length_is_a_config_error():
    with pytest.raises(ConfigError, match="expired-path-duration"):
        config(housekeeping={"expired-path-duration": "P1M"})


def test_deleting_orphans_implies_the_vacuum():
    request = Request.from_payload({"configUri": "x", "deleteOrphans": True})
    assert (request.vacuum, request.delete_orphans, request.dry_run) == (True, True, False)


def test_an_attempt_whose_event_holds_the_lock_is_kept_past_its_grace_period(state, root):
    # A failed attempt kept for a resume (ferry.lifecycle.attempts), ledgered under its own event, that
    # a run is continuing: the run holds the replica's lock for that event.
    attempt = folder(root, C)
    state.store.record([LedgerEntry(KEY, attempt, C, "sales_dr.orders", NOW - 4 * DAY)])
    state.store.acquire(KEY, C, NOW - timedelta(minutes=5), timedelta(hours=1))
    live = ReferencedLocations.of(fs.join(root, B), [], False)
    assert decide(state, root, live)[attempt] == (
        "kept",
        f"event {C} holds the replica's lock: a run continues it",
    )
    assert fs.list_files(attempt)
    # Its lock released (or expired), it is deleted as any abandoned folder.
    state.store.release(KEY, C)
    assert decide(state, root, live)[attempt][0] == "deleted"
    assert not fs.list_files(attempt)
