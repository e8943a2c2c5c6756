"""The snapshot lifecycle around one replication: its lock, and what its commit supersedes.

The states' ``StateContext`` (``ferry.states.context``) is given a ``ReplicaState`` (the
store of ``ferry.replicas.ledger`` plus the lease length); the states call the functions here at
four points:

- **Plan**, first thing: ``take_lock`` — one replication per replica table at a time; a
  second one fails fast with ``ReplicaLockedError``; once planned, ``snapshot_created``
  records the snapshot folder the run is about to write (what makes it Ferry's to delete
  later, ``ferry.replicas.ownership``); an Iceberg run, before it writes anything at its replica,
  ledgers its intent (``iceberg_writes_intended``: the files it will write there);
- **Commit**: ``locations_before_commit`` reads every location the replica references
  before anything is written (kept in the run's folder, so a retried commit uses the first
  attempt's), and ``committed`` records in the ledger each one no longer referenced
  afterwards that lies in a snapshot folder Ferry created — then releases the lock;
- **Notify success** (the nothing-to-do path) and **Abort**: ``release_lock``, which never
  releases another replication's lock.

Without a state (``None``) every function does nothing: no lock, no ledger, today's
behaviour.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ferry.catalog import Catalog
from ferry.catalog.locations import (
    DatabaseReferences,
    ReferencedLocations,
    referenced_locations,
)
from ferry.config import CatalogConfig, ReplicationMode, TableReplication
from ferry.copying.manifest import read_manifest
from ferry.iceberg.pipeline import IcebergIntent, retired_by
from ferry.iceberg.recognise import moved_since_commit
from ferry.planning.replication_plan import ReplicationPlan
from ferry.replicas.ledger import (
    CreatedSnapshot,
    DynamoDbStateStore,
    Lease,
    LedgerEntry,
    SqliteStateStore,
    StateStore,
    replica_key,
)
from ferry.replicas.ownership import IcebergOwnership, Ownership
from ferry.replicas.replica import REPLICATION_MODE, SOURCE_LOCATION
from ferry.storage import fs

#: How long a replication holds its replica table's lock at most; a crashed run's lock is
#: taken over after it. Longer than the slowest replication (Plan to Commit) should take.
DEFAULT_LEASE = timedelta(hours=1)
#: The local store's file under ``--home``.
LOCAL_STATE_FILE = "state.sqlite3"
#: In the run's folder: every location the replica referenced before the commit wrote.
BEFORE_COMMIT = "locations-before-commit.json"
#: In the run's folder: the files an Iceberg run writes at its replica (its intent).
ICEBERG_INTENT = "iceberg-intent.json"


@dataclass(frozen=True)
class ReplicaState:
    """What the states' ``StateContext`` is given to lock replicas and keep the snapshot ledger."""

    store: StateStore
    lease: timedelta = DEFAULT_LEASE
    #: This process, when a holder that died can be recognised (``ferry replicate``, which
    #: runs a whole replication in one process). None in Lambda: there a lock belongs to the
    #: table's execution, which Plan names (``take_lock``'s ``owner``).
    owner: str | None = None


def open_state(
    *,
    home: Path | None = None,
    state_table: str | None = None,
    dynamodb: Any = None,
    lease: timedelta = DEFAULT_LEASE,
    owner: str | None = None,
) -> ReplicaState:
    """The DynamoDB table ``state_table`` (with its client), else the SQLite file in ``home``."""
    if state_table:
        return ReplicaState(DynamoDbStateStore(dynamodb, state_table), lease, owner)
    if home is None:
        raise ValueError("a state store needs a DynamoDB table or a home folder")
    return ReplicaState(SqliteStateStore(Path(home) / LOCAL_STATE_FILE), lease, owner)


