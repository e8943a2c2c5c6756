"""What a run creates, and what its commit supersedes: the records that make a snapshot Ferry's
to delete, and the ledger entries housekeeping deletes them by.

The states call the functions here with the run's ``ReplicaState``
(``ferry.lifecycle.replica_state``):

- **Plan**, once planned: ``snapshot_created`` records the snapshot folder the run is about to
  write (what makes it Ferry's to delete later, ``ferry.replicas.ownership``);
- **Commit**: ``locations_before_commit`` reads every location the replica references before
  anything is written (kept in the run's folder, so a retried commit uses the first attempt's),
  and ``committed`` records in the ledger each one no longer referenced afterwards (worked out
  from before and the plan where it can be, ``ferry.lifecycle.commit_locations``) that lies in
  a snapshot folder Ferry created (and an Iceberg run's retired files), fulfils the run's
  intent (``ferry.lifecycle.iceberg_intent``), then releases the lock.

Housekeeping (``ferry.lifecycle.retired_snapshots``) asks ``ownership`` and
``iceberg_ownership`` what a replica's deletions must respect. Without a state (``None``) every
function does nothing.
"""

from __future__ import annotations

import json
from collections.abc import Container, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ferry.catalog import Catalog
from ferry.catalog.locations import (
    DatabaseReferences,
    ReferencedLocations,
)
from ferry.config import ReplicationMode, TableReplication
from ferry.iceberg.recognise import moved_since_commit
from ferry.lifecycle.commit_locations import BeforeCommit, after_commit, read_before
from ferry.lifecycle.iceberg_intent import ICEBERG_INTENT, intended_files
from ferry.lifecycle.replica_as_planned import read_replica_as_planned
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import CreatedSnapshot, LedgerEntry
from ferry.replicas.ownership import IcebergOwnership, Ownership
from ferry.replicas.replica import REPLICATION_MODE, SOURCE_LOCATION
from ferry.storage import fs

if TYPE_CHECKING:  # the plan's model brings pyiceberg, which a Hive table's run never loads
    from ferry.planning.replication_plan import ReplicationPlan

#: In the run's folder: every location the replica referenced before the commit wrote.
BEFORE_COMMIT = "locations-before-commit.json"


def snapshot_created(
    state: ReplicaState | None, replica_key_: str, plan: ReplicationPlan, now: datetime
) -> None:
    """Record the snapshot folder this run writes, before it writes anything.

    With the table-location and the source's location of this run: later deletions trust
    this record, not the config of their day. Recording it again (a retried Plan) overwrites
    the same record.
    """
    if state is None or plan.mode is ReplicationMode.METADATA_MIRROR:
        return
    written = plan.snapshot_location
    if plan.iceberg is not None and plan.iceberg.changed:
        # An Iceberg replica's files go below its table-location itself (no event folder):
        # the record says Ferry writes there; what it may delete is what it ledgers.
        written = plan.replication.replica_table.table_location
    if not written:
        return
    state.store.record_created(
        CreatedSnapshot(
            replica=replica_key_,
            path=fs.normalise(written),
            event_id=plan.event_id,
            root=fs.normalise(plan.replication.replica_table.table_location or ""),
            source_location=(
                fs.normalise(plan.source_table.location) if plan.source_table.location else None
            ),
            created_at=now,
        )
    )


def ownership(
    state: ReplicaState,
    replica_key_: str,
    replication: TableReplication,
    replica: ReferencedLocations,
    replica_parameters: Mapping[str, str] | None = None,
    catalog: DatabaseReferences | None = None,
    ledgered: Sequence[str] = (),
) -> Ownership:
    """What one replica's deletions must respect (``ferry.replicas.ownership``).

    ``replica_parameters``: the replica table's, as the catalog holds them now (its mode and
    its source's location).
    """
    parameters = replica_parameters or {}
    mirror = replication.replication_mode is ReplicationMode.METADATA_MIRROR or (
        parameters.get(REPLICATION_MODE) == ReplicationMode.METADATA_MIRROR.value
    )
    return Ownership(
        replica=replica,
        created=state.store.created(replica_key_),
        root=replication.replica_table.table_location,
        sources=[parameters[SOURCE_LOCATION]] if parameters.get(SOURCE_LOCATION) else [],
        owns_nothing=(
            "METADATA_MIRROR: the replica points at the source's data; Ferry owns none of it"
            if mirror
            else None
        ),
        catalog=catalog,
        ledgered=ledgered,
        recording_since=state.store.recording_since(replica_key_),
    )


def iceberg_ownership(
    state: ReplicaState,
    replica_key_: str,
    current: Container[str],
    replica_parameters: Mapping[str, str],
    now: datetime,
) -> IcebergOwnership:
    """What an Iceberg replica's deletions must respect (``ferry.replicas.ownership``): ``current``,
    the files its current metadata needs; nothing while a replication holds its lock (its
    copies, not referenced yet, may be files a failed run ledgered)."""
    lease = state.store.lease(replica_key_)
    running = lease is not None and not lease.expired(now)
    created = state.store.created(replica_key_)
    sources = [c.source_location for c in created if c.source_location]
    if source := replica_parameters.get(SOURCE_LOCATION):
        sources.append(source)
    moved = moved_since_commit(replica_parameters)
    if running and lease is not None:
        owns_nothing = (
            f"replication {lease.holder} holds the replica's lock: it may be copying this file"
        )
    elif moved is not None:
        # Another writer committed to the replica (or it was promoted after a failover): its
        # metadata is no longer Ferry's to reason about, so nothing of it is deleted.
        owns_nothing = (
            f"another writer committed to the replica (its metadata is {moved}, not the one "
            "Ferry committed): Ferry deletes nothing of it"
        )
    else:
        owns_nothing = None
    return IcebergOwnership(
        current=current,
        roots=[c.root for c in created if c.root],
        sources=sources,
        owns_nothing=owns_nothing,
    )


