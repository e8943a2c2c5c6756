"""State `Abort table`: a table failed: remove what nothing references, tell consumers, name
the error (the clean-up rules themselves are ``ferry.lifecycle.aborting``; this module is the
state).

The snapshot folder is removed only when no replica table or partition references it (a
failure after or part-way through Commit leaves it in place: readers may use it). What was
removed or kept is recorded in the run's ``abort.json``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from ferry.config import ReplicationConfig
from ferry.core.errors import FerryError, NotificationError
from ferry.lifecycle import attempts, replica_state
from ferry.lifecycle.aborting import clean_up, failure_of
from ferry.lifecycle.notify import FAILURE
from ferry.planning.plan_document import PlanDocument, read_plan
from ferry.planning.runs import RunLocations
from ferry.statemachine.replication_payloads import AbortInput, AbortResult, PlanLocations
from ferry.states.context import StateContext
from ferry.storage import fs

logger = logging.getLogger(__name__)


def run(context: StateContext, payload: AbortInput | Mapping[str, Any]) -> AbortResult:
    """Clean up, record the failure, release the lock and the copy slot, tell consumers."""
    payload = AbortInput.model_validate(payload)
    event_id, source_table = payload.event_id, payload.source_table
    planned = _plan_of(context, payload)
    document = read_plan(planned.plan_uri) if planned.plan_uri else None
    if document is not None:
        # A resumed run's plan carries the attempt's event id, not the item's.
        event_id = document.plan.event_id
    name, message = failure_of(
        payload.error.model_dump(), payload.failed_state, document, planned.report_uri
    )
    try:
        config: ReplicationConfig | None = context.load(payload.config_uri)
        replication = config.replication_of(source_table, payload.replica_table)
    except FerryError:
        config, replication = None, None  # the config itself is what failed
    outcome: dict[str, Any] = {"snapshot": None, "removed": False, "referencedBy": []}
    if document is not None and config is not None:
        outcome, message = _clean_up(context, config, document, payload, name, message)
    if config is not None and replication is not None:  # never another run's lock
        context.record_failure(config, replication, event_id, f"{name}: {message}")
        replica_state.release_lock(
            context.state, context.replica_key(config, replication), event_id
        )
    context.release_copy_slot(event_id)
    notified = False
    if config is not None and replication is not None:
        event = context.event(
            config, replication, FAILURE, event_id, payload.start_time,
            document.plan if document else None, copied=False, error_message=message,
        )  # fmt: skip
        try:
            context.publish(config, event)
            notified = True
        except NotificationError as error:
            logger.warning("%s", error)
    return AbortResult(
        status="FAILED",
        source_table=source_table,
        replica_table=replication.replica_qualified_name if replication else None,
        event_id=event_id,
        failed_state=payload.failed_state,
        error=name,
        cause=message,
        snapshot=outcome["snapshot"],
        snapshot_removed=outcome["removed"],
        notified=notified,
    )


def _plan_of(context: StateContext, payload: AbortInput) -> PlanLocations:
    """Where the table's plan is: the payload's, or, for a table Summarize aborts (its
    iteration failed where no Catch takes the error), where every plan of the event is, if
    Plan got that far."""
    planned = payload.plan or PlanLocations()
    if planned.plan_uri is None and payload.find_plan:
        where = RunLocations.for_event(
            context.work_uri, attempts.resumed_as(context.work_uri, payload.event_id)
        )
        if fs.exists(where.plan):
            planned = PlanLocations(plan_uri=where.plan, report_uri=where.report)
    return planned


def _clean_up(
    context: StateContext,
    config: ReplicationConfig,
    document: PlanDocument,
    payload: AbortInput,
    name: str,
    message: str,
) -> tuple[dict[str, Any], str]:
    """Remove the snapshot nothing references (or keep a verified copy for a resume); the
    outcome, written to the run's ``abort.json``, and the failure's message completed."""
    event_id = document.plan.event_id
    where = RunLocations.for_event(context.work_uri, event_id)
    keep = attempts.keeps(context.state, document, payload.failed_state, name, where.root)
    with context.open(config.replica_catalog) as replica:
        outcome = clean_up(document.plan, replica, keep=keep)
    if keep and not outcome["referencedBy"] and context.state is not None:
        # What was copied and verified stays for the next run to continue.
        until = attempts.keep(
            context.state, context.replica_key(config, document.plan.replication),
            document, where.root, payload.failed_state, message, context.clock(),
            config.housekeeping_for(document.plan.replication).expired_path_duration,
        )  # fmt: skip
        outcome["keptForResumeUntil"] = until.isoformat(timespec="seconds")
        message += (
            f" (its copy is kept for a resume until {outcome['keptForResumeUntil']}: "
            f"run it again, or ferry resume {event_id})"
        )
    # An Iceberg run's copies stay: its intent, ledgered by Plan, names them for
    # housekeeping (as it does when a run is killed before getting here).
    fs.write_bytes(where.abort, json.dumps(outcome).encode())
    if outcome["referencedBy"]:
        message += f" (the replica references snapshot {outcome['snapshot']}; it was kept)"
    elif outcome.get("removeError"):
        why = outcome["removeError"]
        # The same error as the failure's (the same location) is said once.
        why = "" if why.split(":", 1)[0] == name else f": {why}"
        message += f" (its snapshot {outcome['snapshot']} could not be removed{why})"
    return outcome, message


def failed_table_freshness(
    context: StateContext, aborted: AbortResult, config_uri: str | None
) -> float | None:
    """How far behind a table Abort just ended is, in seconds (its replica keeps its last
    snapshot); None when it cannot be told. Never raises: the abort comes first."""
    if config_uri is None:
        return None
    try:
        measured = context.measure_freshness(config_uri, [aborted.source_table])
    except Exception as error:  # noqa: BLE001 - a metric must not fail the abort
        logger.warning("freshness of %s not measured: %s", aborted.source_table, error)
        return None
    behind = [t.behind for t in measured if t.replica_table == aborted.replica_table]
    return behind[0].total_seconds() if behind and behind[0] is not None else None
