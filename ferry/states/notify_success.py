"""State `Notify success`: tell consumers SUCCESS; the table's outcome (UNCHANGED when
nothing was done).

A message that cannot be published raises ``NotificationError``: the replica keeps its new
snapshot (Abort checks the catalog before removing anything) and the table is reported as
failed to notify.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.core import faults
from ferry.lifecycle import replica_state
from ferry.lifecycle.notify import SUCCESS
from ferry.planning.plan_document import read_plan
from ferry.planning.runs import CopierKind
from ferry.statemachine.replication_payloads import NotifySuccessResult, PlannedRun
from ferry.states.context import StateContext


def run(context: StateContext, payload: PlannedRun | Mapping[str, Any]) -> NotifySuccessResult:
    """Publish SUCCESS, release the replica's lock, and say what the run did."""
    document = read_plan(PlannedRun.model_validate(payload).plan_uri)
    plan = document.plan
    config = context.load(document.config_uri)
    unchanged = document.copier is CopierKind.NONE
    event = context.event(
        config, plan.replication, SUCCESS, plan.event_id, document.started, plan,
        copied=not unchanged,
    )  # fmt: skip
    faults.point("notify.success")
    context.publish(config, event)
    if unchanged:  # nothing to do: the replica is in sync with what Plan read
        context.record_success(config, document)
    replica_state.release_lock(
        context.state, context.replica_key(config, plan.replication), plan.event_id
    )
    ended = event.end_time or document.started
    return NotifySuccessResult(
        status="UNCHANGED" if unchanged else "SUCCEEDED",
        source_table=plan.source_table.qualified_name,
        replica_table=plan.replication.replica_qualified_name,
        event_id=plan.event_id,
        replica_location=plan.replica_table.location,
        partition_filter=plan.partition_filter,
        files=0 if unchanged else plan.manifest.files,
        bytes=0 if unchanged else plan.manifest.bytes,
        partitions=0 if unchanged else len(plan.replica_partitions),
        iceberg_snapshots=(
            len(plan.iceberg.new_snapshot_ids) if plan.iceberg and not unchanged else 0
        ),
        priority=plan.replication.priority.value,
        duration_seconds=(ended - document.started).total_seconds(),
        lag_seconds=(ended - (document.triggered or document.started)).total_seconds(),
    )