def iceberg_files_ledgered(
    state: ReplicaState | None,
    replica_key_: str,
    plan: ReplicationPlan,
    paths: Sequence[str],
    now: datetime,
) -> list[str]:
    """Ledger files Ferry wrote below an Iceberg replica's table-location that no metadata
    of the replica may need any more: the ``retired`` ones (only superseded metadata
    referenced them), files of an earlier attempt of a committed run. Housekeeping deletes
    each after the grace period, once the replica's current metadata, read then, does not
    reference it."""
    root = plan.replication.replica_table.table_location
    if state is None or not root or plan.mode is ReplicationMode.METADATA_MIRROR:
        return []
    below = [path for path in paths if fs.relative_path(path, root)]
    _ledger(state, replica_key_, plan, [(path, fs.normalise(root)) for path in below], now)
    return below


def _ledger(
    state: ReplicaState,
    replica_key_: str,
    plan: ReplicationPlan,
    paths: Sequence[tuple[str, str | None]],
    now: datetime,
) -> None:
    """Ledger ``paths`` (each with the snapshot folder, or the Iceberg table-location, that
    holds it) for ``plan``'s event."""
    state.store.record(
        [
            LedgerEntry(
                replica=replica_key_,
                path=path,
                event_id=plan.event_id,
                replica_table=plan.replication.replica_qualified_name,
                recorded_at=now,
                snapshot=snapshot,
            )
            for path, snapshot in paths
        ]
    )


def _intent_fulfilled(
    state: ReplicaState, replica_key_: str, plan: ReplicationPlan, run_root: str, now: datetime
) -> None:
    """After a successful Iceberg commit: every file of this Plan's attempt is referenced
    now, and goes the way of referenced files (``retired`` when superseded). Files of an
    earlier attempt of the same Plan (another metadata.json name) are not: they are ledgered
    as any unreferenced file Ferry wrote. Then the intent goes."""
    assert plan.iceberg is not None
    where = fs.join(run_root, ICEBERG_INTENT)
    this_attempt = {*plan.iceberg.written, *plan.iceberg.rewritten_deletes}
    earlier = [p for p in intended_files(where, copies=False) if p not in this_attempt]
    iceberg_files_ledgered(state, replica_key_, plan, earlier, now)
    state.store.forget(replica_key_, where)


def locations_before_commit(
    state: ReplicaState | None, plan: ReplicationPlan, replica: Catalog, run_root: str
) -> BeforeCommit | None:
    """What the replica references before this commit writes anything (None: not needed).

    Kept under the run's folder the first time: a commit retried after it wrote part of the
    replica must compare with what was there before its first attempt, not with that part.
    The first time, the partitions Plan read stand for a listing while the replica table is
    as Plan read it (``ferry.lifecycle.replica_as_planned``); else the catalog is read.
    A mirror supersedes nothing of Ferry's: it owns no data.
    """
    if state is None or plan.mode is ReplicationMode.METADATA_MIRROR:
        return None
    where = fs.join(run_root, BEFORE_COMMIT)
    if fs.exists(where):
        return BeforeCommit.from_json(json.loads(fs.read_bytes(where)))
    table = plan.replica_table
    current = replica.get_table(table.database, table.name)
    planned = read_replica_as_planned(run_root, current)
    before = planned if planned is not None else read_before(replica, current)
    fs.write_bytes(where, json.dumps(before.to_json()).encode())
    return before


def superseded_locations(
    before: list[str], after: list[str], owner: Ownership
) -> list[tuple[str, str]]:
    """Locations referenced before and not after that lie in a snapshot folder Ferry created,
    each with that folder.

    Only those are Ferry's (``ferry.replicas.ownership``); a location elsewhere (a mirrored table's
    source data, a location someone else set, anything below a table-location that merely
    changed to hold it) is never the ledger's.
    """
    if owner.owns_nothing:
        return []
    gone = sorted(set(before) - set(after))
    return [(path, snapshot) for path in gone if (snapshot := owner.snapshot_of(path))]


def committed(
    state: ReplicaState | None,
    replica_key_: str,
    plan: ReplicationPlan,
    replica: Catalog,
    before: BeforeCommit | None,
    now: datetime,
    run_root: str | None = None,
) -> list[str]:
    """After a successful commit: ledger what it superseded, release the lock; the paths.

    Recording the same paths again (a retried commit) overwrites the same entries. An
    Iceberg run's intent (in ``run_root``, its folder) is fulfilled: forgotten.
    """
    if state is None:
        return []
    superseded: list[tuple[str, str]] = []
    # Only what the replica referenced before can be superseded: a replica that referenced
    # nothing (its first commit) is not read again, which on a first run of many
    # partitions would list every partition just written.
    if before:
        table = plan.replica_table
        after = after_commit(replica, before, plan)
        owner = ownership(state, replica_key_, plan.replication, after, table.parameters)
        superseded = superseded_locations(before.locations, after.locations, owner)
        _ledger(state, replica_key_, plan, superseded, now)
    if plan.iceberg is not None and plan.iceberg.changed:
        from ferry.iceberg.pipeline import retired_by

        dropped = retired_by(plan.iceberg)
        retired = iceberg_files_ledgered(state, replica_key_, plan, dropped, now)
        superseded += [(path, path) for path in retired]
        if run_root is not None:
            _intent_fulfilled(state, replica_key_, plan, run_root, now)
    state.store.release(replica_key_, plan.event_id)
    return [path for path, _ in superseded]
