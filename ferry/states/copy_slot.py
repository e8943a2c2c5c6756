"""State `Claim copy slot`: take one of the environment's copy slots for this table's copy
(critical tables first), or wait in line: the answer says how long before asking again.
Commit and Abort free it (``StateContext.release_copy_slot``; ``ferry.copying.budget``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.planning.plan_document import read_plan
from ferry.statemachine.replication_payloads import CopySlotInput, CopySlotResult
from ferry.states.context import StateContext


def run(context: StateContext, payload: CopySlotInput | Mapping[str, Any]) -> CopySlotResult:
    """The claim's answer, with the line's depth by priority."""
    payload = CopySlotInput.model_validate(payload)
    priority = read_plan(payload.plan_uri).plan.replication.priority
    if context.budget is None:
        return CopySlotResult(
            granted=True, slot=None, priority=priority.value, wait_seconds=0,
            waited_seconds=0, queued_critical=0, queued_normal=0, queued_bulk=0,
        )  # fmt: skip
    owner = payload.execution or (context.state.owner if context.state is not None else None)
    answer = context.budget.slots.claim(
        context.budget.budget, payload.event_id, priority, context.clock(), owner,
        context.slot_holder_gone,
    )  # fmt: skip
    queued = {p.value: n for p, n in answer.queued.items()}
    return CopySlotResult(
        granted=answer.granted,
        slot=answer.slot,
        priority=priority.value,
        wait_seconds=answer.wait_seconds,
        waited_seconds=answer.waited_seconds,
        queued_critical=queued.get("critical", 0),
        queued_normal=queued.get("normal", 0),
        queued_bulk=queued.get("bulk", 0),
    )
