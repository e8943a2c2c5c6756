"""State `Commit` (``ferry/states/commit.py``; the catalog writes are ``ferry/lifecycle/committing.py``):
no commit before every batch has its copy record; then the replica table points at the new
snapshot, with its partitions; real metastores."""

from __future__ import annotations

import pytest

from ferry.core.errors import CopyIncompleteError
from ferry.states import commit
from tests.state_runs import StateRun, run_of

pytestmark = pytest.mark.integration


def test_a_run_whose_batches_were_not_copied_is_not_committed(
    local_runtime, sample, replica_catalog, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)
    _, planned = run.planned()

    with pytest.raises(CopyIncompleteError, match=r"1 of 1 batches of event .* no copy record"):
        commit.run(run.context, run_of(planned))

    assert replica_catalog.get_table(f"{sample.database}_dr", "orders") is None


def test_the_replica_points_at_the_new_snapshot_once_every_batch_was_copied(
    local_runtime, sample, replica_catalog, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)
    _, planned = run.copied()

    committed = commit.run(run.context, run_of(planned))

    assert (committed.partitions_added, committed.partitions_altered) == (3, 0)
    assert committed.replica_location == planned.replica_location
    # The metastore writes file:///… as file:/….
    snapshot = planned.replica_location.replace("file:///", "file:/")
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica.location == snapshot
    partitions = replica_catalog.list_partitions(replica)
    assert len(partitions) == 3
    assert all(p.location.startswith(f"{snapshot}/") for p in partitions)
