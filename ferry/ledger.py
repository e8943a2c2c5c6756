"""Where Ferry keeps what outlives one run: the snapshot ledger and the replica locks.

Two ports, one store:

- the **ledger** (``Ledger``) lists every location a commit superseded — the replica table's
  or a partition's previous snapshot below its managed table location — with the event that
  superseded it and when. Housekeeping (``ferry.housekeeping``) deletes them after the grace
  period, never one the replica still references.
- the **locks** (``Locks``) let one replication at a time work on a replica table: a lease
  with an expiry, taken with a conditional write (free, expired, or already ours), so a
  crashed run's lease is taken over once it expires.

Adapters: ``DynamoDbStateStore`` (the pipeline; the local runtime's emulator) and
``SqliteStateStore`` (``ferry replicate`` with no AWS at all: a file under ``--home``).

Keys, in one DynamoDB table (``pk`` string hash key, ``sk`` string range key, on-demand):

=========================  ==================================  ===============================
item                       pk                                  sk
=========================  ==================================  ===============================
ledger entry               the replica (``replica_key``)       ``snapshot#<path>``
created snapshot           the replica                         ``created#<snapshot folder>``
recording since            the replica                         ``created-since``
lock (lease)               the replica                         ``lock``
=========================  ==================================  ===============================

A **created snapshot** is what makes a folder Ferry's (``ferry.ownership``): the run that
writes ``<table-location>/<event-id>/`` records it, with that table-location and the source
table's location, before it copies anything. Deletion trusts this record, never the
config's table-location of the day.

A replica is named by its catalog and table, ``<catalog>/<database>.<table>`` (lower case;
the catalog is its metastore URIs, or ``glue:<region>[:<catalog id>]``), so one table's
ledger is one ``Query`` and its lock one item. Recording a path again overwrites its entry
(the same path, event and table: a retried commit records the same entries).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from ferry import fs
from ferry.errors import ReplicaLockedError, StateStoreError

LEDGER_PREFIX = "snapshot#"
CREATED_PREFIX = "created#"
#: When the replica's first snapshot was recorded: written once, never moved.
SINCE_KEY = "created-since"
LOCK_KEY = "lock"
#: The longest lease a run may take (``--lock-lease``, ``FERRY_LOCK_LEASE``): a run that
#: crashed where its process cannot be seen holds its replica table this long.
LONGEST_LEASE = timedelta(days=365)
#: The state table's key: two strings (the CDK stack's table, ``create_table``'s).
_DYNAMODB_KEY = {"pk": "HASH", "sk": "RANGE"}
#: DynamoDB's BatchWriteItem takes at most 25 items per call.
_BATCH = 25


def replica_key(catalog: str, replica_table: str) -> str:
    """The partition key of a replica: ``<catalog>/<database>.<table>`` (Hive names: lower case)."""
    return f"{catalog}/{replica_table.lower()}"


@dataclass(frozen=True)
class LedgerEntry:
    """A location a commit superseded; housekeeping deletes it once its grace period is over."""

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


class StateStore(Ledger, Locks, Protocol):
    """Ledger and locks: what ``Steps`` is given (``ferry.lifecycle.ReplicaState``)."""

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


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _moment(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# -- DynamoDB -----------------------------------------------------------------------------------


class DynamoDbStateStore:
    """Ledger and locks in one DynamoDB table (see the module's key design)."""

    def __init__(self, client: Any, table_name: str):
        self.client = client
        self.table_name = table_name
        self.description = f"dynamodb:{table_name}"

    def check(self, named: str | None = None) -> None:
        """The table exists and has Ferry's key (``DescribeTable``), else ``StateStoreError``."""
        from botocore.exceptions import BotoCoreError, ClientError

        named = named or f"DynamoDB table {self.table_name}"
        client = self.client
        try:
            table = client.describe_table(TableName=self.table_name)["Table"]
        except client.exceptions.ResourceNotFoundException:
            raise StateStoreError(
                f"{named}: no such DynamoDB table in {client.meta.region_name}; give the state "
                "table of the stack (its StateTableName output)"
            ) from None
        except ClientError as error:
            details = error.response.get("Error", {})
            message = (str(details.get("Message") or "").splitlines() or [""])[0]
            raise StateStoreError(
                f"{named}: DynamoDB refused DescribeTable: {details.get('Code')}"
                + (f": {message}" if message else "")
            ) from None
        except BotoCoreError as error:  # no answer, no credentials, no region
            raise StateStoreError(f"{named}: DynamoDB did not answer: {error}") from None
        keys = {key["AttributeName"]: key["KeyType"] for key in table.get("KeySchema", [])}
        types = {
            attribute["AttributeName"]: attribute["AttributeType"]
            for attribute in table.get("AttributeDefinitions", [])
        }
        if keys != _DYNAMODB_KEY or any(types.get(name) != "S" for name in _DYNAMODB_KEY):
            found = ", ".join(
                f"{name} ({types.get(name, '?')}, {kind.lower()} key)"
                for name, kind in keys.items()
            )
            raise StateStoreError(
                f"{named}: its key is {found}, not Ferry's: pk (S, hash key) and sk (S, range "
                "key); it is not a Ferry state table"
            )

    @staticmethod
    def create_table(client: Any, table_name: str) -> None:
        """Create the table if it does not exist (the local runtime; the CDK stack on AWS)."""
        if table_name in _all_tables(client):
            return
        client.create_table(
            TableName=table_name,
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(TableName=table_name)

    # -- ledger

    def record(self, entries: Sequence[LedgerEntry]) -> None:
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        "pk": {"S": entry.replica},
                        "sk": {"S": LEDGER_PREFIX + entry.path},
                        "path": {"S": entry.path},
                        "eventId": {"S": entry.event_id},
                        "replicaTable": {"S": entry.replica_table},
                        "recordedAt": {"S": _iso(entry.recorded_at)},
                        **({"snapshot": {"S": entry.snapshot}} if entry.snapshot else {}),
                    }
                }
            }
            for entry in entries
        ]
        for start in range(0, len(requests), _BATCH):
            self._write_batch(requests[start : start + _BATCH])

    def _write_batch(self, requests: list[dict[str, Any]]) -> None:
        pending, delay = requests, 0.05
        while pending:
            reply = self.client.batch_write_item(RequestItems={self.table_name: pending})
            pending = reply.get("UnprocessedItems", {}).get(self.table_name, [])
            if pending:  # throttled: back off and send what was not written
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def entries(self, replica: str) -> list[LedgerEntry]:
        found = list(
            LedgerEntry(
                replica=item["pk"]["S"],
                path=item["path"]["S"],
                event_id=item["eventId"]["S"],
                replica_table=item["replicaTable"]["S"],
                recorded_at=_moment(item["recordedAt"]["S"]),
                snapshot=item.get("snapshot", {}).get("S"),
            )
            for item in self._items(replica, LEDGER_PREFIX)
        )
        return sorted(found, key=lambda entry: entry.path)

    def _items(self, replica: str, prefix: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": replica}, ":prefix": {"S": prefix}},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**arguments)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def forget(self, replica: str, path: str) -> None:
        self.client.delete_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": LEDGER_PREFIX + path}},
        )

    def record_created(self, snapshot: CreatedSnapshot) -> None:
        item = {
            "pk": {"S": snapshot.replica},
            "sk": {"S": CREATED_PREFIX + snapshot.path},
            "path": {"S": snapshot.path},
            "eventId": {"S": snapshot.event_id},
            "root": {"S": snapshot.root},
            "createdAt": {"S": _iso(snapshot.created_at)},
        }
        if snapshot.source_location:
            item["sourceLocation"] = {"S": snapshot.source_location}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    "pk": {"S": snapshot.replica},
                    "sk": {"S": SINCE_KEY},
                    "since": {"S": _iso(snapshot.created_at)},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            pass  # recorded since earlier
        self.client.put_item(TableName=self.table_name, Item=item)

    def recording_since(self, replica: str) -> datetime | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": SINCE_KEY}},
            ConsistentRead=True,
        ).get("Item")
        return _moment(item["since"]["S"]) if item else None

    def created(self, replica: str) -> list[CreatedSnapshot]:
        found = [
            CreatedSnapshot(
                replica=item["pk"]["S"],
                path=item["path"]["S"],
                event_id=item["eventId"]["S"],
                root=item["root"]["S"],
                source_location=item.get("sourceLocation", {}).get("S"),
                created_at=_moment(item["createdAt"]["S"]),
            )
            for item in self._items(replica, CREATED_PREFIX)
        ]
        return sorted(found, key=lambda snapshot: snapshot.path)

    def forget_created(self, replica: str, path: str) -> None:
        self.client.delete_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": CREATED_PREFIX + path}},
        )

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
        if self._put_lease(
            taken,
            "attribute_not_exists(pk) OR expiresAt <= :now OR holder = :holder",
            {":now": {"N": _epoch(now)}, ":holder": {"S": holder}},
        ):
            return taken
        current = self.lease(replica)
        if current is None:  # released meanwhile: try once more
            return self.acquire(replica, holder, now, lease, owner, stale)
        if stale(current) and self._put_lease(
            taken,
            "holder = :previous AND expiresAt = :expires",
            {":previous": {"S": current.holder}, ":expires": {"N": _epoch(current.expires_at)}},
        ):
            return taken
        raise locked_error(current)

    def _put_lease(self, lease: Lease, condition: str, values: dict[str, Any]) -> bool:
        item = {
            "pk": {"S": lease.replica},
            "sk": {"S": LOCK_KEY},
            "holder": {"S": lease.holder},
            "acquiredAt": {"S": _iso(lease.acquired_at)},
            "expiresAt": {"N": _epoch(lease.expires_at)},
            "expires": {"S": _iso(lease.expires_at)},
        }
        if lease.owner:
            item["owner"] = {"S": lease.owner}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release(self, replica: str, holder: str) -> bool:
        try:
            self.client.delete_item(
                TableName=self.table_name,
                Key={"pk": {"S": replica}, "sk": {"S": LOCK_KEY}},
                ConditionExpression="holder = :holder",
                ExpressionAttributeValues={":holder": {"S": holder}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False  # free, or another replication's: not ours to release
        return True

    def lease(self, replica: str) -> Lease | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": LOCK_KEY}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        return Lease(
            replica=replica,
            holder=item["holder"]["S"],
            acquired_at=_moment(item["acquiredAt"]["S"]),
            expires_at=datetime.fromtimestamp(float(item["expiresAt"]["N"]), UTC),
            owner=item.get("owner", {}).get("S"),
        )


def _epoch(moment: datetime) -> str:
    return f"{moment.timestamp():.6f}"


def _all_tables(client: Any) -> set[str]:
    names: set[str] = set()
    arguments: dict[str, Any] = {}
    while True:
        page = client.list_tables(**arguments)
        names.update(page.get("TableNames", []))
        if "LastEvaluatedTableName" not in page:
            return names
        arguments["ExclusiveStartTableName"] = page["LastEvaluatedTableName"]


# -- SQLite -------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
    replica TEXT NOT NULL,
    path TEXT NOT NULL,
    event_id TEXT NOT NULL,
    replica_table TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    snapshot TEXT,
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
}
#: Columns (text, at the end of their table) a file of an earlier Ferry lacks: added on
#: first use.
_ADDED_LATER = {"ledger": [("snapshot", False)]}


