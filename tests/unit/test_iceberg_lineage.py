"""What each side of an Iceberg replication committed since a failover (``ferry.iceberg.lineage``)."""

from __future__ import annotations

import pytest

from ferry.iceberg.lineage import Divergence, diverge

HELD = 3


@pytest.mark.parametrize(
    ("source", "replica", "expected"),
    [
        # Neither side committed since the failover.
        ((1, 2, 3), (1, 2, 3), Divergence((), (), (), conflict=False)),
        # DR appended: its snapshots go home.
        ((1, 2, 3), (1, 2, 3, 10, 11), Divergence((10, 11), (), (10, 11), conflict=False)),
        # Only the source committed: nothing goes home.
        ((1, 2, 3, 20), (1, 2, 3), Divergence((), (20,), (), conflict=False)),
        # Both committed: a conflict, DR's snapshots are what would go home.
        ((1, 2, 3, 20), (1, 2, 3, 10), Divergence((10,), (20,), (10,), conflict=True)),
        # An earlier failback wrote DR's first snapshot home: the rest goes.
        ((1, 2, 3, 10), (1, 2, 3, 10, 11), Divergence((10, 11), (10,), (11,), conflict=False)),
        # Everything is home already.
        ((1, 2, 3, 10, 11), (1, 2, 3, 10, 11), Divergence((10, 11), (10, 11), (), conflict=False)),
    ],
    ids=["neither", "dr", "source", "both", "part-home", "all-home"],
)
def test_the_two_lineages_from_the_snapshot_held_at_the_failover(source, replica, expected):
    assert diverge(source, replica, HELD) == expected


def test_a_replica_that_held_no_snapshot_sends_its_whole_lineage_home():
    assert diverge((), (10, 11), None) == Divergence((10, 11), (), (10, 11), conflict=False)


@pytest.mark.parametrize(
    ("source", "replica", "side"),
    [((1, 2, 3), (1, 2, 10), "replica's"), ((1, 2, 20), (1, 2, 3, 10), "source's")],
)
def test_a_history_that_no_longer_reaches_the_failover_is_a_reason_not_a_plan(
    source, replica, side
):
    assert diverge(source, replica, HELD) == (
        f"the {side} history no longer contains snapshot 3, held at the failover"
    )
