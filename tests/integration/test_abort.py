"""State `Abort table` (``ferry/states/abort.py``; the clean-up rules are ``ferry/lifecycle/aborting.py``):
a failed table's snapshot, which nothing references, is removed; consumers are told FAILURE
with the error's name; real metastores, the emulator's SNS and SQS."""

from __future__ import annotations

import pytest

from ferry.states import abort
from ferry.storage import fs
from tests.state_runs import StateRun

pytestmark = pytest.mark.integration


def test_a_failed_tables_unreferenced_snapshot_is_removed_and_consumers_are_told(
    local_runtime, sample, replica_catalog, tmp_path, consumer
):
    topic, messages = consumer
    run = StateRun(local_runtime, sample, tmp_path, **{"sns-event-listener": {"topic": topic}})
    item, planned = run.copied()
    assert len(fs.list_files(planned.replica_location)) == 3

    result = abort.run(
        run.context,
        {
            **item,
            "plan": {"planUri": planned.plan_uri, "reportUri": planned.report_uri},
            "error": {"Error": "States.Timeout", "Cause": "the copy took too long"},
            "failedState": "Commit",
        },
    )

    assert (result.status, result.error, result.failed_state) == (
        "FAILED",
        "States.Timeout",
        "Commit",
    )
    assert (result.snapshot, result.snapshot_removed) == (planned.replica_location, True)
    assert fs.list_files(planned.replica_location) == []
    assert replica_catalog.get_table(f"{sample.database}_dr", "orders") is None
    failures = [m["body"] for m in messages() if m["body"]["type"] == "FAILURE"]
    assert [m["eventId"] for m in failures] == [planned.event_id]
    assert result.notified
