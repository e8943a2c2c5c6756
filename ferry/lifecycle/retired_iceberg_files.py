"""Housekeeping of an Iceberg replica's runs' intents: the files a run wrote at the replica
and never committed, deleted once their grace period is over
(``ferry.lifecycle.retired_snapshots`` has the rules; ``ferry.lifecycle.iceberg_intent`` the
write-ahead record they are read from)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ferry.catalog.locations import Paths
from ferry.config import Housekeeping
from ferry.lifecycle.housekeeping_report import Action, PathOutcome, Request
from ferry.lifecycle.iceberg_intent import intended_files
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import LedgerEntry
from ferry.replicas.ownership import IcebergOwnership
from ferry.storage import fs


def housekeep_intents(
    intents: Sequence[LedgerEntry],
    owner: IcebergOwnership,
    waiting: Paths,
    policy: Housekeeping,
    now: datetime,
    request: Request,
    state: ReplicaState,
    key: str,
) -> list[PathOutcome]:
    """Iceberg runs' intents (``ferry.lifecycle.iceberg_intent.iceberg_writes_intended``: the
    files a run was about to write at the replica, ledgered before it wrote any; a commit
    forgets its run's). Past the grace period, each of those files that exists, that the replica's
    current metadata does not reference and that Ferry owns (``IcebergOwnership``) is
    deleted: what a run left that failed, or was killed, before its commit. An intent is
    forgotten once none of its files is left undecided."""
    grace = policy.expired_path_duration
    outcomes = []
    for entry in intents:

        def outcome(
            path: str, action: Action, reason: str, entry: LedgerEntry = entry
        ) -> PathOutcome:
            return PathOutcome(path, action, reason, entry.event_id, entry.recorded_at.isoformat())

        expires = entry.recorded_at + grace
        if not policy.enabled:
            reason = "orphaned-data-strategy is NONE: housekeeping keeps everything"
            outcomes.append(outcome(entry.path, Action.KEPT, reason))
            continue
        if now < expires:
            until = expires.isoformat(timespec="seconds")
            reason = f"the files run {entry.event_id} writes: in their grace period until {until}"
            outcomes.append(outcome(entry.path, Action.KEPT, reason))
            continue
        if owner.owns_nothing:
            outcomes.append(outcome(entry.path, Action.KEPT, owner.owns_nothing))
            continue
        settled = True
        for path in intended_files(entry.path):
            # Referenced files first: no I/O for them (a committed run's, all of them).
            if path in owner.current or not fs.exists(path):
                continue
            refusal = owner.refusal(path)
            if refusal is None and (below := waiting.at_or_below(path)):
                refusal = f"{below[0]} is still in its grace period"
            if refusal is not None:
                outcomes.append(outcome(path, Action.KEPT, refusal))
                settled = False
                continue
            if not request.dry_run:
                fs.delete_tree(path)
            action = Action.WOULD_DELETE if request.dry_run else Action.DELETED
            reason = f"written by {entry.event_id}, which did not commit it; unreferenced"
            outcomes.append(outcome(path, action, reason))
        if settled and not request.dry_run:
            state.store.forget(key, entry.path)
    return sorted(outcomes, key=lambda o: o.path)
