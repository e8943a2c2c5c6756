"""The SQLite state store's file: its tables, checked, created and upgraded.

``ferry.replicas.ledger.sqlite`` reads and writes the rows; this module knows the tables
they live in, what an earlier Ferry's file lacks, and how to tell a file that is some
other program's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ferry.core.errors import StateStoreError
from ferry.storage import fs

SCHEMA = """
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
TABLES: dict[str, list[tuple[str, bool]]] = {
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
OUTCOME_COLUMNS = ", ".join(name for name, _ in TABLES["outcomes"])
#: Columns (text, at the end of their table) a file of an earlier Ferry lacks: added on
#: first use.
_ADDED_LATER = {"ledger": [("snapshot", False), ("intent", False)]}


def check_file(path: Path, named: str) -> None:
    """``StateStoreError`` unless the file at ``path`` is Ferry's store (or can be created)
    and can be read and written; ``named`` begins each error's line.

    Reads only: a missing file is not created, and the write that proves the file
    writable is rolled back.
    """
    try:
        exists = path.exists()
    except OSError as error:  # a home that cannot be searched
        raise StateStoreError(f"{named}: cannot be read: {error.strerror}") from None
    if not exists:
        problem = fs.why_not_creatable(path.parent)
        if problem:
            raise StateStoreError(f"{named}: cannot be created: {problem}")
        return
    if not path.is_file():
        raise StateStoreError(f"{named}: is not a file")
    try:
        connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    except sqlite3.Error as error:
        raise StateStoreError(f"{named}: cannot be opened: {error}") from None
    try:
        try:
            tables = tables_of(connection)
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


def create_or_upgrade(path: Path) -> None:
    """Create the file and its tables, or add what an earlier Ferry's file lacks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    with Closing(connection):
        connection.executescript(SCHEMA)
        tables = tables_of(connection)
        for table, added in _ADDED_LATER.items():
            present = {name for name, _ in tables[table]}
            for column, _ in added:
                if column not in present:  # a file from before the column
                    connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")


def tables_of(connection: sqlite3.Connection) -> dict[str, list[tuple[str, bool]]]:
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
    ours = [name for name in TABLES if name in tables]
    if tables and not ours:
        raise StateStoreError(
            f"{named}: not Ferry's state store: it holds the tables {', '.join(sorted(tables))} "
            f"and none of Ferry's ({', '.join(TABLES)})"
        )
    for name in ours:
        expected = TABLES[name]
        # An earlier Ferry's table lacks the columns added since: any number of the last ones.
        first = len(expected) - len(_ADDED_LATER.get(name, []))
        if tables[name] not in [expected[:end] for end in range(first, len(expected) + 1)]:
            raise StateStoreError(
                f"{named}: not Ferry's state store: its table {name} has the columns "
                f"{_columns(tables[name])}, Ferry's has {_columns(expected)}"
            )


def _columns(columns: list[tuple[str, bool]]) -> str:
    return "(" + ", ".join(f"{name}{' key' if key else ''}" for name, key in columns) + ")"


class Closing:
    """A connection that closes when its ``with`` block ends (sqlite3's only commits)."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        return self.connection

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()