def catalog_identity(catalog: CatalogConfig, default_region: str | None) -> str:
    """The replica catalog as keys name it: its metastore URIs, or ``glue:<region>[:<id>]``."""
    if catalog.glue is not None:
        parts = ["glue", catalog.glue.region or default_region or "default"]
        return ":".join(parts + ([catalog.glue.catalog_id] if catalog.glue.catalog_id else []))
    return ",".join(sorted(uri.lower() for uri in catalog.metastore_uris))


def replica_of(
    catalog: CatalogConfig, replication: TableReplication, default_region: str | None
) -> str:
    """The key of one replication's replica table in the ledger and the locks."""
    return replica_key(
        catalog_identity(catalog, default_region), replication.replica_qualified_name
    )


# -- the lock ---------------------------------------------------------------------------------


def take_lock(
    state: ReplicaState | None,
    replica: str,
    event_id: str,
    now: datetime,
    owner: str | None = None,
    gone: Callable[[Lease], bool] | None = None,
) -> None:
    """Hold the replica's lock for ``event_id`` (again, on a retry); else ReplicaLockedError.

    ``owner`` is who runs the replication, when it is not ``state.owner`` (the process):
    a pipeline's table execution, whose ARN it is. A lock whose holder is gone (``gone``;
    by default a process of this machine that no longer runs) is taken over before its
    lease ends.
    """
    if state is not None:
        state.store.acquire(
            replica, event_id, now, state.lease, owner or state.owner, gone or holder_is_gone
        )


def execution_has_ended(stepfunctions: Any, owner: str | None) -> bool:
    """True when ``owner`` is a Step Functions execution that no longer runs (stopped by hand,
    timed out, failed with its Abort failing too): its lock is nobody's any more. False when
    it runs, when ``owner`` is no execution, or when nothing can be told (no permission)."""
    if not owner or not owner.startswith("arn:aws:states:"):
        return False
    try:
        status = stepfunctions.describe_execution(executionArn=owner)["status"]
    except stepfunctions.exceptions.ExecutionDoesNotExist:
        return True  # past Step Functions' retention: long over
    except Exception:  # noqa: BLE001 - a lock is only taken over when that is certain
        return False
    return status != "RUNNING"


def release_lock(state: ReplicaState | None, replica: str, event_id: str) -> None:
    """Release the replica's lock if ``event_id`` holds it; another's lock stays."""
    if state is not None:
        state.store.release(replica, event_id)


def this_process() -> str:
    """``host/pid/start-ticks``: this process, told apart from a later one with its PID."""
    return f"{socket.gethostname()}/{os.getpid()}/{_start_ticks(os.getpid())}"


def holder_is_gone(lease: Lease) -> bool:
    """True when the lease's owner is a process of this machine that no longer runs.

    Only ``ferry replicate`` records an owner; a run killed with SIGKILL then does not block
    the next run for a whole lease. Elsewhere (Lambda, another host, no ``/proc``) nothing
    can be told, and only the expiry frees the lock.
    """
    return process_is_gone(lease.owner)


def process_is_gone(owner: str | None) -> bool:
    """True when ``owner`` (``this_process()`` of some run) is a process of this machine that
    no longer runs; False when it runs or nothing can be told."""
    if not owner or not Path("/proc/self/stat").exists():
        return False
    host, _, rest = owner.partition("/")
    pid, _, ticks = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return str(_start_ticks(int(pid))) != ticks


def _start_ticks(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks), or None when it does not run."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


# -- what a run creates, and what a commit supersedes -------------------------------------


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


# -- an Iceberg run's intent (write-ahead) -----------------------------------------------------


