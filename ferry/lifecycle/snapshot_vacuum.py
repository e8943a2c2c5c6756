"""The vacuum: snapshot folders below a replica's table-locations that neither the catalog nor
the ledger knows (what a run killed part-way through its copy leaves behind), found, and, when
asked, handed to the ledger (``ferry.lifecycle.retired_snapshots`` deletes them after the grace
period)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from ferry.catalog.locations import Paths
from ferry.config import Housekeeping
from ferry.lifecycle.housekeeping_report import Action, PathOutcome, Request
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import LedgerEntry
from ferry.replicas.ownership import Ownership, event_time, is_snapshot_name
from ferry.storage import fs

#: The event id of ledger entries the vacuum recorded (folders it found unknown).
VACUUM_EVENT = "vacuum"


def vacuum(
    roots: Sequence[str],
    owner: Ownership,
    ledgered: Iterable[str],
    holder: str | None,
    policy: Housekeeping,
    now: datetime,
    request: Request,
    state: ReplicaState,
    key: str,
    replica_table: str,
) -> list[PathOutcome]:
    """Snapshot folders below the table's locations (today's, and each one it recorded
    snapshots below) that neither the catalog nor the ledger knows.

    Only folders named by an event id are looked at: nothing else below a table-location is
    Ferry's. Asked to delete them, the vacuum hands those Ferry created
    (``ferry.replicas.ownership``) to the ledger, recorded now: housekeeping deletes them once a
    grace period has passed since Ferry first saw them unreferenced, asking the catalog again
    first. Neither a folder's name nor its files' times tell when a reader last resolved it
    (a commit whose ledger entries were lost to a crash right after it leaves an old
    snapshot that readers used until a moment ago).
    """
    known = Paths(ledgered)
    orphans, handed = [], []
    for root in roots:
        try:
            folders = fs.list_folders(root)
        except FileNotFoundError:
            continue
        for folder in folders:
            path = fs.normalise(folder.uri)
            name = path.rsplit("/", 1)[-1]
            if not is_snapshot_name(name):
                continue
            if owner.replica.referencing(path) or known.at_or_below(path) or known.above(path):
                continue
            written = event_time(name) or _newest_file(path, folder.mtime_ns)
            age = f"written {written.isoformat(timespec='seconds')}" if written else "age unknown"
            unknown = f"unknown to the catalog and the ledger ({age})"
            refusal = owner.refusal(path)
            if not request.delete_orphans:
                orphans.append(PathOutcome(path, Action.FOUND, unknown))
            elif name == holder:
                orphans.append(
                    PathOutcome(path, Action.KEPT, "a replication holding the lock writes it")
                )
            elif not policy.enabled:
                orphans.append(
                    PathOutcome(path, Action.KEPT, "orphaned-data-strategy is NONE: kept")
                )
            elif refusal:
                orphans.append(PathOutcome(path, Action.KEPT, f"{unknown}; kept: {refusal}"))
            else:
                until = (now + policy.expired_path_duration).isoformat(timespec="seconds")
                action = Action.WOULD_LEDGER if request.dry_run else Action.LEDGERED
                orphans.append(PathOutcome(path, action, f"{unknown}; deleted after {until}"))
                handed.append(LedgerEntry(key, path, VACUUM_EVENT, replica_table, now, path))
    if handed and not request.dry_run:
        state.store.record(handed)
    return orphans


def _newest_file(path: str, mtime_ns: int | None) -> datetime | None:
    """When a folder was last written: its newest file's time."""
    times = [entry.mtime_ns for entry in fs.list_files(path) if entry.mtime_ns] or (
        [mtime_ns] if mtime_ns else []
    )
    return datetime.fromtimestamp(max(times) / 1e9, UTC) if times else None
