"""What state `Commit` (``ferry/states/commit.py``) reads of the replica: a first commit, of a
replica that referenced nothing, does not list the partitions it has just written to find
what it superseded (nothing can be). Counted by a Hive catalog that counts its partition
listings, on real metastores."""

from __future__ import annotations

import pytest

from ferry.catalog.factory import open_catalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from ferry.states import commit
from ferry.states.context import StateContext
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
