"""The ledger's and the locks' records, and the ports their stores implement.

``ferry.replicas.ledger`` describes what is kept and why; ``ferry.replicas.ledger.dynamodb`` and
``ferry.replicas.ledger.sqlite`` keep it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from ferry.core.errors import ReplicaLockedError

LEDGER_PREFIX = "snapshot#"
CREATED_PREFIX = "created#"
#: When the replica's first snapshot was recorded: written once, never moved.
SINCE_KEY = "created-since"
LOCK_KEY = "lock"
#: The replica's last outcome: its last success, and while it fails, since when and why.
OUTCOME_KEY = "outcome"
#: The longest lease a run may take (``--lock-lease``, ``FERRY_LOCK_LEASE``): a run that
#: crashed where its process cannot be seen holds its replica table this long.
LONGEST_LEASE = timedelta(days=365)


def replica_key(catalog: str, replica_table: str) -> str:
    """The partition key of a replica: ``<catalog>/<database>.<table>`` (Hive names: lower case)."""
    return f"{catalog}/{replica_table.lower()}"


@dataclass(frozen=True)
class LedgerEntry:
    """A location a commit superseded; housekeeping deletes it once its grace period is over.

    Or (``intent``) the files an Iceberg run was about to write: housekeeping deletes those
    the replica's current metadata does not reference once the grace period is over.
    """

    replica: str
    path: str
    #: The event whose commit superseded the location.
    event_id: str
    #: ``database.table`` of the replica, for people.
    replica_table: str
    recorded_at: datetime
    #: The snapshot folder Ferry created that holds the location (``<root>/<event-id>``);
    #: None in entries recorded before Ferry kept it.
    snapshot: str | None = None
    #: True when ``path`` is a run's *intent*, not a location to delete: a document in the
    #: run's folder naming the files the run was about to write at an Iceberg replica,
    #: ledgered before it wrote any (``ferry.lifecycle.iceberg_intent.iceberg_writes_intended``).
    intent: bool = False


@dataclass(frozen=True)
class CreatedSnapshot:
    """A snapshot folder a run created: the only kind of folder Ferry ever deletes."""

    replica: str
    #: ``<root>/<event-id>``, normalised.
    path: str
    event_id: str
    #: The replica's ``table-location`` when the run wrote it.
    root: str
    #: The source table's location then: nothing inside it is ever deleted.
    source_location: str | None
    created_at: datetime


@dataclass(frozen=True)
class Lease:
    """Who replicates a replica table now, and until when at the latest."""

    replica: str
    #: The event id of the replication holding the lock.
    holder: str
    acquired_at: datetime
    expires_at: datetime
    #: The process holding it when that can be told (``ferry replicate``: host/pid/start).
    owner: str | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires_at <= now


@dataclass(frozen=True)
class Outcome:
    """How a replica's replications have ended: the last success, and the failures since.

    ``failing_since`` is the first failure after the last success (None while the last run
    succeeded); the last failure's time, event and one-line error stay until a success.
    """

    replica: str
    #: ``database.table`` of the replica, for people.
    replica_table: str
    last_success_at: datetime | None = None
    last_success_event: str | None = None
    #: The source version the last success replicated (``ferry.planning.source_versions``), and
    #: when the source was read for it: the replica holds every change made before then.
    source_version: str | None = None
    source_read_at: datetime | None = None
    failing_since: datetime | None = None
    last_failure_at: datetime | None = None
    last_failure_event: str | None = None
    last_error: str | None = None

    @property
    def failing(self) -> bool:
        return self.failing_since is not None


class Outcomes(Protocol):
    def record_success(
        self,
        replica: str,
        replica_table: str,
        event_id: str,
        at: datetime,
        source_version: str | None,
        source_read_at: datetime | None,
    ) -> None:
        """The replica is as the source was at ``source_read_at``: failures are cleared."""

    def record_failure(
        self, replica: str, replica_table: str, event_id: str, at: datetime, error: str
    ) -> None:
        """A run failed; ``failing_since`` is set unless an earlier failure set it already."""

    def outcomes(self, replicas: Sequence[str]) -> dict[str, Outcome]:
        """The outcome of each replica that has one, in few requests (a batch read)."""


class Ledger(Protocol):
    def record(self, entries: Sequence[LedgerEntry]) -> None:
        """Add or overwrite entries (keyed by replica and path)."""

    def entries(self, replica: str) -> list[LedgerEntry]:
        """Every entry of one replica, in path order."""

    def forget(self, replica: str, path: str) -> None:
        """Remove one entry (its location was deleted); nothing if there is none."""

    def record_created(self, snapshot: CreatedSnapshot) -> None:
        """Record a snapshot folder a run is about to write (again on a retry: overwritten)."""

    def created(self, replica: str) -> list[CreatedSnapshot]:
        """Every snapshot folder recorded for one replica, in path order."""

    def recording_since(self, replica: str) -> datetime | None:
        """When the replica's first snapshot was recorded (kept when records are forgotten):
        every snapshot Ferry wrote for it since then is recorded."""

    def forget_created(self, replica: str, path: str) -> None:
        """Remove a created snapshot's record (the folder was deleted)."""


class Locks(Protocol):
    def acquire(
        self,
        replica: str,
        holder: str,
        now: datetime,
        lease: timedelta,
        owner: str | None = None,
        stale: Callable[[Lease], bool] = lambda lease: False,
    ) -> Lease:
        """Take the replica's lock for ``holder`` if it is free, expired, already the
        holder's, or ``stale`` (its owner is known to be gone); else ``ReplicaLockedError``."""

    def release(self, replica: str, holder: str) -> bool:
        """Release the lock if ``holder`` holds it (never another's); True when released."""

    def lease(self, replica: str) -> Lease | None:
        """The replica's current lease (possibly expired), or None."""


class StateStore(Ledger, Locks, Outcomes, Protocol):
    """Ledger, locks and outcomes: what the states' ``StateContext`` is given
    (``ferry.lifecycle.replica_state.ReplicaState``)."""

    #: Where the state lives, for people (``dynamodb:<table>``, ``sqlite:<path>``).
    description: str

    def check(self, named: str | None = None) -> None:
        """``StateStoreError`` unless a run can use the store; reads only, creates nothing.

        Made before a run starts: a store found unusable after a commit would leave the
        replica switched and its ledger unwritten. ``named``: how the error names the store.
        """


def locked_error(lease: Lease) -> ReplicaLockedError:
    catalog, _, table = lease.replica.rpartition("/")
    return ReplicaLockedError(
        f"replica table {table} ({catalog}) is being replicated by event {lease.holder} "
        f"(its lock expires at {lease.expires_at.isoformat(timespec='seconds')}); "
        f"not replicating it at the same time"
    )


def one_line(error: str, limit: int = 500) -> str:
    """An error as the outcome keeps it: one line, at most ``limit`` characters."""
    line = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def iso(moment: datetime) -> str:
    """A moment as the stores write it: ISO 8601 in UTC."""
    return moment.astimezone(UTC).isoformat()


def moment_of(text: str) -> datetime:
    """A moment the stores wrote (one without a zone is UTC)."""
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
