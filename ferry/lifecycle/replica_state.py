"""The snapshot lifecycle around one replication: its replica's state store, and its lock.

The states' ``StateContext`` (``ferry.states.context``) is given a ``ReplicaState`` (the
store of ``ferry.replicas.ledger`` plus the lease length); the states call the functions here,
and those of the modules beside it, at four points:

- **Plan**, first thing: ``take_lock`` — one replication per replica table at a time; a
  second one fails fast with ``ReplicaLockedError``; once planned, ``snapshot_created``
  (``ferry.lifecycle.snapshot_records``) records the snapshot folder the run is about to
  write (what makes it Ferry's to delete later, ``ferry.replicas.ownership``); an Iceberg run,
  before it writes anything at its replica, ledgers its intent
  (``ferry.lifecycle.iceberg_intent``: the files it will write there);
- **Commit**: ``locations_before_commit`` reads every location the replica references
  before anything is written (kept in the run's folder, so a retried commit uses the first
  attempt's), and ``committed`` records in the ledger each one no longer referenced
  afterwards that lies in a snapshot folder Ferry created — then releases the lock
  (``ferry.lifecycle.snapshot_records``);
- **Notify success** (the nothing-to-do path) and **Abort**: ``release_lock``, which never
  releases another replication's lock.

Without a state (``None``) every function does nothing: no lock, no ledger, today's
behaviour.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ferry.config import CatalogConfig, TableReplication
from ferry.replicas.ledger import (
    DynamoDbStateStore,
    Lease,
    SqliteStateStore,
    StateStore,
    replica_key,
)

#: How long a replication holds its replica table's lock at most; a crashed run's lock is
#: taken over after it. Longer than the slowest replication (Plan to Commit) should take.
DEFAULT_LEASE = timedelta(hours=1)
#: The local store's file under ``--home``.
LOCAL_STATE_FILE = "state.sqlite3"


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
