"""What state `Commit` (``ferry/states/commit.py``) reads of the replica: a first commit, of a
replica that referenced nothing, does not list the partitions it has just written to find
what it superseded (nothing can be); a commit of one changed partition does not list them
either — the partitions Plan read stand for the listing (``ferry/lifecycle/replica_as_planned.py``)
— and still ledgers the partition's old folder. A replica table changed since Plan, or a
missing or unreadable hand-over, makes Commit list the replica once, before it writes; a
replica another event committed since Plan is still refused. Counted by a Hive catalog that
counts its partition listings, on real metastores."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ferry.catalog.factory import open_catalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.errors import ReplicaChangedError
from ferry.lifecycle.replica_as_planned import REPLICA_AS_PLANNED
from ferry.lifecycle.replica_state import ReplicaState
from ferry.local.samples import order_rows, write_parquet
from ferry.planning.runs import RunLocations
from ferry.replicas.ledger import SqliteStateStore
from ferry.replicas.replica import REPLICATION_EVENT
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


def _second_run(sample, replica_catalog, tmp_path, local_runtime):
    """The sample replicated once, then one day's data changed at the source and planned and
    copied again: the run, its state, the replica's partitions' old locations, the plan."""
    run = StateRun(local_runtime, sample, tmp_path)
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    run.context = StateContext(run.work, clock=fixed_clock, catalogs=counting, state=state)
    _, first = run.copied()
    commit.run(run.context, run_of(first))
    table = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    old = {p.values: p.location for p in replica_catalog.list_partitions(table)}
    changed_day = sample.days[0]
    rows = order_rows(changed_day, count=9)
    write_parquet(f"{sample.orders.location}/dt={changed_day}", "part-00000.parquet", rows)
    _, second = run.copied()
    assert second.event_id != first.event_id
    CountingListings.listings = []
    return run, state, old, second


def _assert_one_partition_committed_and_ledgered(run, state, replica_catalog, sample, old):
    """The changed day points at the new snapshot; its old folder, and only it, is ledgered."""
    table = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    now = {p.values: p.location for p in replica_catalog.list_partitions(table)}
    [changed] = [values for values in now if now[values] != old[values]]
    assert changed == (sample.days[0],)
    config = run.context.load(str(run.config))
    key = run.context.replica_key(config, config.table_replications[0])
    ledgered = {entry.path for entry in state.store.entries(key)}
    # The changed partition's old folder is superseded; the others are still referenced.
    assert fs.normalise(old[changed]) in ledgered
    assert not {fs.normalise(old[v]) for v in old if v != changed} & ledgered


def test_a_commit_of_one_changed_partition_takes_plans_read_and_ledgers_its_old_folder(
    local_runtime, sample, replica_catalog, tmp_path
):
    run, state, old, second = _second_run(sample, replica_catalog, tmp_path, local_runtime)
    where = RunLocations.for_event(run.work, second.event_id)
    assert fs.exists(fs.join(where.root, REPLICA_AS_PLANNED))

    committed = commit.run(run.context, run_of(second))

    assert (committed.partitions_added, committed.partitions_altered) == (0, 1)
    # Plan's read stands for the listing before; after is worked out from it and the plan.
    assert f"{sample.database}_dr.orders" not in CountingListings.listings
    _assert_one_partition_committed_and_ledgered(run, state, replica_catalog, sample, old)


@pytest.mark.parametrize("hand_over", ["missing", "unreadable", "table altered since Plan"])
def test_a_commit_without_plans_read_of_the_replica_as_it_is_lists_it_once(
    local_runtime, sample, replica_catalog, tmp_path, hand_over
):
    run, state, old, second = _second_run(sample, replica_catalog, tmp_path, local_runtime)
    where = tmp_path / "work" / "runs" / second.event_id / REPLICA_AS_PLANNED
    assert where.exists()
    if hand_over == "missing":
        where.unlink()
    elif hand_over == "unreadable":
        where.write_bytes(b'{"replica": ')
    else:  # someone set a property on the replica table; its event is still the one planned
        table = replica_catalog.get_table(f"{sample.database}_dr", "orders")
        replica_catalog.alter_table(
            replace(table, parameters={**table.parameters, "comment": "checked by hand"})
        )

    committed = commit.run(run.context, run_of(second))

    assert (committed.partitions_added, committed.partitions_altered) == (0, 1)
    assert CountingListings.listings.count(f"{sample.database}_dr.orders") == 1
    _assert_one_partition_committed_and_ledgered(run, state, replica_catalog, sample, old)


def test_a_replica_another_event_committed_since_plan_is_still_refused(
    local_runtime, sample, replica_catalog, tmp_path
):
    run, _, old, second = _second_run(sample, replica_catalog, tmp_path, local_runtime)
    table = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    replica_catalog.alter_table(
        replace(table, parameters={**table.parameters, REPLICATION_EVENT: "another-event"})
    )

    with pytest.raises(ReplicaChangedError, match="changed since event"):
        commit.run(run.context, run_of(second))

    now = {p.values: p.location for p in replica_catalog.list_partitions(table)}
    assert now == old
