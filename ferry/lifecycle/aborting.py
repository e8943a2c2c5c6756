"""What a failed table replication leaves, removes and is told it failed of (Abort table).

A failed run's snapshot folder is removed only when no replica table or partition
references it: a failure after or part-way through Commit leaves it in place, since
readers may already use it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from ferry.catalog import Catalog
from ferry.core.errors import CopyError, describe_error
from ferry.iceberg.recognise import metadata_location
from ferry.lifecycle.committing import release_claim, snapshot_references
from ferry.planning.plan_document import PlanDocument
from ferry.planning.replication_plan import ReplicationPlan
from ferry.planning.runs import CopierKind
from ferry.replicas.replica import CREATED_BY_EVENT
from ferry.storage import fs

logger = logging.getLogger(__name__)

#: A Distributed Map whose failed children pass its tolerance fails with this.
TOLERANCE_EXCEEDED = "States.ExceedToleratedFailureThreshold"


def failure_of(
    error: Mapping[str, Any],
    failed_state: str | None,
    document: PlanDocument | None,
    report_uri: str | None,
) -> tuple[str, str]:
    """The table's error as a name and one line, from what says most about it."""
    name, message = describe_error(error)
    if name == TOLERANCE_EXCEEDED and failed_state == "S3 server-side copy":
        # The copy Map tolerates no failed batch: what failed is the copy. (Each batch's
        # own error is in the function's log; the batches without a copy record are
        # the failed ones.)
        name, message = CopyError.__name__, f"batches of the S3 copy failed: {message}"
    if document is not None and document.copier is CopierKind.SPARK:
        name, message = _spark_failure(report_uri, name, message)
    return name, message


def _spark_failure(report_uri: str | None, name: str, message: str) -> tuple[str, str]:
    """The copy job's own report names the files it could not copy; prefer it."""
    if not report_uri:
        return name, message
    try:
        report = json.loads(fs.read_bytes(report_uri))
    except (OSError, ValueError):
        return name, message
    failed = report.get("failed") or []
    if not failed:
        return name, message
    first = failed[0]
    more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
    return (
        CopyError.__name__,
        f"{len(failed)} files not copied; first {first['source']}: {first['error']}{more}",
    )


def clean_up(plan: ReplicationPlan, replica: Catalog, keep: bool = False) -> dict[str, Any]:
    """Remove the run's snapshot unless the replica references it (or ``keep``: a failed
    copy kept for a resume, ``ferry.lifecycle.attempts``), release the run's claim on the replica
    table, drop a database the run created and left empty; what was done."""
    snapshot = plan.snapshot_location
    outcome: dict[str, Any] = {"snapshot": snapshot, "removed": False, "referencedBy": []}
    table = plan.replica_table
    if snapshot:
        references = snapshot_references(snapshot, replica, table.database, table.name)
        outcome["referencedBy"] = references
        if not references and not keep:
            try:
                fs.delete_tree(snapshot)
                outcome["removed"] = True
            except Exception as error:  # noqa: BLE001 - e.g. a location it may not touch
                # What could not be removed is left for the vacuum; the table's
                # consumers still hear FAILURE and its lock is still released. The table's
                # one line says so (``ferry.states.abort``): the log only repeats it.
                first = (str(error).strip().splitlines() or [""])[0]
                outcome["removeError"] = f"{type(error).__name__}: {first}"
                logger.info("could not remove snapshot %s: %s", snapshot, first)
    if plan.iceberg is not None and plan.iceberg.changed:
        # An Iceberg replica has no snapshot folder: this run's new metadata files go, unless
        # the replica's current metadata (its commit went through) references them.
        # Imported here: pyiceberg is for Iceberg tables only (test_cold_start_imports.py).
        from ferry.iceberg.pipeline import remove_unreferenced

        current = replica.get_table(table.database, table.name)
        now = metadata_location(current) if current is not None else None
        outcome["metadataRemoved"] = remove_unreferenced(plan.iceberg, now)
        if now == plan.iceberg.metadata_location:
            outcome["referencedBy"] = [now]
            outcome["snapshot"] = now
    if release_claim(replica, plan):
        outcome["claimReleased"] = True
    database = replica.get_database(table.database)
    if (
        database is not None
        and database.parameters.get(CREATED_BY_EVENT) == plan.event_id
        and not replica.list_table_names(table.database)
    ):
        replica.drop_database(table.database)
        outcome["droppedDatabase"] = table.database
    return outcome
