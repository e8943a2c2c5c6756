"""The state store in a SQLite file: ``ferry replicate`` and ``ferry housekeeping`` without AWS."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ferry.core.errors import StateStoreError
from ferry.replicas.ledger.records import (
    CreatedSnapshot,
    Lease,
    LedgerEntry,
    Outcome,
    iso,
    locked_error,
    moment_of,
)
from ferry.storage import fs

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
    replica TEXT NOT NULL,
    path TEXT NOT NULL,
    event_id TEXT NOT NULL,
    replica_table TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    snapshot TEXT,
    intent TEXT,
    PRIMARY KEY (replica, path)
);
CREATE TABLE IF NOT EXISTS created (
    replica TEXT NOT NULL,
    path TEXT NOT NULL,
    event_id TEXT NOT NULL,
    root TEXT NOT NULL,
    source_location TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (replica, path)
);
CREATE TABLE IF NOT EXISTS created_since (
    replica TEXT PRIMARY KEY,
    since TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS locks (
    replica TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at REAL NOT NULL,
    owner TEXT
);
CREATE TABLE IF NOT EXISTS outcomes (
    replica TEXT PRIMARY KEY,
    replica_table TEXT NOT NULL,
    success_at TEXT,
    success_event TEXT,
    source_version TEXT,
    source_read_at TEXT,
    failing_since TEXT,
    failure_at TEXT,
    failure_event TEXT,
    error TEXT
);
"""


#: Each table of the SQLite store: its columns in order, and whether each is in the key.
#: Rows are written by position (``INSERT … VALUES``), so a table must be exactly this.
_TABLES: dict[str, list[tuple[str, bool]]] = {
    "ledger": [
        ("replica", True),
        ("path", True),
        ("event_id", False),
        ("replica_table", False),
        ("recorded_at", False),
        ("snapshot", False),
        ("intent", False),
    ],
    "created": [
        ("replica", True),
        ("path", True),
        ("event_id", False),
        ("root", False),
        ("source_location", False),
        ("created_at", False),
    ],
    "created_since": [("replica", True), ("since", False)],
    "locks": [
        ("replica", True),
        ("holder", False),
        ("acquired_at", False),
        ("expires_at", False),
        ("owner", False),
    ],
    "outcomes": [
        ("replica", True),
        ("replica_table", False),
        ("success_at", False),
        ("success_event", False),
        ("source_version", False),
        ("source_read_at", False),
        ("failing_since", False),
        ("failure_at", False),
        ("failure_event", False),
        ("error", False),
    ],
}
_OUTCOME_COLUMNS = ", ".join(name for name, _ in _TABLES["outcomes"])
#: Columns (text, at the end of their table) a file of an earlier Ferry lacks: added on
#: first use.
_ADDED_LATER = {"ledger": [("snapshot", False), ("intent", False)]}


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
        named = named or f"state store {self.path}"
        try:
            exists = self.path.exists()
        except OSError as error:  # a home that cannot be searched
            raise StateStoreError(f"{named}: cannot be read: {error.strerror}") from None
        if not exists:
            problem = fs.why_not_creatable(self.path.parent)
            if problem:
                raise StateStoreError(f"{named}: cannot be created: {problem}")
            return
        if not self.path.is_file():
            raise StateStoreError(f"{named}: is not a file")
        try:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as error:
            raise StateStoreError(f"{named}: cannot be opened: {error}") from None
        try:
            try:
                tables = _tables_of(connection)
                problem = connection.execute("PRAGMA quick_check(1)").fetchone()[0]
            except sqlite3.Error as error:
                raise StateStoreError(
                    f"{named}: cannot be read as a SQLite database: {error}"
                ) from None
            if problem != "ok":
                problem = " ".join(problem.split())  # SQLite's report spans lines
                raise StateStoreError(f"{named}: the SQLite file is damaged: {problem}")
            _check_schema(tables, named)
            try:
                # Proves the file (and its folder, for the journal) writable; rolled back.
                connection.execute("BEGIN IMMEDIATE")
                connection.execute("CREATE TABLE ferry_write_probe (x)")
            except sqlite3.Error as error:
                raise StateStoreError(f"{named}: cannot be written: {error}") from None
            finally:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
        finally:
            connection.close()

    def _connect(self) -> _Closing:
        # One connection per call: threads never share one; autocommit unless BEGIN.
        self._create_once()
        return _Closing(sqlite3.connect(self.path, timeout=30, isolation_level=None))

    def _create_once(self) -> None:
        """Create the file and its tables, or upgrade an earlier Ferry's, on first use."""
        with self._ready_lock:
            if self._ready:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            with _Closing(connection):
                connection.executescript(_SCHEMA)
                tables = _tables_of(connection)
                for table, added in _ADDED_LATER.items():
                    present = {name for name, _ in tables[table]}
                    for column, _ in added:
                        if column not in present:  # a file from before the column
                            connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
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
                f"INSERT OR REPLACE INTO outcomes ({_OUTCOME_COLUMNS}) "
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
        with _Closing(sqlite3.connect(uri, uri=True, timeout=30)) as connection:
            if "outcomes" not in _tables_of(connection):
                return {}  # a file of an earlier Ferry: no outcome recorded yet
            # One query: the keys go in as one JSON array, whatever their number.
            rows = connection.execute(
                f"SELECT {_OUTCOME_COLUMNS} FROM outcomes "
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


def _tables_of(connection: sqlite3.Connection) -> dict[str, list[tuple[str, bool]]]:
    """Every table of the file with its columns, in order, and whether each is in the key."""
    names = [
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    return {
        name: [
            (row[1], row[5] > 0)
            for row in connection.execute("SELECT * FROM pragma_table_info(?)", (name,))
        ]
        for name in names
    }


def _check_schema(tables: dict[str, list[tuple[str, bool]]], named: str) -> None:
    """``StateStoreError`` unless each of Ferry's tables the file has is Ferry's own.

    A file of an earlier Ferry may lack tables and columns added since (the upgrade adds
    them); a file that has none of Ferry's tables but others is some other program's.
    """
    ours = [name for name in _TABLES if name in tables]
    if tables and not ours:
        raise StateStoreError(
            f"{named}: not Ferry's state store: it holds the tables {', '.join(sorted(tables))} "
            f"and none of Ferry's ({', '.join(_TABLES)})"
        )
    for name in ours:
        expected = _TABLES[name]
        # An earlier Ferry's table lacks the columns added since: any number of the last ones.
        first = len(expected) - len(_ADDED_LATER.get(name, []))
        if tables[name] not in [expected[:end] for end in range(first, len(expected) + 1)]:
            raise StateStoreError(
                f"{named}: not Ferry's state store: its table {name} has the columns "
                f"{_columns(tables[name])}, Ferry's has {_columns(expected)}"
            )


def _columns(columns: list[tuple[str, bool]]) -> str:
    return "(" + ", ".join(f"{name}{' key' if key else ''}" for name, key in columns) + ")"


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


class _Closing:
    """A connection that closes when its ``with`` block ends (sqlite3's only commits)."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        return self.connection

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()
