"""Housekeeping: delete superseded snapshots once no reader can still be using them.

Every commit records the locations it superseded in the ledger
(``ferry.lifecycle.snapshot_records``). Housekeeping, per replica table of the config,
deletes an entry's location when all of:

- its grace period is over: it was superseded longer ago than the table's
  ``housekeeping.expired-path-duration`` (ISO-8601, default ``P3D``): a reader that
  resolved the old location just before the commit has had that long to finish;
- the replica catalog, asked right before, references nothing at or below it (nor a
  location it lies in: an unpartitioned table's data folder);
- no other ledger entry below it is still in its grace period;
- Ferry owns it (``ferry.replicas.ownership``): it lies in a snapshot folder Ferry created, no table
  of the replica databases references it, it is not inside a source's location, and the
  replica is not a METADATA_MIRROR (a mirror owns nothing, whatever its config says);
- the table's ``orphaned-data-strategy`` is not ``NONE`` (which keeps everything);
- no run holds the replica's lock for the entry's event: a failed attempt kept for a resume
  (``ferry.lifecycle.attempts``, ledgered by Abort table under its own event) that a run is
  continuing.

An **Iceberg replica** has no snapshot folders; its ledger names files (those only
superseded replica metadata referenced) and runs' intents (the files a run was about to
write, ledgered by Plan before it wrote any: what a run that failed or was killed before its
commit left), each file deleted once its grace period is over when it lies below a
table-location a run recorded, outside the source's location, and is not referenced by the
replica's current metadata (every snapshot it keeps), read right before; nothing while a
replication holds the replica's lock (``ferry.lifecycle.retired_iceberg_files``). The vacuum
looks for event folders, which an Iceberg replica never has.

A dry run deletes nothing and reports what it would delete. The **vacuum** lists the
snapshot folders (named by an event id) directly below the table's locations — today's,
and each earlier one the replica recorded snapshots below — that neither the catalog nor
the ledger knows: what a run killed part-way through its copy leaves behind, or a snapshot
whose ledger entries a crash lost. It deletes them only when asked, and only those Ferry
owns: it then hands them to the ledger, so they are deleted like any superseded snapshot,
once a grace period has passed since Ferry first saw them unreferenced. A folder whose
event holds the table's lock (a copy still running) is never handed over
(``ferry.lifecycle.snapshot_vacuum``). What was asked and what was done are
``ferry.lifecycle.housekeeping_report``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ferry.catalog import Catalog
from ferry.catalog.locations import DatabaseReferences, Paths, locations_of
from ferry.config import Housekeeping, ReplicationConfig, ReplicationMode, TableReplication
from ferry.core.duration import format_duration
from ferry.core.errors import FerryError
from ferry.iceberg.recognise import is_iceberg, metadata_location
from ferry.lifecycle import snapshot_records
from ferry.lifecycle.housekeeping_report import (
    Action,
    HousekeepingReport,
    PathOutcome,
    Request,
    TableHousekeeping,
)
from ferry.lifecycle.replica_state import ReplicaState
from ferry.lifecycle.retired_iceberg_files import housekeep_intents
from ferry.lifecycle.snapshot_vacuum import vacuum
from ferry.replicas.ledger import LedgerEntry
from ferry.replicas.ownership import IcebergOwnership, Ownership
from ferry.replicas.replica import PROMOTED
from ferry.storage import fs


def housekeep(
    config: ReplicationConfig,
    replications: Sequence[TableReplication],
    replica: Catalog,
    state: ReplicaState | None,
    now: datetime,
    key_of: Callable[[TableReplication], str],
    request: Request,
) -> HousekeepingReport:
    """Housekeeping (and the vacuum, if asked) of the replica tables of ``replications``
    (the config's, patterns expanded, as the run selected them)."""
    if state is None:
        raise FerryError(
            "housekeeping needs the state store that holds the snapshot ledger "
            "(FERRY_STATE_TABLE for the pipeline; --state-table or --home for the CLI)"
        )
    report = HousekeepingReport(
        dry_run=request.dry_run,
        vacuum=request.vacuum,
        delete_orphans=request.delete_orphans,
        started=now.isoformat(),
        state=state.store.description,
    )
    # Every table of the replica databases the config writes to: read once, when a deletion
    # is first about to happen.
    catalog = DatabaseReferences(replica, {r.replica_database for r in replications})
    for replication in replications:
        report.tables.append(
            _housekeep_table(
                config, replication, replica, state, now, key_of(replication), request, catalog
            )
        )
    return report


def _housekeep_table(
    config: ReplicationConfig,
    replication: TableReplication,
    replica: Catalog,
    state: ReplicaState,
    now: datetime,
    key: str,
    request: Request,
    catalog: DatabaseReferences,
) -> TableHousekeeping:
    policy = config.housekeeping_for(replication)
    root = replication.replica_table.table_location
    outcome = TableHousekeeping(
        source_table=replication.source_table.qualified_name,
        replica_table=replication.replica_qualified_name,
        location=root,
        grace_period=format_duration(policy.expired_path_duration),
        strategy=policy.orphaned_data_strategy.value,
    )
    if replication.replication_mode is ReplicationMode.METADATA_MIRROR:
        outcome.skipped = (
            "METADATA_MIRROR: the replica points at the source's data; Ferry owns none of it"
        )
        return outcome
    entries = state.store.entries(key)
    created = state.store.created(key)
    if not root and not entries and not created:
        outcome.skipped = "no replica-table.table-location: Ferry manages no data of this table"
        return outcome
    # The catalog, asked right before deleting: nothing it references is ever deleted.
    table = replica.get_table(replication.replica_database, replication.replica_table_name)
    if table is not None and PROMOTED in table.parameters:
        # Writers own it since the failover, and may be using any of its snapshot folders.
        outcome.skipped = (
            f"promoted by ferry failover ({table.parameters[PROMOTED]}): nothing of it is "
            "deleted until ferry failback"
        )
        return outcome
    intents = [e for e in entries if e.intent]
    entries = [e for e in entries if not e.intent]
    if (table is not None and is_iceberg(table)) or (table is None and intents):
        # An Iceberg replica (or the first run of one, which never committed): the ledger's
        # files and the runs' intents, against its current metadata read now. Imported
        # here: pyiceberg is for Iceberg tables only (test_cold_start_imports.py).
        from ferry.iceberg.pipeline import CurrentReferences

        iceberg = snapshot_records.iceberg_ownership(
            state,
            key,
            CurrentReferences(metadata_location(table) if table is not None else None),
            table.parameters if table is not None else {},
            now,
        )
        outcome.ledger = housekeep_ledger(entries, iceberg, policy, now, request, state, key)
        grace = policy.expired_path_duration
        waiting = Paths(e.path for e in entries if now < e.recorded_at + grace)
        outcome.ledger += housekeep_intents(
            intents, iceberg, waiting, policy, now, request, state, key
        )
        return outcome
    live = locations_of(replica, table)
    owner = snapshot_records.ownership(
        state, key, replication, live, table.parameters if table else None, catalog,
        ledgered=[e.snapshot for e in entries if e.snapshot],
    )  # fmt: skip
    outcome.ledger = housekeep_ledger(entries, owner, policy, now, request, state, key)
    if owner.owns_nothing:
        return outcome
    if request.vacuum:
        remaining = [e.path for e in entries if e.path not in _deleted(outcome.ledger)]
        lease = state.store.lease(key)
        holder = lease.holder if lease is not None and not lease.expired(now) else None
        roots = sorted({fs.normalise(r) for r in [root, *(c.root for c in created)] if r})
        outcome.orphans = vacuum(
            roots, owner, remaining, holder, policy, now, request,
            state, key, replication.replica_qualified_name,
        )  # fmt: skip
    return outcome


def _deleted(outcomes: Sequence[PathOutcome]) -> set[str]:
    return {o.path for o in outcomes if o.action is Action.DELETED}


def housekeep_ledger(
    entries: Sequence[LedgerEntry],
    owner: Ownership | IcebergOwnership,
    policy: Housekeeping,
    now: datetime,
    request: Request,
    state: ReplicaState,
    key: str,
) -> list[PathOutcome]:
    """Decide, entry by entry, and delete (unless a dry run) what may go; the outcomes.

    ``owner`` says what Ferry may delete at all (``ferry.replicas.ownership``): only folders it
    created, nothing any table references, nothing inside a source's location.
    """
    grace = policy.expired_path_duration
    waiting = Paths(e.path for e in entries if now < e.recorded_at + grace)
    # A failed attempt kept for a resume (``ferry.lifecycle.attempts``) that a run is continuing.
    lease = state.store.lease(key)
    running = lease.holder if lease is not None and not lease.expired(now) else None
    outcomes = []
    # Deepest first: a partition's folder goes before the snapshot folder that holds it.
    for entry in sorted(entries, key=lambda e: (-e.path.count("/"), e.path)):

        def kept(reason: str, entry: LedgerEntry = entry) -> PathOutcome:
            return PathOutcome(
                entry.path, Action.KEPT, reason, entry.event_id, entry.recorded_at.isoformat()
            )

        expires = entry.recorded_at + grace
        if not policy.enabled:
            outcomes.append(kept("orphaned-data-strategy is NONE: housekeeping keeps everything"))
        elif now < expires:
            outcomes.append(
                kept(f"in its grace period until {expires.isoformat(timespec='seconds')}")
            )
        elif refusal := owner.refusal(entry.path):
            outcomes.append(kept(refusal))
        elif entry.event_id == running:
            outcomes.append(kept(f"event {running} holds the replica's lock: a run continues it"))
        elif below := waiting.at_or_below(entry.path, exclude=entry.path):
            outcomes.append(kept(f"{below[0]} below it is still in its grace period"))
        else:
            superseded = entry.recorded_at.isoformat(timespec="seconds")
            reason = f"superseded by {entry.event_id} at {superseded}"
            if not request.dry_run:
                fs.delete_tree(entry.path)
                state.store.forget(key, entry.path)
                if owner.recorded(entry.path) and entry.path == owner.snapshot_of(entry.path):
                    state.store.forget_created(key, fs.normalise(entry.path))
            outcomes.append(
                PathOutcome(
                    entry.path,
                    Action.WOULD_DELETE if request.dry_run else Action.DELETED,
                    reason,
                    entry.event_id,
                    entry.recorded_at.isoformat(),
                )
            )
    return sorted(outcomes, key=lambda o: o.path)
