"""The snapshot ledger and the replica locks, on both adapters: DynamoDB (moto in-process)
and the local SQLite file. Both must behave alike: they are one port."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from ferry.catalog.locations import ReferencedLocations
from ferry.core.duration import format_duration, parse_duration
from ferry.core.errors import ReplicaLockedError
from ferry.lifecycle import replica_state, snapshot_records
from ferry.replicas.ledger import (
    CreatedSnapshot,
    DynamoDbStateStore,
    Lease,
    LedgerEntry,
    SqliteStateStore,
    replica_key,
)
from ferry.replicas.ledger.dynamodb_table import create_state_table
from ferry.replicas.ownership import Ownership

NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)
HOUR = timedelta(hours=1)
REPLICA = replica_key("thrift://dr:9083", "Sales_DR.Orders")


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request, tmp_path, monkeypatch):
    if request.param == "sqlite":
        yield SqliteStateStore(tmp_path / "state.sqlite3")
        return
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_state_table(client, "ferry-state")
        create_state_table(client, "ferry-state")  # again: nothing happens
        yield DynamoDbStateStore(client, "ferry-state")


def entry(path: str, event: str = "ferry-b", at: datetime = NOW) -> LedgerEntry:
    return LedgerEntry(REPLICA, path, event, "sales_dr.orders", at)


def test_the_key_names_catalog_and_table_in_lower_case():
    assert REPLICA == "thrift://dr:9083/sales_dr.orders"


def test_the_ledger_records_lists_and_forgets_entries_of_one_replica(store):
    other = LedgerEntry(replica_key("glue:us-east-1", "x.y"), "s3://b/y/1", "e", "x.y", NOW)
    store.record([entry("s3://dr/orders/ferry-a/dt=2"), entry("s3://dr/orders/ferry-a"), other])
    assert store.entries(REPLICA) == [
        entry("s3://dr/orders/ferry-a"),
        entry("s3://dr/orders/ferry-a/dt=2"),
    ]
    # A retried commit records the same entries again: still one per path.
    store.record([entry("s3://dr/orders/ferry-a", at=NOW + HOUR)])
    assert [(e.path, e.recorded_at) for e in store.entries(REPLICA)] == [
        ("s3://dr/orders/ferry-a", NOW + HOUR),
        ("s3://dr/orders/ferry-a/dt=2", NOW),
    ]
    store.forget(REPLICA, "s3://dr/orders/ferry-a")
    store.forget(REPLICA, "s3://dr/orders/never-recorded")
    assert [e.path for e in store.entries(REPLICA)] == ["s3://dr/orders/ferry-a/dt=2"]
    assert store.entries(other.replica) == [other]


def test_an_entry_keeps_the_snapshot_folder_it_lies_in(store):
    recorded = LedgerEntry(
        REPLICA, "s3://dr/t/ferry-a/dt=1", "ferry-b", "t", NOW, "s3://dr/t/ferry-a"
    )
    store.record([recorded])
    assert store.entries(REPLICA) == [recorded]


def test_an_intent_entry_says_so(store):
    """An Iceberg run's intent: its path names the run's document, not a file to delete."""
    intent = LedgerEntry(
        REPLICA, "s3://work/runs/ferry-b/iceberg-intent.json", "ferry-b", "t", NOW, "s3://dr/t",
        intent=True,
    )  # fmt: skip
    store.record([intent, entry("s3://dr/t/data/a.parquet")])
    assert store.entries(REPLICA) == [entry("s3://dr/t/data/a.parquet"), intent]


def test_a_state_file_from_before_intents_is_upgraded(tmp_path):
    import sqlite3

    path = tmp_path / "state.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE ledger (replica TEXT NOT NULL, path TEXT NOT NULL, event_id TEXT NOT NULL, "
            "replica_table TEXT NOT NULL, recorded_at TEXT NOT NULL, snapshot TEXT, "
            "PRIMARY KEY (replica, path))"
        )
        connection.execute(
            "INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?)",
            (REPLICA, "s3://dr/t/ferry-a", "ferry-b", "t", NOW.isoformat(), "s3://dr/t/ferry-a"),
        )
    store = SqliteStateStore(path)
    store.check()
    assert store.entries(REPLICA) == [
        LedgerEntry(REPLICA, "s3://dr/t/ferry-a", "ferry-b", "t", NOW, "s3://dr/t/ferry-a")
    ]
    store.record([replace(entry("s3://work/intent.json"), intent=True)])
    assert [e.intent for e in store.entries(REPLICA)] == [False, True]


def test_a_state_file_from_before_entries_named_their_snapshot_is_upgraded(tmp_path):
    import sqlite3

    path = tmp_path / "state.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE ledger (replica TEXT NOT NULL, path TEXT NOT NULL, event_id TEXT NOT NULL, "
            "replica_table TEXT NOT NULL, recorded_at TEXT NOT NULL, PRIMARY KEY (replica, path))"
        )
        connection.execute(
            "INSERT INTO ledger VALUES (?, ?, ?, ?, ?)",
            (REPLICA, "s3://dr/t/ferry-a", "ferry-b", "t", NOW.isoformat()),
        )
    store = SqliteStateStore(path)
    assert store.entries(REPLICA) == [
        LedgerEntry(REPLICA, "s3://dr/t/ferry-a", "ferry-b", "t", NOW)
    ]
    store.record([entry("s3://dr/t/ferry-c")])
    assert len(store.entries(REPLICA)) == 2


def test_many_entries_are_written_in_batches(store):
    paths = [f"s3://dr/orders/ferry-a/dt={day:03d}" for day in range(60)]
    store.record([entry(path) for path in paths])
    assert [e.path for e in store.entries(REPLICA)] == paths


def test_one_holder_at_a_time_and_the_error_names_the_holder_and_its_expiry(store):
    lease = store.acquire(REPLICA, "ferry-a", NOW, HOUR)
    assert (lease.holder, lease.expires_at) == ("ferry-a", NOW + HOUR)
    with pytest.raises(ReplicaLockedError) as raised:
        store.acquire(REPLICA, "ferry-b", NOW + timedelta(minutes=5), HOUR)
    message = str(raised.value)
    assert "sales_dr.orders" in message and "ferry-a" in message
    assert (NOW + HOUR).isoformat(timespec="seconds") in message
    # The holder again (a retried Plan): renewed.
    assert store.acquire(REPLICA, "ferry-a", NOW + HOUR / 2, HOUR).expires_at == NOW + 1.5 * HOUR
    assert store.lease(REPLICA).holder == "ferry-a"


def test_an_expired_lease_is_taken_over(store):
    store.acquire(REPLICA, "ferry-crashed", NOW, HOUR)
    taken = store.acquire(REPLICA, "ferry-b", NOW + HOUR, HOUR)
    assert store.lease(REPLICA) == taken and taken.holder == "ferry-b"


def test_release_frees_only_the_holders_own_lock(store):
    assert store.release(REPLICA, "ferry-a") is False  # nothing held
    store.acquire(REPLICA, "ferry-a", NOW, HOUR)
    assert store.release(REPLICA, "ferry-b") is False  # an abort of another run
    assert store.lease(REPLICA).holder == "ferry-a"
    assert store.release(REPLICA, "ferry-a") is True
    assert store.lease(REPLICA) is None
    store.acquire(REPLICA, "ferry-b", NOW, HOUR)


def test_a_stale_holder_is_taken_over_before_its_expiry(store):
    store.acquire(REPLICA, "ferry-killed", NOW, HOUR, owner="host/1/2")
    with pytest.raises(ReplicaLockedError):
        store.acquire(REPLICA, "ferry-b", NOW, HOUR)
    taken = store.acquire(
        REPLICA, "ferry-b", NOW, HOUR, stale=lambda lease: lease.owner == "host/1/2"
    )
    assert store.lease(REPLICA).holder == taken.holder == "ferry-b"


def test_concurrent_takers_get_one_lock(tmp_path):
    """Threads with their own connections race for one lock: exactly one wins."""
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    won, lost = [], []
    barrier = threading.Barrier(8)

    def take(index: int) -> None:
        barrier.wait()
        try:
            won.append(store.acquire(REPLICA, f"ferry-{index}", NOW, HOUR).holder)
        except ReplicaLockedError:
            lost.append(index)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(lost) == 7
    assert store.lease(REPLICA).holder == won[0]


def test_a_holder_process_that_died_is_recognised():
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
    me = replica_state.this_process()
    host, pid, ticks = me.split("/")

    def lease(owner):
        return Lease(REPLICA, "ferry-a", NOW, NOW + HOUR, owner)

    assert replica_state.holder_is_gone(lease(me)) is False
    assert replica_state.holder_is_gone(lease(f"{host}/{finished.stdout.strip()}/1")) is True
    assert replica_state.holder_is_gone(lease(f"{host}/{pid}/{int(ticks) + 1}")) is True  # PID reused
    assert replica_state.holder_is_gone(lease(f"elsewhere/{finished.stdout.strip()}/1")) is False
    assert replica_state.holder_is_gone(lease(None)) is False  # Lambda: only the expiry frees it


def test_superseded_locations_are_those_in_snapshot_folders_ferry_created():
    root = "s3://dr/orders"
    a, b = "ferry-20261110t080000000z-0000000a", "ferry-20261115t080000000z-0000000b"
    before = [
        f"s3://dr/orders/{a}",
        f"s3://dr/orders/{a}/dt=1",
        f"s3://dr/orders/{a}/dt=2",
        "s3://src/orders/dt=3",  # a location someone else set: never Ferry's to delete
        "s3://dr/orders",  # the table-location itself: never
        "s3://dr/orders/manual/dt=4",  # below it, but no snapshot folder Ferry created
    ]
    after = [f"s3://dr/orders/{b}", f"s3://dr/orders/{a}/dt=1", f"s3://dr/orders/{b}/dt=2"]
    created = [
        CreatedSnapshot(REPLICA, f"{root}/{a}", a, root, "s3://src/orders", NOW),
        CreatedSnapshot(REPLICA, f"{root}/{b}", b, root, "s3://src/orders", NOW),
    ]
    owner = Ownership(ReferencedLocations(), created, root=root)
    assert snapshot_records.superseded_locations(before, after, owner) == [
        (f"s3://dr/orders/{a}", f"s3://dr/orders/{a}"),
        (f"s3://dr/orders/{a}/dt=2", f"s3://dr/orders/{a}"),
    ]
    # A mirror supersedes nothing of Ferry's.
    mirror = Ownership(ReferencedLocations(), created, root=root, owns_nothing="a mirror")
    assert snapshot_records.superseded_locations(before, after, mirror) == []


def test_created_snapshots_are_recorded_listed_and_forgotten(store):
    a = CreatedSnapshot(REPLICA, "s3://dr/t/ferry-a", "ferry-a", "s3://dr/t", "s3://src/t", NOW)
    b = CreatedSnapshot(REPLICA, "s3://dr/u/ferry-b", "ferry-b", "s3://dr/u", None, NOW + HOUR)
    store.record_created(b)
    store.record_created(a)
    store.record_created(a)  # a retried Plan records the same folder again
    assert store.created(REPLICA) == [a, b]
    assert store.created("thrift://other/db.t") == []
    # Ledger entries and created snapshots are apart: neither lists the other.
    assert store.entries(REPLICA) == []
    store.forget_created(REPLICA, a.path)
    assert store.created(REPLICA) == [b]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("P3D", timedelta(days=3)),
        ("PT1H30M", timedelta(minutes=90)),
        ("PT0.5S", timedelta(milliseconds=500)),
        ("p2dt3h", timedelta(days=2, hours=3)),
    ],
)
def test_iso_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["P1M", "P1Y", "P1W", "3 days", "P", "PT", "P1DT", ""])
def test_durations_with_no_fixed_length_or_no_sense_are_refused(text):
    with pytest.raises(ValueError, match="ISO-8601 duration"):
        parse_duration(text)


def test_durations_are_written_back_shortest():
    assert [format_duration(parse_duration(t)) for t in ("P3D", "PT72H", "PT90M", "PT0S")] == [
        "P3D",
        "P3D",
        "PT1H30M",
        "PT0S",
    ]
