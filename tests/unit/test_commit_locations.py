"""What Commit keeps of the replica before it writes (``ferry/lifecycle/commit_locations.py``):
kept in the run's folder for a retried commit, and read back from a record written before each
partition's values were kept."""

from __future__ import annotations

import json

from ferry.lifecycle.commit_locations import BeforeCommit


def test_what_was_referenced_before_reads_back_as_written():
    before = BeforeCommit(
        ["file:///r/e1", "file:///r/e1/dt=1", "file:///r/e1/dt=2"],
        "file:///r/e1",
        {("1",): "file:///r/e1/dt=1", ("2",): "file:///r/e1/dt=2"},
    )

    assert BeforeCommit.from_json(json.loads(json.dumps(before.to_json()))) == before


def test_a_record_of_locations_alone_reads_back_without_partitions():
    before = BeforeCommit.from_json(["file:///r/e1", "file:///r/e1/dt=1"])

    assert before.locations == ["file:///r/e1", "file:///r/e1/dt=1"]
    assert before.partitions is None
    assert before


def test_a_replica_that_referenced_nothing_is_empty():
    assert not BeforeCommit([])
