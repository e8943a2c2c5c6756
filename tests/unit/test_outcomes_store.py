"""Each replica's outcome in the state store, on both adapters: DynamoDB (moto in-process)
and the local SQLite file. One port: both must answer alike."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from ferry.replicas.ledger import DynamoDbStateStore, Outcome, SqliteStateStore, replica_key
from ferry.replicas.ledger.dynamodb_table import create_state_table

NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
REPLICA = replica_key("thrift://dr:9083", "sales_dr.orders")


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
        yield DynamoDbStateStore(client, "ferry-state")


def test_a_replica_with_no_run_has_no_outcome(store):
    assert store.outcomes([REPLICA]) == {}
    assert store.outcomes([]) == {}


def test_a_success_is_kept_with_the_source_version_it_replicated(store):
    store.record_success(REPLICA, "sales_dr.orders", "ferry-a", NOW, "hive:ddl=1:n=3", NOW - MINUTE)
    assert store.outcomes([REPLICA]) == {
        REPLICA: Outcome(
            REPLICA,
            "sales_dr.orders",
            last_success_at=NOW,
            last_success_event="ferry-a",
            source_version="hive:ddl=1:n=3",
            source_read_at=NOW - MINUTE,
        )
    }


def test_failing_since_is_the_first_failure_after_the_last_success(store):
    store.record_success(REPLICA, "sales_dr.orders", "ferry-a", NOW, "v1", NOW)
    store.record_failure(REPLICA, "sales_dr.orders", "ferry-b", NOW + MINUTE, "CopyError: boom")
    store.record_failure(REPLICA, "sales_dr.orders", "ferry-c", NOW + 5 * MINUTE, "Other: bang")
    outcome = store.outcomes([REPLICA])[REPLICA]
    assert outcome.failing
    assert outcome.failing_since == NOW + MINUTE
    assert (outcome.last_failure_at, outcome.last_failure_event, outcome.last_error) == (
        NOW + 5 * MINUTE,
        "ferry-c",
        "Other: bang",
    )
    assert (outcome.last_success_event, outcome.source_version) == ("ferry-a", "v1")
    store.record_success(REPLICA, "sales_dr.orders", "ferry-d", NOW + 9 * MINUTE, "v2", NOW)
    outcome = store.outcomes([REPLICA])[REPLICA]
    assert not outcome.failing
    assert (outcome.last_error, outcome.last_success_event) == (None, "ferry-d")


def test_a_replica_that_never_succeeded_is_failing_since_its_first_failure(store):
    store.record_failure(REPLICA, "sales_dr.orders", "ferry-a", NOW, "ConfigError: bad")
    outcome = store.outcomes([REPLICA])[REPLICA]
    assert (outcome.failing_since, outcome.last_success_at) == (NOW, None)


def test_many_outcomes_are_read_at_once(store):
    replicas = [replica_key("glue:us-east-1", f"dr.t{n}") for n in range(250)]
    for n, replica in enumerate(replicas):
        if n % 2:
            store.record_success(replica, f"dr.t{n}", f"e{n}", NOW, f"v{n}", NOW)
    found = store.outcomes([*replicas, REPLICA])
    assert set(found) == set(replicas[1::2])
    assert found[replicas[7]].source_version == "v7"


def test_a_batch_read_asks_again_for_keys_dynamodb_left_unprocessed(monkeypatch):
    """BatchGetItem may answer only part (throttling): the rest is asked again."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_state_table(client, "ferry-state")
        store = DynamoDbStateStore(client, "ferry-state")
        replicas = [replica_key("glue:us-east-1", f"dr.t{n}") for n in range(5)]
        for replica in replicas:
            store.record_success(replica, replica, "e", NOW, "v", NOW)
        calls = []
        real = client.batch_get_item

        def throttled(**request):
            """DynamoDB's answer when throttled: the last two keys left for later."""
            keys = request["RequestItems"]["ferry-state"]["Keys"]
            calls.append(len(keys))
            if len(calls) > 1:
                return real(**request)
            request["RequestItems"]["ferry-state"]["Keys"] = keys[:-2]
            reply = real(**request)
            reply["UnprocessedKeys"] = {"ferry-state": {"Keys": keys[-2:]}}
            return reply

        monkeypatch.setattr(client, "batch_get_item", throttled)
        assert set(store.outcomes(replicas)) == set(replicas)
        assert calls == [5, 2]


def test_a_state_file_from_before_outcomes_is_read_without_change_and_upgraded_on_write(
    tmp_path,
):
    path = tmp_path / "state.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE locks (replica TEXT PRIMARY KEY, holder TEXT NOT NULL, "
            "acquired_at TEXT NOT NULL, expires_at REAL NOT NULL, owner TEXT)"
        )
    before = path.read_bytes()
    store = SqliteStateStore(path)
    store.check()
    assert store.outcomes([REPLICA]) == {}
    assert path.read_bytes() == before, "a read changes nothing"
    store.record_failure(REPLICA, "sales_dr.orders", "ferry-a", NOW, "boom")
    assert store.outcomes([REPLICA])[REPLICA].last_error == "boom"


def test_a_read_of_a_missing_state_file_creates_nothing(tmp_path):
    store = SqliteStateStore(tmp_path / "home" / "state.sqlite3")
    assert store.outcomes([REPLICA]) == {}
    assert not (tmp_path / "home").exists()
