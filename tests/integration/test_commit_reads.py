"""What state `Commit` (``ferry/states/commit.py``) reads of the replica: a first commit, of a
replica that referenced nothing, does not list the partitions it has just written to find
what it superseded (nothing can be), and a commit of one changed partition lists them once,
before it writes, and still ledgers the partition's old folder. Counted by a Hive catalog that counts its partition
listings, on real metastores."""

from __future__ import annotations

import pytest

from ferry.catalog.factory import open_catalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.lifecycle.replica_state import ReplicaState
from ferry.local.samples import order_rows, write_parquet
from ferry.replicas.ledger import SqliteStateStore
from ferry.states import commit
from ferry.states.context import StateContext
from ferry.storage import fs
from tests.conftest import fixed_clock
from tests.state_runs import StateRun, run_of

pytestmark = pytest.mark.integration


class CountingListings(HiveMetastoreCatalog):
    """A Hive catalog that counts its partition listings."""

    listings: list[str] = []

    def list_partitions(self, table, partition_filter=None, limit=None):
        CountingListings.listings.append(table.qualified_name)
        return super().list_partitions(table, partition_filter, limit)


def counting(config, aws):
    opened = open_catalog(config, aws)
    return CountingListings(opened.name, opened.uris, page_size=opened.page_size)


def test_a_first_commit_does_not_list_the_partitions_it_wrote(
    local_runtime, sample, replica_catalog, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    run.context = StateContext(run.work, clock=fixed_clock, catalogs=counting, state=state)
    _, planned = run.copied()
    CountingListings.listings = []

    committed = commit.run(run.context, run_of(planned))

    replica_name = f"{sample.database}_dr.orders"
    assert committed.partitions_added == 3
    assert replica_name not in CountingListings.listings
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert len(replica_catalog.list_partitions(replica)) == 3
    # Nothing superseded, nothing ledgered; the replica's lock is released.
    config = run.context.load(str(run.config))
    key = run.context.replica_key(config, config.table_replications[0])
    assert state.store.entries(key) == []
    assert state.store.lease(key) is None


def test_a_commit_of_one_changed_partition_lists_the_replica_once_and_ledgers_its_old_folder(
    local_runtime, sample, replica_catalog, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    run.context = StateContext(run.work, clock=fixed_clock, catalogs=counting, state=state)
    _, first = run.copied()
    commit.run(run.context, run_of(first))
    replica_db = f"{sample.database}_dr"
    table = replica_catalog.get_table(replica_db, "orders")
    old = {p.values: p.location for p in replica_catalog.list_partitions(table)}
    changed_day = sample.days[0]
    rows = order_rows(changed_day, count=9)
    write_parquet(f"{sample.orders.location}/dt={changed_day}", "part-00000.parquet", rows)
    _, second = run.copied()
    assert second.event_id != first.event_id
    CountingListings.listings = []

    committed = commit.run(run.context, run_of(second))

    assert (committed.partitions_added, committed.partitions_altered) == (0, 1)
    # Read once before the commit wrote; after is worked out from it and the plan.
    assert CountingListings.listings.count(f"{replica_db}.orders") == 1
    now = {p.values: p.location for p in replica_catalog.list_partitions(table)}
    [changed] = [values for values in now if now[values] != old[values]]
    assert changed == (changed_day,)
    config = run.context.load(str(run.config))
    key = run.context.replica_key(config, config.table_replications[0])
    ledgered = {entry.path for entry in state.store.entries(key)}
    # The changed partition's old folder is superseded; the others are still referenced.
    assert fs.normalise(old[changed]) in ledgered
    assert not {fs.normalise(old[v]) for v in old if v != changed} & ledgered
