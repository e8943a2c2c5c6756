"""State `Claim copy slot` (``ferry/states/copy_slot.py``): a table takes a free slot of the
environment's copy budget; another waits in line, told how long, until the slot is freed;
the budget in the local state store's SQLite file."""

from __future__ import annotations

import pytest

from ferry.copying.budget import CopyBudget, EnvironmentBudget
from ferry.copying.budget.sqlite import SqliteSlots
from ferry.states import copy_slot
from tests.state_runs import StateRun

pytestmark = pytest.mark.integration


def test_a_table_takes_the_free_slot_and_another_waits_until_it_is_freed(
    local_runtime, sample, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)
    slots = SqliteSlots(tmp_path / "home" / "state.sqlite3")
    run.context.budget = EnvironmentBudget(CopyBudget(slots=1, wait_seconds=7), slots)
    _, planned = run.planned()

    first = copy_slot.run(run.context, {"planUri": planned.plan_uri, "eventId": planned.event_id})
    waiting = copy_slot.run(run.context, {"planUri": planned.plan_uri, "eventId": "ferry-other"})

    assert (first.granted, first.slot, first.priority) == (True, 0, "normal")
    assert (waiting.granted, waiting.wait_seconds, waiting.queued_normal) == (False, 7, 1)
    assert [h.event_id for h in slots.holders()] == [planned.event_id]
    run.context.release_copy_slot(planned.event_id)
    granted = copy_slot.run(run.context, {"planUri": planned.plan_uri, "eventId": "ferry-other"})
    assert (granted.granted, granted.slot) == (True, 0)