class SqliteStateStore:
    """Ledger and locks in a SQLite file: ``ferry replicate`` and ``ferry housekeeping`` with
    no AWS at all (default ``<home>/state.sqlite3``).

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
        if not self.path.exists():
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
                "(replica, path, event_id, replica_table, recorded_at, snapshot) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        e.replica,
                        e.path,
                        e.event_id,
                        e.replica_table,
                        _iso(e.recorded_at),
                        e.snapshot,
                    )
                    for e in entries
                ],
            )
            connection.execute("COMMIT")

    def entries(self, replica: str) -> list[LedgerEntry]:
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT replica, path, event_id, replica_table, recorded_at, snapshot FROM ledger "
                "WHERE replica = ? ORDER BY path",
                (replica,),
            ).fetchall()
        return [LedgerEntry(r[0], r[1], r[2], r[3], _moment(r[4]), r[5]) for r in rows]

    def forget(self, replica: str, path: str) -> None:
        with self._connect() as connection:
            connection.execute("DELETE FROM ledger WHERE replica = ? AND path = ?", (replica, path))

    def record_created(self, snapshot: CreatedSnapshot) -> None:
        with self._connect() as connection:
            connection.execute(
                "INSERT OR IGNORE INTO created_since VALUES (?, ?)",
                (snapshot.replica, _iso(snapshot.created_at)),
            )
            connection.execute(
                "INSERT OR REPLACE INTO created VALUES (?, ?, ?, ?, ?, ?)",
                (
                    snapshot.replica,
                    snapshot.path,
                    snapshot.event_id,
                    snapshot.root,
                    snapshot.source_location,
                    _iso(snapshot.created_at),
                ),
            )

    def created(self, replica: str) -> list[CreatedSnapshot]:
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT replica, path, event_id, root, source_location, created_at FROM created "
                "WHERE replica = ? ORDER BY path",
                (replica,),
            ).fetchall()
        return [CreatedSnapshot(r[0], r[1], r[2], r[3], r[4], _moment(r[5])) for r in rows]

    def recording_since(self, replica: str) -> datetime | None:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT since FROM created_since WHERE replica = ?", (replica,)
            ).fetchone()
        return _moment(row[0]) if row else None

    def forget_created(self, replica: str, path: str) -> None:
        with self._connect() as connection:
            connection.execute(
                "DELETE FROM created WHERE replica = ? AND path = ?", (replica, path)
            )

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
                    (replica, holder, _iso(now), taken.expires_at.timestamp(), owner),
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
        earlier = expected[: len(expected) - len(_ADDED_LATER.get(name, []))]
        if tables[name] not in (expected, earlier):
            raise StateStoreError(
                f"{named}: not Ferry's state store: its table {name} has the columns "
                f"{_columns(tables[name])}, Ferry's has {_columns(expected)}"
            )


def _columns(columns: list[tuple[str, bool]]) -> str:
    return "(" + ", ".join(f"{name}{' key' if key else ''}" for name, key in columns) + ")"


def _lease_row(connection: sqlite3.Connection, replica: str) -> Lease | None:
    row = connection.execute(
        "SELECT holder, acquired_at, expires_at, owner FROM locks WHERE replica = ?", (replica,)
    ).fetchone()
    if row is None:
        return None
    return Lease(replica, row[0], _moment(row[1]), datetime.fromtimestamp(row[2], UTC), row[3])


class _Closing:
    """A connection that closes when its ``with`` block ends (sqlite3's only commits)."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        return self.connection

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()
