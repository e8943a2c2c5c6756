"""State `Notify success` (``ferry/states/notify_success.py``): consumers receive SUCCESS for
the event, and the table's outcome says what the run replicated; real metastores, the
emulator's SNS and SQS."""

from __future__ import annotations

import pytest

from ferry.states import commit, notify_success
from tests.state_runs import StateRun, run_of

pytestmark = pytest.mark.integration


def test_consumers_are_told_success_with_what_was_replicated(
    local_runtime, sample, tmp_path, consumer
):
    topic, messages = consumer
    run = StateRun(local_runtime, sample, tmp_path, **{"sns-event-listener": {"topic": topic}})
    _, planned = run.copied()
    commit.run(run.context, run_of(planned))

    result = notify_success.run(run.context, run_of(planned))

    assert (result.status, result.files, result.partitions) == ("SUCCEEDED", 3, 3)
    assert result.replica_location == planned.replica_location
    received = [m["body"] for m in messages()]
    success = [m for m in received if m["type"] == "SUCCESS"]
    assert [m["eventId"] for m in success] == [planned.event_id]
    assert success[0]["replicaTable"] == f"{sample.database}_dr.orders"
    # Plan told them START first, for the same event.
    assert [m["eventId"] for m in received if m["type"] == "START"] == [planned.event_id]
