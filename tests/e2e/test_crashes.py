"""``ferry replicate`` killed or interrupted part-way: what is left is always safe to read.

A process killed with SIGKILL cleans nothing up; what it leaves must still keep the
invariant (every location the replica references exists and holds a complete snapshot),
and the next run must converge. Ctrl-C during a copy stops promptly, removes the snapshot
nothing references, and tells consumers.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from ferry.replicas.replica import REPLICATION_EVENT
from ferry.storage import fs
from tests.e2e.test_pipeline import table_entry
from tests.helpers import (
    assert_each_partition_is_complete,
    assert_replica_holds_source,
    catalog_state,
    config_document,
    ferry,
    files_below,
    partition_snapshots,
    rewrite_orders,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def replication(local_runtime, sample, tmp_path, write_config, replica_catalog, source_catalog):
    target = fs.local_uri(tmp_path / "replica")
    replica_db = f"{sample.database}_dr"

    def config(**extra):
        return str(
            write_config(
                config_document(
                    local_runtime,
                    [table_entry(sample, "orders", f"{target}/orders")],
                    replica={
                        "name": "dr",
                        "hive-metastore-uris": local_runtime.replica_uri,
                        "batch-size": 1,
                    },
                    **extra,
                )
            )
        )

    def holds_source(complete=True):
        assert_replica_holds_source(
            replica_catalog, replica_db, "orders", source_catalog, sample.orders, complete
        )

    def partition_events():
        table = replica_catalog.get_table(replica_db, "orders")
        return {p.parameters[REPLICATION_EVENT] for p in replica_catalog.list_partitions(table)}

    return {
        "config": config,
        "target": target,
        "replica_db": replica_db,
        "holds_source": holds_source,
        "partition_events": partition_events,
        "home": str(tmp_path / "home"),
    }


@pytest.mark.parametrize("point", ["commit.partition-batch", "commit.table-created"])
def test_a_process_killed_in_commit_leaves_complete_snapshots_and_a_rerun_converges(
    replication, point, sample, source_catalog, replica_catalog
):
    config, home = replication["config"](), replication["home"]
    versions = []
    if point == "commit.partition-batch":  # an existing replica, altered part-way
        assert ferry("replicate", config, "--home", home).wait(120) == 0
        versions.append(partition_snapshots(source_catalog, sample.database, "orders"))
        rewrite_orders(sample)
    versions.append(partition_snapshots(source_catalog, sample.database, "orders"))
    killed = ferry(
        "replicate", config, "--home", home, faults=[{"point": point, "action": "kill", "skip": 0}]
    )
    assert killed.wait(120) == -signal.SIGKILL
    if point == "commit.partition-batch":
        assert_each_partition_is_complete(
            replica_catalog, replication["replica_db"], "orders", *versions
        )
    else:  # part-way through a first commit: the table's own location must exist
        replication["holds_source"](complete=False)
    rerun = ferry("replicate", config, "--home", home)
    assert rerun.wait(120) == 0, rerun.stderr.read()
    replication["holds_source"]()
    # The partition the killed run had already committed is current: the rerun keeps it.
    table = replica_catalog.get_table(replication["replica_db"], "orders")
    assert table.parameters[REPLICATION_EVENT] in replication["partition_events"]()


def test_a_process_killed_mid_copy_leaves_the_replica_and_a_rerun_converges(
    replication, replica_catalog, source_catalog, sample
):
    config, home = replication["config"](), replication["home"]
    assert ferry("replicate", config, "--home", home).wait(120) == 0
    old = partition_snapshots(source_catalog, sample.database, "orders")
    rewrite_orders(sample)
    before = catalog_state(replica_catalog, replication["replica_db"], ["orders"])
    killed = ferry(
        "replicate", config, "--home", home,
        faults=[{"point": "copy.file", "action": "kill", "skip": 1}],
    )  # fmt: skip
    assert killed.wait(120) == -signal.SIGKILL
    assert catalog_state(replica_catalog, replication["replica_db"], ["orders"]) == before
    assert_each_partition_is_complete(replica_catalog, replication["replica_db"], "orders", old)
    assert ferry("replicate", config, "--home", home).wait(120) == 0
    replication["holds_source"]()


def test_ctrl_c_during_a_copy_stops_promptly_removes_the_snapshot_and_tells_consumers(
    replication, sample, consumer, replica_catalog
):
    topic, messages = consumer
    # A large file in one partition, copied a MiB a second: the whole copy takes > 8 s.
    blob = f"{sample.orders.location}/dt={sample.days[-1]}/blob.bin"
    fs.write_bytes(blob, os.urandom(8 * 1024 * 1024))
    config = replication["config"](
        **{
            "sns-event-listener": {"topic": topic},
            "copier-options": {"threads": 1, "chunk-size-mib": 1},
        }
    )
    process = ferry(
        "replicate", config, "--home", replication["home"],
        faults=[{"point": "copy.file", "action": "hang", "seconds": 1, "times": 10_000}],
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not files_below(replication["target"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert files_below(replication["target"]), "the copy started"
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    code = process.wait(60)
    assert code == 130, process.stderr.read()
    stopped = time.monotonic() - interrupted
    assert stopped < 6, f"took {stopped:.1f} s to stop"
    assert "interrupted" in process.stderr.read()
    assert files_below(replication["target"]) == {}
    assert replica_catalog.get_database(replication["replica_db"]) is None
    received = [m["body"] for m in messages()]
    assert [m["type"] for m in received] == ["START", "FAILURE"]
    assert "interrupted" in received[1]["errorMessage"]
