"""The state store in a SQLite file: ``ferry replicate`` and ``ferry housekeeping`` without AWS.

The file's tables, and how an earlier Ferry's is upgraded, are
``ferry.replicas.ledger.sqlite_file``'s.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ferry.replicas.ledger.records import (
    CreatedSnapshot,
    Lease,
    LedgerEntry,
    Outcome,
    iso,
    locked_error,
    moment_of,
)
from ferry.replicas.ledger.sqlite_file import (
    OUTCOME_COLUMNS,
    Closing,
    check_file,
    create_or_upgrade,
    tables_of,
)


class SqliteStateStore:
    """Ledger, locks and outcomes in a SQLite file: ``ferry replicate`` and ``ferry
    housekeeping`` with no AWS at all (default ``<home>/state.sqlite3``).

    The same rows as the DynamoDB items; SQLite's write lock (``BEGIN IMMEDIATE``) makes the
    lease's check-and-take one step across threads and processes of this machine.

    Nothing is written until the store is first used: the file and its folder are created
    then, and a file of an earlier Ferry is upgraded then (its missing tables and columns
    added). ``check`` says beforehand whether that will work.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.description = f"sqlite:{self.path}"
        self._ready = False
        self._ready_lock = threading.Lock()

    def check(self, named: str | None = None) -> None:
        """The file is Ferry's store (or can be created) and can be read and written.

        Reads only: a missing file is not created, and the write that proves the file
        writable is rolled back.
        """
        check_file(self.path, named or f"state store {self.path}")

    def _connect(self) -> Closing:
        # One connection per call: threads never share one; autocommit unless BEGIN.
        self._create_once()
        return Closing(sqlite3.connect(self.path, timeout=30, isolation_level=None))

    def _create_once(self) -> None:
        """Create the file and its tables, or upgrade an earlier Ferry's, on first use."""
        with self._ready_lock:
            if self._ready:
                return
            create_or_upgrade(self.path)
            self._ready = True

    # -- ledger

    def record(self, entries: Sequence[LedgerEntry]) -> None:
        with self._connect() as connection:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(
                "INSERT OR REPLACE INTO ledger "
                "(replica, path, event_id, replica_table, recorded_at, snapshot, intent) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        e.replica,
                        e.path,
                        e.event_id,
                        e.replica_table,
                        iso(e.recorded_at),
                        e.snapshot,
                        "1" if e.intent else None,
                    )
                    for e in entries
                ],
            )
            connection.execute("COMMIT")

    def entries(self, replica: str) -> list[LedgerEntry]:
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT replica, path, event_id, replica_table, recorded_at, snapshot, intent "
                "FROM ledger WHERE replica = ? ORDER BY path",
                (replica,),
            ).fetchall()
        return [
            LedgerEntry(r[0], r[1], r[2], r[3], moment_of(r[4]), r[5], bool(r[6])) for r in rows
        ]

    def forget(self, replica: str, path: str) -> None:
        with self._connect() as connection:
            connection.execute("DELETE FROM ledger WHERE replica = ? AND path = ?", (replica, path))

    def record_created(self, snapshot: CreatedSnapshot) -> None:
        with self._connect() as connection:
            connection.execute(
                "INSERT OR IGNORE INTO created_since VALUES (?, ?)",
                (snapshot.replica, iso(snapshot.created_at)),
            )
            connection.execute(
                "INSERT OR REPLACE INTO created VALUES (?, ?, ?, ?, ?, ?)",
                (
                    snapshot.replica,
                    snapshot.path,
                    snapshot.event_id,
                    snapshot.root,
                    snapshot.source_location,
                    iso(snapshot.created_at),
                ),
            )

    def created(self, replica: str) -> list[CreatedSnapshot]:
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT replica, path, event_id, root, source_location, created_at FROM created "
                "WHERE replica = ? ORDER BY path",
                (replica,),
            ).fetchall()
        return [CreatedSnapshot(r[0], r[1], r[2], r[3], r[4], moment_of(r[5])) for r in rows]

    def recording_since(self, replica: str) -> datetime | None:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT since FROM created_since WHERE replica = ?", (replica,)
            ).fetchone()
        return moment_of(row[0]) if row else None

    def forget_created(self, replica: str, path: str) -> None:
        with self._connect() as connection:
            connection.execute(
                "DELETE FROM created WHERE replica = ? AND path = ?", (replica, path)
            )

    # -- outcomes

    def record_success(
        self,
        replica: str,
        replica_table: str,
        event_id: str,
        at: datetime,
        source_version: str | None,
        source_read_at: datetime | None,
    ) -> None:
        with self._connect() as connection:
            connection.execute(
                f"INSERT OR REPLACE INTO outcomes ({OUTCOME_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)",
                (
                    replica,
                    replica_table,
                    iso(at),
                    event_id,
                    source_version,
                    iso(source_read_at) if source_read_at else None,
                ),
            )

    def record_failure(
        self, replica: str, replica_table: str, event_id: str, at: datetime, error: str
    ) -> None:
        with self._connect() as connection:
            # One statement: the first failure after a success sets failing_since, later
            # ones keep it; the last success stays as it was.
            connection.execute(
                "INSERT INTO outcomes (replica, replica_table, failing_since, failure_at, "
                "failure_event, error) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (replica) DO UPDATE SET replica_table = excluded.replica_table, "
                "failing_since = COALESCE(outcomes.failing_since, excluded.failing_since), "
                "failure_at = excluded.failure_at, failure_event = excluded.failure_event, "
                "error = excluded.error",
                (replica, replica_table, iso(at), iso(at), event_id, error),
            )

    def outcomes(self, replicas: Sequence[str]) -> dict[str, Outcome]:
        wanted = list(dict.fromkeys(replicas))
        if not wanted:
            return {}
        if not self.path.is_file():
            return {}  # a read creates nothing: no store yet, no outcome yet
        # Read-only: ``ferry status`` neither creates nor upgrades the file.
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        with Closing(sqlite3.connect(uri, uri=True, timeout=30)) as connection:
            if "outcomes" not in tables_of(connection):
                return {}  # a file of an earlier Ferry: no outcome recorded yet
            # One query: the keys go in as one JSON array, whatever their number.
            rows = connection.execute(
                f"SELECT {OUTCOME_COLUMNS} FROM outcomes "
                "WHERE replica IN (SELECT value FROM json_each(?))",
                (json.dumps(wanted),),
            ).fetchall()
        return {row[0]: _outcome_row(row) for row in rows}

    # -- locks

    def acquire(
        self,
        replica: str,
        holder: str,
        now: datetime,
        lease: timedelta,
        owner: str | None = None,
        stale: Callable[[Lease], bool] = lambda lease: False,
    ) -> Lease:
        taken = Lease(replica, holder, now, now + lease, owner)
        with self._connect() as connection:
            connection.execute("BEGIN IMMEDIATE")
            current = _lease_row(connection, replica)
            if (
                current is None
                or current.expired(now)
                or current.holder == holder
                or stale(current)
            ):
                connection.execute(
                    "INSERT OR REPLACE INTO locks VALUES (?, ?, ?, ?, ?)",
                    (replica, holder, iso(now), taken.expires_at.timestamp(), owner),
                )
                connection.execute("COMMIT")
                return taken
            connection.execute("ROLLBACK")
        raise locked_error(current)

    def release(self, replica: str, holder: str) -> bool:
        with self._connect() as connection:
            cursor = connection.execute(
                "DELETE FROM locks WHERE replica = ? AND holder = ?", (replica, holder)
            )
            return cursor.rowcount > 0

    def lease(self, replica: str) -> Lease | None:
        with self._connect() as connection:
            return _lease_row(connection, replica)


def _outcome_row(row: tuple) -> Outcome:
    def moment(text: str | None) -> datetime | None:
        return moment_of(text) if text else None

    return Outcome(
        replica=row[0],
        replica_table=row[1],
        last_success_at=moment(row[2]),
        last_success_event=row[3],
        source_version=row[4],
        source_read_at=moment(row[5]),
        failing_since=moment(row[6]),
        last_failure_at=moment(row[7]),
        last_failure_event=row[8],
        last_error=row[9],
    )


def _lease_row(connection: sqlite3.Connection, replica: str) -> Lease | None:
    row = connection.execute(
        "SELECT holder, acquired_at, expires_at, owner FROM locks WHERE replica = ?", (replica,)
    ).fetchone()
    if row is None:
        return None
    return Lease(replica, row[0], moment_of(row[1]), datetime.fromtimestamp(row[2], UTC), row[3])
