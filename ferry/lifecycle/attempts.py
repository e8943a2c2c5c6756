"""Resume instead of restart: a table's failed attempt, kept for the next run to continue.

A replication that fails in a copy state (or in Commit before it wrote anything) leaves its
snapshot folder ``<table-location>/<event-id>`` holding files already copied and verified.
Abort table keeps that folder instead of deleting it (``keep``): it writes the *attempt*
(``attempt.json`` in the run's folder: the snapshot, the failed state, the error, the
replica's event the attempt read, when it was kept) and ledgers the snapshot folder, so
housekeeping deletes it once ``housekeeping.expired-path-duration`` has passed, unless a run
took it over first. A run killed where no Abort runs (the machine of ``ferry replicate``
lost, a SIGKILL, an execution stopped) leaves its ``created#`` record and its lock, whose
holder is gone: that is an attempt too.

The next Plan of the same replica table (``ferry replicate``, the pipeline's next run, or
``ferry resume EVENT``) continues the newest attempt (``resumable``) when it is kept, within
its grace period, unreferenced, not running, not an Iceberg table's, and the replica has
not changed since the attempt planned: it adopts the attempt's event id, re-plans from the
source as it is now, and marks every file whose target is already there whole *and* was
planned by the attempt from the same source (same size, same change marker) to be reused
(``ferry.copying.manifest.REUSE``); every other file is copied. Commit still requires a copy record
for every batch of the new manifest, and a record counts only for the identical batch
(``ferry.copying.manifest.batch_digest``).

The replica never points at an attempt before its Commit: an attempt is a folder nothing
references, as any snapshot being copied.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from ferry.catalog import Catalog
from ferry.copying.manifest import read_manifest, whole_at_target
from ferry.core.errors import ReplicationInterruptedError
from ferry.core.model import Table
from ferry.lifecycle.committing import snapshot_references
from ferry.lifecycle.replica_state import ReplicaState
from ferry.lifecycle.snapshot_records import BEFORE_COMMIT
from ferry.planning.plan_document import PlanDocument, read_plan
from ferry.planning.runs import RunLocations
from ferry.replicas.ledger import Lease, LedgerEntry
from ferry.replicas.replica import REPLICATION_EVENT
from ferry.storage import fs

#: In the run's folder: the attempt Abort kept for a resume.
ATTEMPT = "attempt.json"
#: In the run's folder: the manifest of the attempt a resumed run continues (what it
#: planned, so that only files planned from the same source version are reused).
ATTEMPT_MANIFEST = "attempt-manifest.json"
#: The states whose failure leaves an attempt worth continuing: its copies.
COPY_STATES = frozenset({"Inline copy", "S3 server-side copy", "Spark copy"})
NO_ATTEMPT = "the replica has no failed attempt"
#: In the run's folder of an item's event: the attempt's event its Plan continued instead.
RESUMED_AS = "resumed-as.json"


@dataclass(frozen=True)
class Attempt:
    """A failed attempt of one event, kept for a resume."""

    event_id: str
    snapshot: str
    #: When it was kept (Abort) or created (a run killed before its Abort).
    since: datetime
    #: Until when it may be resumed: after it, housekeeping deletes it.
    until: datetime
    failed_state: str | None
    error: str | None


def keeps(
    state: ReplicaState | None,
    document: PlanDocument,
    failed_state: str | None,
    error_name: str,
    run_root: str,
) -> bool:
    """Whether Abort keeps this failed attempt for a resume instead of removing it.

    A Hive table's copy that failed in a copy state, or in Commit before it wrote anything
    (no ``locations-before-commit.json`` yet), after it copied at least one file, with a
    state store to record it in. Not an interruption by a person (Ctrl-C asks to stop, not
    to keep), and not an Iceberg table: its run's new metadata files are named per attempt
    and its copies are already the intent's, which housekeeping handles
    (``ferry.lifecycle.iceberg_intent.iceberg_writes_intended``).
    """
    plan = document.plan
    if state is None or plan.iceberg is not None or not plan.snapshot_location:
        return False
    if error_name == ReplicationInterruptedError.__name__:
        return False
    if failed_state not in COPY_STATES and not (
        failed_state == "Commit" and not fs.exists(fs.join(run_root, BEFORE_COMMIT))
    ):
        return False
    return _holds_files(plan.snapshot_location)


def _holds_files(location: str) -> bool:
    """Whether a copy wrote anything there (nothing: there is nothing to continue)."""
    try:
        return any(not entry.uri.endswith(fs.PARTIAL) for entry in fs.list_files(location))
    except Exception:  # noqa: BLE001 - a location it cannot list holds nothing to resume
        return False


def keep(
    state: ReplicaState,
    replica_key: str,
    document: PlanDocument,
    run_root: str,
    failed_state: str | None,
    error: str,
    now: datetime,
    grace: timedelta,
) -> datetime:
    """Record the attempt and ledger its snapshot folder; until when it may be resumed."""
    plan = document.plan
    assert plan.snapshot_location is not None
    snapshot = fs.normalise(plan.snapshot_location)
    attempt = {
        "eventId": plan.event_id,
        "snapshot": snapshot,
        "failedState": failed_state,
        "error": error,
        "replicaEvent": _event_of(plan.replica_before),
        "keptAt": now.isoformat(),
    }
    fs.write_bytes(fs.join(run_root, ATTEMPT), json.dumps(attempt, indent=1).encode())
    state.store.record(
        [
            LedgerEntry(
                replica=replica_key,
                path=snapshot,
                event_id=plan.event_id,
                replica_table=plan.replication.replica_qualified_name,
                recorded_at=now,
                snapshot=snapshot,
            )
        ]
    )
    return now + grace


def resumable(
    state: ReplicaState | None,
    replica_key: str,
    work_uri: str,
    replica: Catalog,
    now: datetime,
    grace: timedelta,
    gone: Callable[[Lease], bool],
    replica_table: tuple[str, str],
    event_id: str | None = None,
) -> tuple[Attempt | None, str]:
    """The replica's attempt a run may continue (the newest; ``event_id``: that one), or
    None and why not, in a few words. ``replica_table``: its database and name."""
    if state is None:
        return None, "no state store records attempts"
    lease = state.store.lease(replica_key)
    created = sorted(state.store.created(replica_key), key=lambda c: c.created_at, reverse=True)
    if event_id is not None:
        if _committed(work_uri, event_id, replica):
            return None, "it committed"
        created = [c for c in created if c.event_id == event_id]
        if not created:
            return None, "no attempt of it is kept (never planned here, or housekeeping deleted it)"
    current = _event_of(replica.get_table(*replica_table))
    for record in created:
        if record.event_id == current:
            # The replica's current snapshot: every snapshot created before it planned
            # against an older replica, and is no attempt to continue (nor read further).
            break
        where = RunLocations.for_event(work_uri, record.event_id)
        attempt_uri = fs.join(where.root, ATTEMPT)
        killed = lease is not None and lease.holder == record.event_id
        kept = json.loads(fs.read_bytes(attempt_uri)) if fs.exists(attempt_uri) else {}
        if "resumedAt" in kept:
            # A run took it over: killed since (its lock's holder gone), it is an attempt
            # from when that run planned; else that run committed, or failed and was kept.
            kept = {}
        if kept:
            since = datetime.fromisoformat(kept["keptAt"])
            failed, error = kept.get("failedState"), kept.get("error")
        elif killed:
            since, failed, error = record.created_at, None, "the run was stopped before its Abort"
        elif event_id is not None:
            return None, "no attempt of it is kept (it committed, or its failure removed it)"
        else:
            continue
        if not fs.exists(where.plan):
            return None, "its plan is gone from the work location"
        if killed and lease is not None and not lease.expired(now) and not gone(lease):
            return None, f"it is still running (it holds the replica's lock until {_at(lease)})"
        if now >= since + grace:
            return None, f"its grace period ended at {_at_time(since + grace)}"
        document = read_plan(where.plan)
        plan = document.plan
        if plan.iceberg is not None:
            return None, "an Iceberg table's attempt is not continued"
        table = replica.get_table(plan.replica_table.database, plan.replica_table.name)
        if _event_of(table) == record.event_id:
            return None, "it committed"
        references = snapshot_references(
            record.path, replica, plan.replica_table.database, plan.replica_table.name
        )
        if references:
            return None, f"the replica references its snapshot ({references[0]})"
        if _event_of(table) != _event_of(plan.replica_before):
            return None, (
                f"the replica changed since it planned (event {_event_of(table)}, "
                f"not {_event_of(plan.replica_before)})"
            )
        return Attempt(record.event_id, record.path, since, since + grace, failed, error), ""
    return None, NO_ATTEMPT


def take(
    state: ReplicaState, replica_key: str, attempt: Attempt, work_uri: str, now: datetime
) -> None:
    """A run continues ``attempt``: housekeeping may no longer delete it (its ledger entry
    goes; the run holds the lock), and its manifest is kept as what the attempt planned.

    A manifest a killed Plan left incomplete is not kept: the one before it stays.
    """
    where = RunLocations.for_event(work_uri, attempt.event_id)
    state.store.forget(replica_key, attempt.snapshot)
    previous = fs.join(where.root, ATTEMPT_MANIFEST)
    if fs.exists(where.manifest):
        try:
            json.loads(fs.read_bytes(where.manifest))
        except ValueError:
            pass
        else:
            fs.write_bytes(previous, fs.read_bytes(where.manifest))
    attempt_uri = fs.join(where.root, ATTEMPT)
    if fs.exists(attempt_uri):
        # Marked, not deleted (Plan writes the run's folder, it deletes nothing there): a
        # run continuing it holds the lock; failed again, its Abort keeps it anew.
        kept = json.loads(fs.read_bytes(attempt_uri))
        kept["resumedAt"] = now.isoformat()
        fs.write_bytes(attempt_uri, json.dumps(kept, indent=1).encode())


def record_resumed_as(work_uri: str, item_event: str, attempt: Attempt) -> None:
    """In the run's folder of the event its item was given: the attempt's event it
    continues instead (Summarize, aborting a table whose iteration failed uncaught, finds
    the plan by the item's event id)."""
    if item_event != attempt.event_id:
        where = fs.join(RunLocations.for_event(work_uri, item_event).root, RESUMED_AS)
        fs.write_bytes(where, json.dumps({"eventId": attempt.event_id}).encode())


def resumed_as(work_uri: str, item_event: str) -> str:
    """The event whose run the item's event continued (``record_resumed_as``), else itself."""
    where = fs.join(RunLocations.for_event(work_uri, item_event).root, RESUMED_AS)
    if not fs.exists(where):
        return item_event
    return str(json.loads(fs.read_bytes(where))["eventId"])


def reusable_targets(work_uri: str, event_id: str) -> Mapping[str, tuple[str, int, str | None]]:
    """The targets the attempt copied whole, each with the source, size and change marker
    it planned (``ferry.copying.manifest.ManifestWriter``'s ``reusable``)."""
    previous = fs.join(RunLocations.for_event(work_uri, event_id).root, ATTEMPT_MANIFEST)
    if not fs.exists(previous):
        return {}
    whole, _ = whole_at_target(read_manifest(previous).tasks)
    return {task.target: (task.source, task.size, task.marker) for task in whole}


def _committed(work_uri: str, event_id: str, replica: Catalog) -> bool:
    """Whether ``event_id`` is the replica table's current event (its plan names the table)."""
    where = RunLocations.for_event(work_uri, event_id)
    if not fs.exists(where.plan):
        return False
    table = read_plan(where.plan).plan.replica_table
    return _event_of(replica.get_table(table.database, table.name)) == event_id


def _event_of(table: Table | None) -> str | None:
    return table.parameters.get(REPLICATION_EVENT) if table is not None else None


def _at(lease: Lease) -> str:
    return _at_time(lease.expires_at)


def _at_time(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
