"""State `Inline copy`: copy a small manifest here, batch by batch, verified; a retry skips
the batches already recorded (``ferry.lifecycle.copy_work``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.copying.copier import Progress
from ferry.lifecycle import copy_work
from ferry.planning.plan_document import read_plan
from ferry.planning.runs import RunLocations
from ferry.statemachine.replication_payloads import InlineCopyResult, PlannedRun
from ferry.states.context import StateContext


def run(
    context: StateContext, payload: PlannedRun | Mapping[str, Any], progress: Progress | None = None
) -> InlineCopyResult:
    """Copy the run's manifest with the table's copier options."""
    document = read_plan(PlannedRun.model_validate(payload).plan_uri)
    config = context.load(document.config_uri)
    options = config.copier_options_for(document.plan.replication)
    where = RunLocations.for_event(context.work_uri, document.plan.event_id)
    return copy_work.copy_inline(where.manifest, options, progress)