def iceberg_writes_intended(
    state: ReplicaState | None,
    replica_key_: str,
    replication: TableReplication,
    event_id: str,
    intent: IcebergIntent,
    run_root: str,
    now: datetime,
) -> str | None:
    """Before an Iceberg run writes anything at its replica (Plan, before it stages the
    commit; the copiers and Commit write after Plan): record that it writes below the
    table-location, and ledger its *intent* — a document in the run's folder naming its
    metadata files and rewritten position delete files, and its manifest (the copies). The
    intent's URI, or None without a state.

    One entry per run, however many files it copies. A run killed before its Abort (or its
    commit) leaves nothing housekeeping cannot find: past the grace period it deletes each
    of those files that exists and the replica's current metadata does not reference. A
    retried Plan adds its files to the same intent.
    """
    if state is None:
        return None
    root = fs.normalise(intent.root)
    state.store.record_created(
        CreatedSnapshot(
            replica=replica_key_,
            path=root,
            event_id=event_id,
            root=root,
            source_location=fs.normalise(intent.source_location),
            created_at=now,
        )
    )
    where = fs.join(run_root, ICEBERG_INTENT)
    files = set(intent.files)
    if fs.exists(where):
        files.update(json.loads(fs.read_bytes(where))["files"])
    document = {
        "eventId": event_id,
        "root": root,
        "files": sorted(files),
        "manifest": intent.manifest_uri,
    }
    fs.write_bytes(where, json.dumps(document, indent=1).encode())
    state.store.record(
        [
            LedgerEntry(
                replica=replica_key_,
                path=where,
                event_id=event_id,
                replica_table=replication.replica_qualified_name,
                recorded_at=now,
                snapshot=root,
                intent=True,
            )
        ]
    )
    return where


def intended_files(intent_uri: str, copies: bool = True) -> list[str]:
    """The files an intent (``iceberg_writes_intended``) names: its metadata and rewritten
    delete files, and (``copies``) the targets of its manifest. Nothing when the run's folder
    is gone; no copies when its manifest is missing or incomplete (then it copied nothing)."""
    if not fs.exists(intent_uri):
        return []
    document = json.loads(fs.read_bytes(intent_uri))
    files = list(document["files"])
    manifest = document.get("manifest")
    if copies and manifest and fs.exists(manifest):
        try:
            tasks = read_manifest(manifest).tasks
        except ValueError:
            # A manifest Plan never completed (it failed while streaming it): no copier read
            # it, so nothing was copied from it.
            tasks = ()
        files.extend(task.target for task in tasks)
        # Outside S3 a copy killed mid-file leaves it under its partial name
        # (``fs.partial_name``); S3 stores an object only once it is whole.
        files.extend(
            fs.partial_name(task.target)
            for task in tasks
            if fs.scheme_of(task.target) not in fs.S3_SCHEMES
        )
    return files


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
) -> list[str] | None:
    """What the replica references before this commit writes anything (None: not needed).

    Kept under the run's folder the first time: a commit retried after it wrote part of the
    replica must compare with what was there before its first attempt, not with that part.
    A mirror supersedes nothing of Ferry's: it owns no data.
    """
    if state is None or plan.mode is ReplicationMode.METADATA_MIRROR:
        return None
    where = fs.join(run_root, BEFORE_COMMIT)
    if fs.exists(where):
        return json.loads(fs.read_bytes(where))
    table = plan.replica_table
    locations = referenced_locations(replica, table.database, table.name).locations
    fs.write_bytes(where, json.dumps(locations).encode())
    return locations


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
    before: list[str] | None,
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
    if before is not None:
        table = plan.replica_table
        after = referenced_locations(replica, table.database, table.name)
        owner = ownership(state, replica_key_, plan.replication, after, table.parameters)
        superseded = superseded_locations(before, after.locations, owner)
        _ledger(state, replica_key_, plan, superseded, now)
    if plan.iceberg is not None and plan.iceberg.changed:
        dropped = retired_by(plan.iceberg)
        retired = iceberg_files_ledgered(state, replica_key_, plan, dropped, now)
        superseded += [(path, path) for path in retired]
        if run_root is not None:
            _intent_fulfilled(state, replica_key_, plan, run_root, now)
    state.store.release(replica_key_, plan.event_id)
    return [path for path, _ in superseded]
