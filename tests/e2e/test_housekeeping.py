"""The snapshot lifecycle end to end: the deployed pipeline ledgers superseded snapshots in
DynamoDB and locks its replica tables; the housekeeping state machine deletes expired
snapshots; ``ferry replicate`` and ``ferry housekeeping`` do the same with no AWS at all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from ferry.lifecycle.replica_state import LOCAL_STATE_FILE
from ferry.local import deploy
from ferry.replicas.ledger import DynamoDbStateStore, SqliteStateStore, replica_key
from ferry.statemachine.executions import follow, start
from ferry.storage import fs
from tests.e2e.test_pipeline import table_entry
from tests.helpers import (
    assert_replica_holds_source,
    config_document,
    files_below,
    housekept,
    housekept_paths,
    rewrite_orders,
)

pytestmark = pytest.mark.e2e

DAYS_AGO = timedelta(days=4)


@pytest.fixture
def orders(local_runtime, sample, tmp_path, write_config, source_catalog, replica_catalog):
    root = fs.local_uri(tmp_path / "replica" / "orders")
    replica_db = f"{sample.database}_dr"
    document = config_document(local_runtime, [table_entry(sample, "orders", root)])

    def holds_source():
        assert_replica_holds_source(
            replica_catalog, replica_db, "orders", source_catalog, sample.orders
        )

    return {
        "document": document,
        "config": write_config(document),
        "root": root,
        "replica_db": replica_db,
        "key": replica_key(local_runtime.replica_uri, f"{replica_db}.orders"),
        "days": sample.days,
        "holds_source": holds_source,
        # New data in every source partition: the next run copies them all again.
        "change_source": lambda generation=1: rewrite_orders(sample, generation),
    }


def snapshot_paths(root: str, event_id: str, days) -> set[str]:
    folder = fs.normalise(f"{root}/{event_id}")
    return {folder} | {f"{folder}/dt={day}" for day in days}


def event_of(outcome) -> str:
    [result] = outcome.results
    return result["eventId"]


@pytest.fixture
def store(pipeline):
    return DynamoDbStateStore(
        boto3.client("dynamodb", region_name="us-east-1"), pipeline.state_table
    )


# -- the pipeline -------------------------------------------------------------------------------


def test_the_pipeline_ledgers_superseded_snapshots_and_its_housekeeping_deletes_them(
    run, pipeline, sfn, aws, orders, store
):
    first = run(orders["document"])
    orders["change_source"]()
    second = run(orders["document"])
    assert (first.status, second.status) == ("SUCCEEDED", "SUCCEEDED")
    old, new = event_of(first), event_of(second)
    entries = store.entries(orders["key"])
    assert {e.path for e in entries} == snapshot_paths(orders["root"], old, orders["days"])
    assert {e.event_id for e in entries} == {new}
    assert store.lease(orders["key"]) is None
    # Four days pass for the ledger.
    store.record([replace(e, recorded_at=e.recorded_at - DAYS_AGO) for e in entries])

    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, orders["config"])
    arn = start(
        sfn,
        pipeline.housekeeping_state_machine_arn,
        deploy.execution_name("housekeeping"),
        {"configUri": config_uri, "vacuum": True},
    )
    outcome = follow(sfn, arn, poll_seconds=0.2, timeout_seconds=120)
    assert outcome.status == "SUCCEEDED", outcome
    result = outcome.output["housekeeping"]
    assert (result["deleted"], result["kept"], result["orphans"]) == (4, 0, 0)
    assert result["tableCount"] == 1
    [table] = housekept(result)
    assert housekept_paths(table, "deleted") == {e.path for e in entries}
    assert files_below(f"{orders['root']}/{old}") == {}
    assert files_below(f"{orders['root']}/{new}")
    orders["holds_source"]()
    assert store.entries(orders["key"]) == []
    report = json.loads(fs.read_bytes(result["reportUri"]))
    assert {o["action"] for o in report["tables"][0]["ledger"]} == {"deleted"}


def test_a_commit_retried_part_way_through_ledgers_exactly_the_snapshot_it_superseded(
    run, arm, local_runtime, sample, orders, store
):
    """A Lambda timeout after the first of three one-partition batches: the retried commit
    compares with what the replica referenced before the first attempt, not after it."""
    document = config_document(
        local_runtime,
        [table_entry(sample, "orders", orders["root"])],
        replica={"name": "dr", "hive-metastore-uris": local_runtime.replica_uri, "batch-size": 1},
    )
    first = run(document)
    assert first.status == "SUCCEEDED"
    orders["change_source"]()
    arm({"point": "commit.partition-batch", "action": "timeout", "skip": 1})
    retried = run(document)
    assert retried.status == "SUCCEEDED", retried
    assert ("Commit", "Sandbox.Timedout") in {(s, e) for s, e, _ in retried.failed_states}
    entries = store.entries(orders["key"])
    assert {e.path for e in entries} == snapshot_paths(
        orders["root"], event_of(first), orders["days"]
    )
    assert {e.event_id for e in entries} == {event_of(retried)}
    orders["holds_source"]()


def test_housekeeping_that_fails_ends_in_its_fail_state_with_the_named_error(pipeline, sfn):
    arn = start(
        sfn,
        pipeline.housekeeping_state_machine_arn,
        deploy.execution_name("housekeeping"),
        {"configUri": f"{pipeline.work_uri}/configs/missing.yml"},
    )
    outcome = follow(sfn, arn, poll_seconds=0.2, timeout_seconds=60)
    assert (outcome.status, outcome.error) == ("FAILED", "ConfigError")
    assert outcome.entered == ["Housekeeping", "Housekeeping failed"]


def test_a_replica_locked_by_another_replication_fails_fast_and_the_lock_stays(
    run, orders, store, replica_catalog
):
    holder = "ferry-20261121t083000000z-feedface"
    store.acquire(orders["key"], holder, datetime.now(UTC), timedelta(hours=1))
    try:
        outcome = run(orders["document"])
        assert (outcome.status, outcome.error) == ("FAILED", "ReplicaLockedError")
        assert holder in outcome.cause
        assert replica_catalog.get_database(orders["replica_db"]) is None
        assert store.lease(orders["key"]).holder == holder
    finally:
        store.release(orders["key"], holder)


# -- the command line ---------------------------------------------------------------------------


def ferry(*args: str, faults=None) -> subprocess.CompletedProcess:
    environment = {**os.environ}
    if faults:
        environment["FERRY_FAULTS"] = json.dumps(faults)
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def test_ferry_housekeeping_lists_then_deletes_what_ferry_replicate_superseded(orders, tmp_path):
    home, config = str(tmp_path / "home"), str(orders["config"])
    events = []
    for generation in range(2):
        if generation:
            orders["change_source"]()
        replicated = ferry("replicate", config, "--home", home, "--json")
        assert replicated.returncode == 0, replicated.stderr
        events.append(json.loads(replicated.stdout)["tables"][0]["event_id"])
    ledger = SqliteStateStore(tmp_path / "home" / LOCAL_STATE_FILE)
    entries = ledger.entries(orders["key"])
    assert len(entries) == 1 + len(orders["days"])
    superseded = {e.path for e in entries}

    # Just superseded: in its grace period, kept.
    fresh = ferry("housekeeping", config, "--home", home, "--json")
    assert fresh.returncode == 0, fresh.stderr
    [table] = json.loads(fresh.stdout)["tables"]
    assert {o["action"] for o in table["ledger"]} == {"kept"}

    ledger.record([replace(e, recorded_at=e.recorded_at - DAYS_AGO) for e in entries])
    dry = ferry("housekeeping", config, "--home", home, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing was deleted" in dry.stdout
    shown = {f"would delete …/{fs.relative_path(path, orders['root'])}" for path in superseded}
    assert all(line in dry.stdout for line in shown), dry.stdout
    assert all(files_below(path) for path in superseded if path.count("/") > 3)
    assert len(ledger.entries(orders["key"])) == len(entries)

    done = ferry("housekeeping", config, "--home", home)
    assert done.returncode == 0, done.stderr
    assert f"deleted {len(superseded)} superseded locations, kept 0" in done.stdout
    assert all(files_below(path) == {} for path in superseded)
    assert ledger.entries(orders["key"]) == []
    assert events[0] not in json.dumps(files_below(orders["root"]))
    assert events[1] in json.dumps(files_below(orders["root"]))
    orders["holds_source"]()


def test_a_run_killed_mid_copy_leaves_a_folder_the_vacuum_finds_and_its_lock_is_taken_over(
    orders, tmp_path
):
    home, config = str(tmp_path / "home"), str(orders["config"])
    assert ferry("replicate", config, "--home", home).returncode == 0
    orders["change_source"]()
    killed = ferry(
        "replicate", config, "--home", home,
        faults=[{"point": "copy.file", "action": "kill", "skip": 1}],
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    store = SqliteStateStore(tmp_path / "home" / LOCAL_STATE_FILE)
    killed_event = store.lease(orders["key"]).holder  # the dead run still holds it

    vacuum = ferry("housekeeping", config, "--home", home, "--vacuum", "--json")
    assert vacuum.returncode == 0, vacuum.stderr
    [table] = json.loads(vacuum.stdout)["tables"]
    [orphan] = table["orphanFolders"]
    assert orphan["path"] == fs.normalise(f"{orders['root']}/{killed_event}")
    assert orphan["action"] == "found"
    assert files_below(orphan["path"])  # listing deletes nothing

    # The killed process is gone: the next run takes its lock over at once.
    rerun = ferry("replicate", config, "--home", home)
    assert rerun.returncode == 0, rerun.stderr
    orders["holds_source"]()
    assert store.lease(orders["key"]) is None
