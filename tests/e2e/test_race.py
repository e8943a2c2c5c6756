"""One commit per table, whatever runs it: two drivers with two lock stores race on one
replica table, again and again, and exactly one commits each time.

A person runs ``ferry replicate`` on a laptop (its lock in ``--home``) beside the scheduled
pipeline (its lock in DynamoDB): the stores cannot see each other, so the replica table
itself must decide. Both processes plan against the same replica, wait there, then copy and
commit at once; one of them also waits inside its commit, once it claimed the replica,
so that the other's commit arrives while the first is writing partitions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ferry.replicas.replica import REPLICATION_EVENT
from ferry.storage import fs
from tests.e2e.test_pipeline import table_entry
from tests.helpers import assert_replica_holds_source, config_document, files_below, rewrite_orders

pytestmark = pytest.mark.e2e

TRIES = 20


def replicate(config: str, home: str, faults: list[dict]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ferry.commands.cli", "replicate", config, "--home", home, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FERRY_FAULTS": json.dumps(faults)},
    )


def test_two_drivers_with_two_stores_never_both_commit_one_replica(
    local_runtime, sample, tmp_path, write_config, source_catalog, replica_catalog
):
    root = fs.local_uri(tmp_path / "replica" / "orders")
    replica_db = f"{sample.database}_dr"
    config = str(write_config(config_document(local_runtime, [table_entry(sample, "orders", root)])))
    homes = [str(tmp_path / "laptop"), str(tmp_path / "scheduler")]
    planned = {"point": "plan.planned", "action": "hang", "seconds": 3}
    claimed = {"point": "commit.claimed", "action": "hang", "seconds": 1}
    raced = 0
    for attempt in range(TRIES):
        rewrite_orders(sample, attempt + 1)
        slow = attempt % 2  # which of the two dawdles inside its commit
        runs = [
            replicate(config, home, [planned, claimed] if index == slow else [planned])
            for index, home in enumerate(homes)
        ]
        tables = []
        for run in runs:
            stdout, stderr = run.communicate(timeout=300)
            assert run.returncode in (0, 1), stderr
            [table] = json.loads(stdout)["tables"]
            tables.append(table)
        committed = [t for t in tables if t["status"] == "SUCCEEDED"]
        others = [t for t in tables if t["status"] != "SUCCEEDED"]
        assert len(committed) == 1, (attempt, tables)
        [winner], [other] = committed, others
        if other["status"] == "FAILED":
            assert other["error_type"] == "ReplicaChangedError", (attempt, other)
            raced += 1
            # The snapshot that lost is removed: nothing references it.
            assert files_below(f"{root}/{other['event_id']}") == {}, attempt
        else:  # it planned after the other had committed: nothing left to do
            assert other["status"] == "UNCHANGED", (attempt, other)
        # The replica is the winner's, whole: its event, and every partition in its snapshot.
        table = replica_catalog.get_table(replica_db, "orders")
        assert table.parameters[REPLICATION_EVENT] == winner["event_id"], attempt
        snapshot = fs.normalise(f"{root}/{winner['event_id']}")
        locations = {fs.normalise(p.location) for p in replica_catalog.list_partitions(table)}
        assert all(fs.relative_path(location, snapshot) for location in locations), (
            attempt,
            locations,
        )
        assert_replica_holds_source(
            replica_catalog, replica_db, "orders", source_catalog, sample.orders
        )
    print(f"{raced} of {TRIES} tries were true races (both planned before either committed)")
    assert raced >= TRIES // 2
