"""``ferry replicate`` killed between Commit's statistics writes: the next run converges.

A SIGKILL cleans nothing up. Killed after the partitions' column statistics are written, or
after the table's, the replica still holds complete snapshots; the next run writes what is
missing, and the run after it finds nothing to do.
"""

from __future__ import annotations

import json
import signal

import pytest

from ferry.storage import fs
from tests.helpers import (
    assert_each_partition_is_complete,
    config_document,
    ferry,
    partition_snapshots,
)
from tests.integration.test_replicate_statistics import (
    _analyzed,
    _entry,
    _order_keys,
    _partition_statistics,
)

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("point", ["commit.partition-statistics", "commit.table-statistics"])
def test_a_process_killed_between_statistics_writes_leaves_a_replica_the_next_run_completes(
    local_runtime, source_catalog, replica_catalog, unique, tmp_path, write_config, point
):
    sample = _analyzed(source_catalog, f"stats_kill_{unique}", local_runtime.warehouse)
    target = fs.local_uri(tmp_path / "replica")
    replica_db = f"{sample.database}_dr"
    config = str(
        write_config(
            config_document(
                local_runtime,
                [_entry(sample, "customers", target), _entry(sample, "orders", target)],
            )
        )
    )
    home = str(tmp_path / "home")
    snapshots = partition_snapshots(source_catalog, sample.database, "orders")

    killed = ferry(
        "replicate", config, "--home", home, faults=[{"point": point, "action": "kill", "skip": 0}]
    )
    assert killed.wait(120) == -signal.SIGKILL
    assert_each_partition_is_complete(replica_catalog, replica_db, "orders", snapshots)

    rerun = ferry("replicate", config, "--home", home, "--json")
    assert rerun.wait(120) == 0, rerun.stderr.read()
    orders = replica_catalog.get_table(replica_db, "orders")
    assert replica_catalog.get_column_statistics(orders) == source_catalog.get_column_statistics(
        sample.orders
    )
    assert _partition_statistics(replica_catalog, orders, sample.days) == _partition_statistics(
        source_catalog, sample.orders, sample.days
    )
    assert replica_catalog.get_constraints(orders).names == _order_keys(sample.database).names
    again = ferry("replicate", config, "--home", home, "--json")
    assert again.wait(120) == 0, again.stderr.read()
    statuses = [table["status"] for table in json.loads(again.stdout.read())["tables"]]
    assert statuses == ["UNCHANGED", "UNCHANGED"]
